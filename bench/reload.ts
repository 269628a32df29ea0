// bench/reload: how long the engine takes to validate and reload a config with
// 10, 1,000 and 10,000 servers, next to a bare `haproxy -c` of the same file
// (the floor: haproxy parsing it once) in the same run, on both haproxy
// binaries of the test rig. Prints medians and the ratio engine / floor.
// Run: npm run bench:reload   (root; after test/rig/prepare.sh)
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { run } from '../agent/system/exec.js';
import { HAPROXIES, testDir } from '../test/helpers/haproxies.js';
import { createTestNetwork } from '../test/helpers/netns.js';
import { applyConfig, testEngine } from '../test/helpers/engine.js';

const SIZES = [10, 1000, 10_000];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

function config(lbId: string, baseDir: string, bind: string, servers: number, generation: number): string {
  const perBackend = Math.min(servers, 100);
  const backends = Math.ceil(servers / perBackend);
  const out = [
    // maxconn 2000: with 10,000 checked servers haproxy needs maxconn x 2 +
    // servers file descriptors, and this machine's hard limit is 20,000.
    'global', '    daemon', '    user nobody', '    maxconn 2000',
    `    stats socket ${join(baseDir, `${lbId}.sock`)} mode 0666 level user`,
    `    server-state-file ${join(baseDir, lbId, 'servers-state')}`,
    'defaults', '    mode http', '    timeout connect 5s', '    timeout client 50s', '    timeout server 50s',
    `    timeout check ${1000 + generation}`,
    'frontend listener', `    bind ${bind}`, '    default_backend pool-0',
  ];
  for (let b = 0; b < backends; b++) {
    out.push(`backend pool-${b}`, '    balance roundrobin', '    load-server-state-from-file global', '    option httpchk GET /healthz');
    for (let s = 0; s < perBackend && b * perBackend + s < servers; s++) {
      // Loopback of the benchmark's own namespace, closed ports: checks fail fast and stay local.
      out.push(`    server m${b}-${s} 127.0.${b % 250}.${(s % 250) + 1}:${10000 + s} weight 1 check inter 30s fall 3 rise 2`);
    }
  }
  return `${out.join('\n')}\n`;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const net = createTestNetwork();
try {
  console.log(`bench/reload: median of ${ROUNDS} rounds; engine = validate + commit + state dump + protection + reload + verify`);
  console.log('haproxy        servers   haproxy -c (floor)   engine apply   ratio');
  for (const h of HAPROXIES) {
    const dir = await testDir('bench-reload');
    const engine = testEngine(h, dir, net.netns);
    for (const servers of SIZES) {
      const lbId = `lb-${servers}`;
      const bind = `${net.nsIp}:${9000 + servers % 1000}`;
      await applyConfig(engine, lbId, 'amp', config(lbId, dir, bind, servers, 0));
      const floor: number[] = [];
      const apply: number[] = [];
      for (let r = 1; r <= ROUNDS; r++) {
        const text = config(lbId, dir, bind, servers, r);
        const file = join(dir, `floor-${servers}.cfg`);
        await writeFile(file, text);
        let t = performance.now();
        const res = await run([...h.command, '-c', '-q', '-f', file]);
        floor.push(performance.now() - t);
        if (res.exitCode !== 0) throw new Error(res.output);
        t = performance.now();
        await applyConfig(engine, lbId, 'amp', text);
        apply.push(performance.now() - t);
      }
      const f = median(floor);
      const a = median(apply);
      console.log(`${h.label.padEnd(14)} ${String(servers).padStart(7)}   ${f.toFixed(1).padStart(14)} ms   ${a.toFixed(1).padStart(9)} ms   ${(a / f).toFixed(2)}x`);
      await engine.stop(lbId);
    }
  }
} finally {
  net.destroy();
}
