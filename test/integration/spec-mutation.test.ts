// Generated abuse of the spec: valid fixtures mutated 1,000 times (wrong
// types, hostile strings, out-of-range numbers, deleted and unknown fields,
// duplicated list items, other valid enumeration values). Each mutant must
// either be refused with a SpecError naming a field, or render to configs the
// real haproxy (both versions) and keepalived accept. Nothing else may happen:
// no untyped exception, no config haproxy rejects.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, KEEPALIVEDS, TEST_ROOT } from '../helpers/haproxies.js';
import { fixtureWorkspace } from '../helpers/fixture-certs.js';
import { SpecError, validateSpec } from '../../agent/model/spec/validate.js';
import { renderLoadBalancer } from '../../agent/render/render.js';
import { DEFAULT_RENDER_SETTINGS, type RenderTarget } from '../../agent/render/settings.js';
import { checkSpec, UsageError } from '../../agent/cli/render.js';
import { haproxyCapabilities } from '../../agent/haproxy/process/capabilities.js';
import type { LoadBalancerSpec } from '../../agent/model/spec/types.js';

const MUTANTS = 1000;
const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'specs');

/** Deterministic, so a failure names a mutant that can be replayed. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HOSTILE_STRINGS = [
  '',
  ' ',
  'a b',
  'line\nbreak',
  'cr\rhere',
  'tab\there',
  'quote"d',
  "single'q",
  'hash#tag',
  'back\\slash',
  '&amp;<>',
  '\u0001',
  '\u007f',
  '\u0085',
  'None',
  '%[src]',
  '{{ lb_id }}',
  'ü-nicode',
  'x'.repeat(300),
  '../../etc/passwd',
  '/ok/path',
  '10.0.0.1',
  '2001:db8::1',
  'ROUND_ROBIN',
  'TCP',
  'HTTP',
  '200-204',
  '1.1',
  'true',
  'server.pem',
  'missing.pem',
  'h2',
];
const HOSTILE_VALUES: unknown[] = [null, true, false, 0, -1, 1, 1.5, 255, 256, 257, 65535, 65536, 2 ** 31, -(2 ** 31), 1e308, [], {}, [1], { x: 1 }];

type Json = unknown;
type Slot = { parent: Record<string, Json> | Json[]; key: string | number };

function slots(doc: Json, out: Slot[] = []): Slot[] {
  if (Array.isArray(doc))
    doc.forEach((v, i) => {
      out.push({ parent: doc, key: i });
      slots(v, out);
    });
  else if (doc && typeof doc === 'object') {
    for (const [k, v] of Object.entries(doc)) {
      out.push({ parent: doc as Record<string, Json>, key: k });
      slots(v, out);
    }
  }
  return out;
}

/** Other valid values for enumerated and numeric fields, so that many mutants stay valid and get rendered. */
const PLAUSIBLE: Record<string, Json[]> = {
  protocol: ['HTTP', 'HTTPS', 'TCP', 'TERMINATED_HTTPS', 'PROMETHEUS', 'UDP', 'SCTP', 'PROXY', 'PROXYV2'],
  lb_algorithm: ['ROUND_ROBIN', 'LEAST_CONNECTIONS', 'SOURCE_IP'],
  type: [
    'HTTP',
    'HTTPS',
    'PING',
    'TCP',
    'TLS-HELLO',
    'UDP-CONNECT',
    'SCTP',
    'SOURCE_IP',
    'HTTP_COOKIE',
    'APP_COOKIE',
    'HOST_NAME',
    'PATH',
    'FILE_TYPE',
    'HEADER',
    'COOKIE',
  ],
  compare_type: ['REGEX', 'STARTS_WITH', 'ENDS_WITH', 'CONTAINS', 'EQUAL_TO'],
  action: ['REJECT', 'REDIRECT_TO_URL', 'REDIRECT_TO_POOL', 'REDIRECT_PREFIX'],
  weight: [0, 1, 100, 256],
  admin_state_up: [true, false],
  backup: [true, false],
  invert: [true, false],
  tls_enabled: [true, false],
  http_version: [1.0, 1.1],
  http_method: ['GET', 'HEAD', 'POST', 'OPTIONS'],
  expected_codes: ['200', '200-299', '200, 301, 302', '404'],
  url_path: ['/', '/health?full=1', '/a/b%20c'],
  value: ['/api', 'a b', 'x#y', 'q"uote', "o'k", 'back\\slash', '^/v[0-9]+/', 'example.com', '&<>', '[\\d-z]', '(unclosed'],
  redirect_url: ['https://example.com/a?b=1&c=2', 'http://x.test/#frag', 'https://q.test/"quoted"'],
  redirect_prefix: ['https://example.com', 'http://x.test/base'],
  redirect_http_code: [301, 302, 303, 307, 308],
  client_authentication: ['NONE', 'OPTIONAL', 'MANDATORY'],
  tls_versions: [['TLSv1.2'], ['TLSv1.2', 'TLSv1.3'], ['SSLv3', 'TLSv1']],
  alpn_protocols: [['h2'], ['http/1.1', 'http/1.0']],
  tls_ciphers: ['ECDHE-ECDSA-AES128-GCM-SHA256', 'HIGH:!aNULL', 'DEFAULT', 'FOO-BAR', 'TLS_AES_128_GCM_SHA256', 'FOO:HIGH'],
  connection_limit: [-1, 1, 100, 2000],
  timeout_client_data: [0, 1, 1000, 50000],
  timeout_tcp_inspect: [0, 10, 1000],
  delay: [1, 5, 30],
  timeout: [1, 3, 30],
  max_retries: [1, 3, 10],
  max_retries_down: [1, 3, 10],
  monitor_port: [1, 8081, 65535],
  monitor_address: ['192.0.2.99', '2001:db8:1::99'],
  address: ['192.0.2.77', '2001:db8:1::77', '127.0.0.1'],
  topology: ['SINGLE', 'ACTIVE_STANDBY'],
  hsts_max_age: [0, 31536000],
  cookie_name: ['JSESSIONID', 'a', 'x_y-z'],
  persistence_timeout: [1, 360],
};

