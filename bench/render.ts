// bench/render: render time of one load balancer with 50 listeners, 50 pools
// and 5,000 members (bench/render-spec.ts), by this agent's renderer and by
// Octavia 11's JinjaTemplater.build_config on the same load balancer, in the
// same run. Model building on the Python side and spec validation on ours are
// timed apart from rendering. Prints medians and the ratio.
// Run: npm run bench:render
import { performance } from 'node:perf_hooks';
import { benchSpec } from './render-spec.js';
import { renderLoadBalancer } from '../agent/render/render.js';
import { DEFAULT_RENDER_SETTINGS } from '../agent/render/settings.js';
import { validateSpec } from '../agent/model/spec/validate.js';
import { OctaviaRenderer, octaviaSettings } from '../test/helpers/octavia-render.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const WARMUP = 3;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (ms: number) => `${ms.toFixed(1)} ms`;

const spec = benchSpec();
const members = spec.listeners.reduce((n, l) => n + (l.default_pool?.members.length ?? 0), 0);
const settings = { ...DEFAULT_RENDER_SETTINGS, connectionLogging: true };

const renderMs: number[] = [];
const validateMs: number[] = [];
let bytes = 0;
const raw = JSON.parse(JSON.stringify(spec)) as unknown;
for (let i = 0; i < WARMUP + ROUNDS; i++) {
  const v0 = performance.now();
  validateSpec(raw);
  const t0 = performance.now();
  const out = renderLoadBalancer(spec, settings, { initStateAtStartup: true });
  const t1 = performance.now();
  bytes = out.haproxyConfig!.length;
  if (i >= WARMUP) {
    validateMs.push(t0 - v0);
    renderMs.push(t1 - t0);
  }
}

const octavia = await OctaviaRenderer.start();
let theirs: { ms: number[]; bytes: number };
try {
  theirs = await octavia.bench(spec, '2.6', octaviaSettings(settings), ROUNDS, { warmup: WARMUP });
} finally {
  await octavia.close();
}

const ours = median(renderMs);
const octaviaMs = median(theirs.ms);
console.log(`load balancer: ${spec.listeners.length} listeners, ${spec.listeners.length} pools, ${members} members; median of ${ROUNDS}`);
console.log(`  this agent   render ${fmt(ours)} (${bytes} bytes); spec validation ${fmt(median(validateMs))}`);
console.log(`  Octavia 11   JinjaTemplater.build_config ${fmt(octaviaMs)} (${theirs.bytes} bytes)`);
console.log(`  ratio        ${(octaviaMs / ours).toFixed(1)}x faster render; ${(octaviaMs / (ours + median(validateMs))).toFixed(1)}x with validation`);
