// bench/vrrp-check: what one run of keepalived's VRRP check costs in
// ACTIVE_STANDBY (every vrrp_check_interval, 5 s by default), as keepalived
// runs it (`check_script.sh`, which runs each file in check_scripts/ with
// bash), against the same running haproxy in the same run:
//   - this agent: a shell script with socat per stats socket;
//   - Octavia's agent: `haproxy-vrrp-check SOCKET` (python3-octavia's entry);
//   - this agent before: `node dist/agent/main.js haproxy-vrrp-check SOCKET`.
// CPU (user + system) and the largest process's peak RSS come from GNU time
// (getrusage of the children) over a series of runs. Prints means and
// ratios; asserts nothing (BENCH_LBS load balancers, BENCH_ROUNDS runs).
// Run: sudo npm run bench:vrrp-check
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { updateHaproxyCheckScript } from '../agent/keepalived/service.js';
import { statsSocket } from '../agent/config/layout.js';
import { HAPROXIES, testDir } from '../test/helpers/haproxies.js';
import { createTestNetwork } from '../test/helpers/netns.js';
import { applyConfig, testEngine } from '../test/helpers/engine.js';
import { octaviaStyleConfig } from '../test/helpers/octavia-config.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const LBS = Number(process.env.BENCH_LBS ?? 1);
const MAIN = fileURLToPath(new URL('../agent/main.js', import.meta.url));
const OCTAVIA_CHECK = '/usr/bin/haproxy-vrrp-check';

// Octavia's check_script.sh (keepalived_check_script.conf.j2), as the agent writes it too.
const checkScript = (dir: string) =>
  `#!/bin/bash\nshopt -s nullglob\nstatus=0\nfor file in ${dir}/*\ndo\n  bash $file\n  status=$(( $status + $? ))\ndone\nexit $status\n`;

interface Cost {
  cpuMs: number;
  rssMb: number;
  wallMs: number;
  exit: number;
}

/** ROUNDS runs of the check in a row under one GNU time: per-run CPU and wall time, the largest peak RSS. */
function measure(script: string): Cost {
  // GNU time writes its line on stderr and exits with the command's status;
  // its figures have 10 ms resolution, so it times the whole series.
  const loop = `for i in $(seq ${ROUNDS}); do bash ${script} >/dev/null 2>&1 || exit $?; done`;
  const res = spawnSync('/usr/bin/time', ['-f', '%e %U %S %M %x', 'bash', '-c', loop], { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
  const f = res.stderr.trim().split('\n').pop()!.split(' ').map(Number);
  return { wallMs: (f[0]! * 1000) / ROUNDS, cpuMs: ((f[1]! + f[2]!) * 1000) / ROUNDS, rssMb: f[3]! / 1024, exit: f[4]! };
}

const net = createTestNetwork();
const dir = await testDir('bench-vrrp-check');
const engine = testEngine(HAPROXIES[0]!, dir, net.netns);
const lbIds = Array.from({ length: LBS }, () => randomUUID());
try {
  for (const [i, lbId] of lbIds.entries()) {
    await applyConfig(
      engine,
      lbId,
      'amp',
      octaviaStyleConfig({
        lbId,
        baseDir: dir,
        bind: `${net.nsIp}:${8080 + i}`,
        monitor: null,
        connectionLimit: 1000,
        members: [{ id: randomUUID(), address: '127.0.0.1:9' }],
      }),
    );
  }
  const sockets = lbIds.map((lb) => statsSocket(dir, lb));
  const variants: [string, (checks: string) => Promise<void>][] = [
    [
      'amphora-agent (sh + socat)',
      async (checks) => {
        await updateHaproxyCheckScript(join(checks, '..', '..'), sockets, false);
      },
    ],
    [
      'Octavia 11 haproxy-vrrp-check',
      async (checks) => {
        writeFileSync(join(checks, 'haproxy_check_script.sh'), `haproxy-vrrp-check ${sockets.join(' ')}; exit $?`);
      },
    ],
    [
      'amphora-agent before (node)',
      async (checks) => {
        writeFileSync(join(checks, 'haproxy_check_script.sh'), `${process.execPath} ${MAIN} haproxy-vrrp-check ${sockets.join(' ')}; exit $?\n`);
      },
    ],
  ];
  execFileSync('test', ['-x', OCTAVIA_CHECK]);
  const results: { name: string; cost: Cost }[] = [];
  for (const [i, [name, write]] of variants.entries()) {
    const vrrp = join(dir, `v${i}`, 'vrrp');
    const checks = join(vrrp, 'check_scripts');
    mkdirSync(checks, { recursive: true });
    writeFileSync(join(vrrp, 'check_script.sh'), checkScript(checks), { mode: 0o755 });
    await write(checks);
    const cost = measure(join(vrrp, 'check_script.sh'));
    if (cost.exit !== 0) throw new Error(`${name}: the check failed against a running haproxy (exit ${cost.exit})`);
    results.push({ name, cost });
  }
  console.log(`bench/vrrp-check: one run of check_script.sh as keepalived runs it, ${LBS} load balancer(s), mean of ${ROUNDS} runs`);
  console.log(`${'check'.padEnd(32)} ${'CPU ms'.padStart(8)} ${'wall ms'.padStart(8)} ${'peak RSS MB'.padStart(12)}`);
  for (const r of results) {
    console.log(`${r.name.padEnd(32)} ${r.cost.cpuMs.toFixed(1).padStart(8)} ${r.cost.wallMs.toFixed(1).padStart(8)} ${r.cost.rssMb.toFixed(1).padStart(12)}`);
  }
  const [ours, octavia, before] = results.map((r) => r.cost) as [Cost, Cost, Cost];
  const ratio = (a: number, b: number) => (a / b).toFixed(1);
  console.log(
    `ratios: Octavia / agent CPU ${ratio(octavia.cpuMs, ours.cpuMs)}x, RSS ${(octavia.rssMb / ours.rssMb).toFixed(1)}x; ` +
      `agent before / now CPU ${ratio(before.cpuMs, ours.cpuMs)}x, RSS ${(before.rssMb / ours.rssMb).toFixed(1)}x`,
  );
  console.log(
    `per hour at a 5 s interval: agent ${((ours.cpuMs * 720) / 1000).toFixed(1)} s CPU, Octavia ${((octavia.cpuMs * 720) / 1000).toFixed(1)} s, agent before ${((before.cpuMs * 720) / 1000).toFixed(1)} s`,
  );
} finally {
  for (const lb of lbIds) await engine.stop(lb).catch(() => undefined);
  net.destroy();
}
