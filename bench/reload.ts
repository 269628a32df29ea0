// bench/reload: API 1.0's upload + reload, as Octavia's controller drives
// it, with 1, 100, 1,000 and 10,000 members, next to its floor in the same
// run: `haproxy -c` of the same file plus a plain reload of a haproxy started
// from it (the master CLI's reload, done when the new worker answers, which
// is where the agent's reload counts as done too). A config change that is
// not a member change (the listener's connection limit) makes every round a
// real reload. The agent's extra over the floor: HTTP and mutual TLS, the
// file writes, the server state dump and the member protection.
// Prints medians and the ratio agent / floor.
// Run: npm run bench:reload   (root; after test/rig/prepare.sh)
//   BENCH_SIZES=1,100,1000,10000  BENCH_HAPROXY=2.6  BENCH_ROUNDS=7
import https from 'node:https';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadBalancerFiles } from '../agent/haproxy/layout.js';
import { DirectSupervisor } from '../agent/haproxy/process.js';
import { renderLoadBalancer } from '../agent/render/render.js';
import { DEFAULT_RENDER_SETTINGS } from '../agent/render/settings.js';
import { validateSpec } from '../agent/spec/validate.js';
import { run } from '../agent/system/exec.js';
import { apiRequest } from '../test/helpers/api-client.js';
import { startAgent } from '../test/helpers/agent-process.js';
import { HAPROXIES, testDir } from '../test/helpers/haproxies.js';
import { createTestNetwork } from '../test/helpers/netns.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const SIZES = (process.env.BENCH_SIZES ?? '1,100,1000,10000').split(',').map(Number);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The load balancer as Octavia renders it; `limit` changes every round. Members on closed addresses of the namespace: checks fail fast and stay local. */
function config(lbId: string, vip: string, port: number, members: number, limit: number, basePath: string, certDir: string): string {
  const spec = validateSpec({
    id: lbId, vip_address: vip,
    listeners: [{
      id: 'l-http', protocol: 'HTTP', protocol_port: port, connection_limit: limit,
      default_pool: {
        id: 'p-web', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN',
        healthmonitor: { type: 'HTTP', delay: 5, timeout: 3, max_retries: 2, url_path: '/healthz' },
        members: Array.from({ length: members }, (_, i) => ({ id: `m${i}`, address: `10.99.${Math.floor(i / 250)}.${(i % 250) + 1}`, protocol_port: 80 })),
      },
    }],
  });
  const settings = { ...DEFAULT_RENDER_SETTINGS, basePath, baseCertDir: certDir };
  return renderLoadBalancer(spec, settings, { initStateAtStartup: false }).haproxyConfig!;
}

const net = createTestNetwork();
try {
  console.log(`bench/reload: median of ${ROUNDS} rounds; floor = haproxy -c + plain reload of the same file`);
  console.log('haproxy        members   floor (-c + reload)   agent (upload + reload)   ratio');
  for (const h of HAPROXIES.filter((x) => !process.env.BENCH_HAPROXY || x.label.includes(process.env.BENCH_HAPROXY))) {
    const dir = await testDir('bench-reload');
    const agent = await startAgent(h, `${dir}/agent`, net.netns, 19963);
    const connection = new https.Agent({ keepAlive: true, maxSockets: 1 });
    const supervisor = new DirectSupervisor(h.command, net.netns, join(agent.basePath, 'haproxy-default-user-group.conf'));
    try {
      for (const members of SIZES) {
        const lbId = `lb-${members}`;
        // connection_limit stays small: with 10,000 checked servers haproxy needs maxconn x 2 + servers descriptors, and the hard limit here is 20,000.
        const agentConfig = (limit: number) => config(lbId, net.nsIp, 8080, members, limit, agent.basePath, agent.certDir);
        const upload = (text: string) => apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${lbId}/haproxy`, { raw: text, headers: { 'Content-Type': 'text/plain' }, connection });
        const reload = () => apiRequest(agent, 'PUT', `/1.0/loadbalancer/${lbId}/reload`, { connection });
        const expect = (status: number, res: { status: number; text: string }, what: string) => {
          if (res.status !== status) throw new Error(`${what}: ${res.status} ${res.text}`);
        };
        expect(202, await upload(agentConfig(1000)), 'upload');
        expect(202, await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${lbId}/start`, { connection }), 'start');

        // The floor's haproxy: the same config, its own directory and port.
        const floorDir = join(dir, `floor-${members}`);
        mkdirSync(floorDir, { recursive: true });
        const floor = { lbId, files: loadBalancerFiles(floorDir, lbId), peerName: 'floor' };
        mkdirSync(floor.files.dir, { recursive: true });
        const floorConfig = (limit: number) => config(lbId, net.nsIp, 8081, members, limit, floorDir, join(floorDir, 'certs'));
        writeFileSync(floor.files.live, floorConfig(1000));
        await supervisor.start(floor);

        const agentMs: number[] = [];
        const floorMs: number[] = [];
        for (let r = 1; r <= ROUNDS; r++) {
          const limit = 1000 + r;
          writeFileSync(floor.files.live, floorConfig(limit));
          let t = performance.now();
          const check = await run([...h.command, '-c', '-q', '-f', floor.files.live, '-f', join(agent.basePath, 'haproxy-default-user-group.conf')]);
          if (check.exitCode !== 0) throw new Error(check.output);
          const checked = performance.now();
          await supervisor.reload(floor, await supervisor.status(floor));
          floorMs.push(performance.now() - t);
          if (process.env.BENCH_DETAIL) console.log(`  floor: -c ${(checked - t).toFixed(0)} ms, reload ${(performance.now() - checked).toFixed(0)} ms`);

          const text = agentConfig(limit);
          t = performance.now();
          expect(202, await upload(text), 'upload');
          const uploaded = performance.now();
          expect(202, await reload(), 'reload');
          agentMs.push(performance.now() - t);
          if (process.env.BENCH_DETAIL) console.log(`  agent: upload ${(uploaded - t).toFixed(0)} ms, reload ${(performance.now() - uploaded).toFixed(0)} ms`);
        }
        const f = median(floorMs);
        const a = median(agentMs);
        console.log(`${h.label.padEnd(14)} ${String(members).padStart(7)}   ${f.toFixed(1).padStart(16)} ms   ${a.toFixed(1).padStart(20)} ms   ${(a / f).toFixed(2)}x`);
        await supervisor.stop(floor);
        await apiRequest(agent, 'DELETE', `/1.0/loadbalancer/${lbId}/haproxy`, { connection });
      }
    } finally {
      connection.destroy();
      await agent.stop();
    }
  }
} finally {
  net.destroy();
}
