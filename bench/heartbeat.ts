// bench/heartbeat: time and size to build the heartbeat of a load balancer
// with 5,000 members, by this agent and by Octavia's own health daemon
// (python3-octavia's build_stats_message + wrap_envelope), both reading the
// same running haproxy in the same run. Prints medians and ratios.
// Run: sudo npm run bench:heartbeat
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { HAPROXIES, testDir } from '../test/helpers/haproxies.js';
import { createTestNetwork } from '../test/helpers/netns.js';
import { applyConfig, testEngine } from '../test/helpers/engine.js';
import { octaviaStyleConfig } from '../test/helpers/octavia-config.js';
import { ConfigStore } from '../agent/config/store.js';
import { HeartbeatSender, MAX_DATAGRAM } from '../agent/health/sender.js';
import { encodeToFit } from '../agent/health/envelope.js';
import { rootLogger } from '../agent/log.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const MEMBERS = 5000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const KEY = 'bench-key';
const AMP = randomUUID();
const OCTAVIA = fileURLToPath(new URL('../../bench/heartbeat_octavia.py', import.meta.url));

const net = createTestNetwork();
const dir = await testDir('bench-hb');
const lbId = randomUUID();
const engine = testEngine(HAPROXIES[0]!, dir, net.netns);
try {
  await applyConfig(
    engine,
    lbId,
    'amp',
    octaviaStyleConfig({
      lbId,
      baseDir: dir,
      bind: `${net.nsIp}:8080`,
      monitor: null,
      connectionLimit: 2000,
      members: Array.from({ length: MEMBERS }, (_, i) => ({ id: randomUUID(), address: `127.0.${i >> 8}.${(i & 127) + 1}:80` })),
    }),
  );
  const conf = join(dir, 'agent.conf');
  writeFileSync(conf, `[haproxy_amphora]\nbase_path = ${dir}\n[amphora_agent]\namphora_id = ${AMP}\n[health_manager]\nheartbeat_key = ${KEY}\n`);
  const store = await ConfigStore.load(conf);
  const sender = new HeartbeatSender({ config: store, log: rootLogger, loadBalancerIds: () => engine.loadBalancerIds(), stats: (lbId) => engine.stats(lbId) });
  const times: number[] = [];
  let bytes = 0;
  let trimmed = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const t = performance.now();
    const fitted = await encodeToFit(await sender.buildNext(true), KEY, MAX_DATAGRAM);
    times.push(performance.now() - t);
    bytes = fitted.datagram.length;
    trimmed = fitted.trimmedPools.length;
  }
  times.sort((a, b) => a - b);
  const ours = times[Math.floor(times.length / 2)]!;
  const octavia = JSON.parse(execFileSync('/usr/bin/python3', [OCTAVIA, dir, AMP, KEY, String(ROUNDS)], { encoding: 'utf8' })) as {
    ms: number;
    bytes: number;
    members: number;
  };
  console.log(`bench/heartbeat: one load balancer, ${MEMBERS} members (UUID ids), median of ${ROUNDS}`);
  console.log(
    `amphora-agent (TypeScript)   ${ours.toFixed(1).padStart(7)} ms   ${bytes} bytes${trimmed ? ` (member statuses of ${trimmed} pool left out to fit ${MAX_DATAGRAM})` : ''}`,
  );
  console.log(
    `Octavia health daemon        ${octavia.ms.toFixed(1).padStart(7)} ms   ${octavia.bytes} bytes (${octavia.members} members; over ${MAX_DATAGRAM} bytes the receiver drops it)`,
  );
  console.log(`ratio: ${(octavia.ms / ours).toFixed(1)}x faster`);
} finally {
  await engine.stop(lbId).catch(() => undefined);
  net.destroy();
}