function mutate(seed: Json, rnd: () => number): { doc: Json; what: string } {
  const doc = structuredClone(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const kind = rnd();
  const all = slots(doc);
  // Half the mutants change a field to another plausible value: those mostly
  // stay valid and exercise the renderer; the rest are hostile.
  const plausible = all.filter((s) => typeof s.key === 'string' && PLAUSIBLE[s.key]);
  const { parent, key } = kind < 0.5 && plausible.length > 0 ? pick(plausible) : pick(all);
  const at = `${String(key)}`;
  const set = (v: Json) => {
    (parent as Record<string, Json>)[key as string] = v;
  };
  if (kind < 0.5 && typeof key === 'string' && PLAUSIBLE[key]) {
    const v = pick(PLAUSIBLE[key]!);
    set(v);
    return { doc, what: `${at} = ${JSON.stringify(v)}` };
  }
  if (kind < 0.65) {
    const v = pick(HOSTILE_STRINGS);
    set(v);
    return { doc, what: `${at} = ${JSON.stringify(v)}` };
  }
  if (kind < 0.77) {
    const v = pick(HOSTILE_VALUES);
    set(v);
    return { doc, what: `${at} = ${JSON.stringify(v)}` };
  }
  if (kind < 0.85) {
    if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete (parent as Record<string, Json>)[key as string];
    return { doc, what: `delete ${at}` };
  }
  if (kind < 0.93 && Array.isArray(parent)) {
    parent.push(structuredClone(parent[key as number]));
    return { doc, what: `duplicate ${at}` };
  }
  (Array.isArray(parent) ? (doc as Record<string, Json>) : (parent as Record<string, Json>))[pick(['bogus', 'Id', 'members ', 'enabled'])] = 1;
  return { doc, what: `unknown field near ${at}` };
}

function loadSeeds(): { name: string; spec: Json }[] {
  return readdirSync(FIXTURES)
    .filter((f) => f.endsWith('.json') && !f.startsWith('render-only'))
    .sort()
    .map((f) => ({ name: f, spec: JSON.parse(readFileSync(join(FIXTURES, f), 'utf8')) as Json }));
}

const t = suite('spec mutations: refused with a field path, or rendered to configs haproxy and keepalived accept');
let certDir: string;
let workRoot: string;
const targets: { command: string[]; keepalived: string[]; label: string; target: RenderTarget }[] = [];

t.before(
  loud(async () => {
    ({ certDir, workRoot } = await fixtureWorkspace('mutation'));
    // keepalived does not depend on haproxy: the keepalived versions take turns,
    // so every mutant meets each of them.
    for (const [i, h] of HAPROXIES.entries()) {
      const caps = await haproxyCapabilities(h.command, join(TEST_ROOT, 'probes'));
      const k = KEEPALIVEDS[i % KEEPALIVEDS.length]!;
      targets.push({ command: h.command, keepalived: k.command, label: `${h.label}/${k.label}`, target: { initStateAtStartup: caps.initStateAtStartup } });
    }
  }),
);

t(`${MUTANTS} mutants of the fixtures`, async () => {
  const seeds = loadSeeds();
  assert.ok(seeds.length >= 20, `expected the fixtures, found ${seeds.length}`);
  const rnd = prng(20261202);
  const settings = { ...DEFAULT_RENDER_SETTINGS };
  let refused = 0;
  let rendered = 0;
  let missingCertificate = 0;
  const failures: string[] = [];
  const checks: (() => Promise<void>)[] = [];
  for (let i = 0; i < MUTANTS; i++) {
    const seed = seeds[i % seeds.length]!;
    const { doc, what } = mutate(seed.spec, rnd);
    const label = `mutant ${i} (${seed.name}: ${what})`;
    let spec: LoadBalancerSpec;
    try {
      spec = validateSpec(doc);
    } catch (err) {
      if (!(err instanceof SpecError)) failures.push(`${label}: validation threw ${(err as Error).stack}`);
      else if (!err.problems.every((p) => /^[^:]+: \S/.test(p))) failures.push(`${label}: unclear problem ${err.message}`);
      else refused++;
      continue;
    }
    for (const { target } of targets) {
      try {
        renderLoadBalancer(spec, settings, target);
      } catch (err) {
        failures.push(`${label}: render threw ${(err as Error).stack}`);
      }
    }
    rendered++;
    for (const { command, keepalived, label: hl, target } of targets) {
      checks.push(async () => {
        try {
          for (const v of await checkSpec(spec, settings, target, command, certDir, workRoot, keepalived)) {
            if (!v.ok) failures.push(`${label}: ${hl} ${v.tool} rejected it:\n${v.output.trim()}`);
          }
        } catch (err) {
          if (err instanceof UsageError) missingCertificate++;
          else failures.push(`${label}: check threw ${(err as Error).stack}`);
        }
      });
    }
  }
  // Four haproxy -c at a time: two cores, and the chroot start-up is mostly waiting.
  const queue = [...checks];
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let job = queue.shift(); job; job = queue.shift()) await job();
    }),
  );
  console.log(
    `  ${MUTANTS} mutants: ${refused} refused with field paths, ${rendered} rendered and checked on ` +
      `${targets.length} haproxy versions (${missingCertificate} checks skipped: renamed certificate file), ${failures.length} failures`,
  );
  assert.ok(rendered >= 100, `only ${rendered} mutants stayed valid: the test would prove little`);
  for (const f of failures.slice(0, 20))
    console.log(
      `  ${f
        .split('\n')
        .filter((l) => !l.includes('[NOTICE]'))
        .join('\n    ')}`,
    );
  assert.is(failures.length, 0, `${failures.length} failures`);
});

t.run();
