// bench/reload: API 1.0's upload + reload, as Octavia's controller drives
// it, with 1, 100, 1,000 and 10,000 members, next to two floors in the same
// run, each with its own haproxy started from the same config:
//   floor        `haproxy -c` of the file plus a plain reload (the master
//                CLI's reload, done when the new worker answers, which is
//                where the agent's reload counts as done too);
//   floor+state  the same with the server state saved to the config's
//                server-state-file before the reload, as Octavia's own agent
//                does before every reload: haproxy then also loads it, in
//                -c and in the new worker.
// A config change that is not a member change (the listener's connection
// limit) makes every round a real reload. The agent's extra over the floors:
// HTTP and mutual TLS, the config policy, the file writes, the member
// protection (and over the first floor, the server state).
// Prints medians and the ratios agent / floor.
// Run: npm run bench:reload   (root; after test/rig/prepare.sh)
//   BENCH_SIZES=1,100,1000,10000  BENCH_HAPROXY=2.6  BENCH_ROUNDS=7
import https from 'node:https';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { readConfig } from '../agent/haproxy/config/config-reader.js';
import { loadBalancerFiles } from '../agent/haproxy/layout.js';
import { workerCommand } from '../agent/haproxy/process/master-cli.js';
import { DirectSupervisor } from '../agent/haproxy/process/process.js';
import { renderLoadBalancer } from '../agent/render/render.js';
import { DEFAULT_RENDER_SETTINGS } from '../agent/render/settings.js';
import { validateSpec } from '../agent/model/spec/validate.js';
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
    id: lbId,
    vip_address: vip,
    listeners: [
      {
        id: 'l-http',
        protocol: 'HTTP',
        protocol_port: port,
        connection_limit: limit,
        default_pool: {
          id: 'p-web',
          protocol: 'HTTP',
          lb_algorithm: 'ROUND_ROBIN',
          healthmonitor: { type: 'HTTP', delay: 5, timeout: 3, max_retries: 2, url_path: '/healthz' },
          members: Array.from({ length: members }, (_, i) => ({ id: `m${i}`, address: `10.99.${Math.floor(i / 250)}.${(i % 250) + 1}`, protocol_port: 80 })),
        },
      },
    ],
  });
  const settings = { ...DEFAULT_RENDER_SETTINGS, basePath, baseCertDir: certDir };
  return renderLoadBalancer(spec, settings, { initStateAtStartup: false }).haproxyConfig!;
}

const net = createTestNetwork();
try {
  console.log(
    `bench/reload: median of ${ROUNDS} rounds; floor = haproxy -c + plain reload of the same file; floor+state = floor + the server state saved first`,
  );
  console.log('haproxy        members        floor   floor+state   agent (upload + reload)   agent/floor   agent/floor+state');
  for (const h of HAPROXIES.filter((x) => !process.env.BENCH_HAPROXY || x.label.includes(process.env.BENCH_HAPROXY))) {
    const dir = await testDir('bench-reload');
    const agent = await startAgent(h, `${dir}/agent`, net.netns, 19963);
    // A controller's session keeps its connection between calls; the agent closes one idle
    // for 5 s (Node's default), and a floor round takes longer at 10,000 members: each
    // round opens its own, outside the time, so no request meets a closing connection.
    let connection = new https.Agent({ keepAlive: true, maxSockets: 1 });
    const supervisor = new DirectSupervisor(h.command, net.netns, join(agent.basePath, 'haproxy-default-user-group.conf'));
    try {
      for (const members of SIZES) {
        const lbId = `lb-${members}`;
        // connection_limit stays small: with 10,000 checked servers haproxy needs maxconn x 2 + servers descriptors, and the hard limit here is 20,000.
        const agentConfig = (limit: number) => config(lbId, net.nsIp, 8080, members, limit, agent.basePath, agent.certDir);
        const upload = (text: string) =>
          apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${lbId}/haproxy`, {
            raw: text,
            headers: { 'Content-Type': 'text/plain' },
            connection,
          });
        const reload = () => apiRequest(agent, 'PUT', `/1.0/loadbalancer/${lbId}/reload`, { connection });
        const expect = (status: number, res: { status: number; text: string }, what: string) => {
          if (res.status !== status) throw new Error(`${what}: ${res.status} ${res.text}`);
        };
        expect(202, await upload(agentConfig(1000)), 'upload');
        expect(202, await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${lbId}/start`, { connection }), 'start');

        // The floors' haproxies: the same config, each its own directory and port.
        const floors = await Promise.all(
          [
            { port: 8081, saveState: false },
            { port: 8082, saveState: true },
          ].map(async (f) => {
            const floorDir = join(dir, `floor-${members}-${f.port}`);
            mkdirSync(floorDir, { recursive: true });
            const inst = { lbId, files: loadBalancerFiles(floorDir, lbId), peerName: 'floor' };
            mkdirSync(inst.files.dir, { recursive: true });
            const text = (limit: number) => config(lbId, net.nsIp, f.port, members, limit, floorDir, join(floorDir, 'certs'));
            writeFileSync(inst.files.live, text(1000));
            await supervisor.start(inst);
            return { ...f, inst, text, stateFile: readConfig(text(1000)).serverStateFile!, ms: [] as number[] };
          }),
        );

        const agentMs: number[] = [];
        for (let r = 1; r <= ROUNDS; r++) {
          const limit = 1000 + r;
          for (const floor of floors) {
            writeFileSync(floor.inst.files.live, floor.text(limit));
            const t = performance.now();
            const check = await run([...h.command, '-c', '-q', '-f', floor.inst.files.live, '-f', join(agent.basePath, 'haproxy-default-user-group.conf')]);
            if (check.exitCode !== 0) throw new Error(check.output);
            if (floor.saveState) writeFileSync(floor.stateFile, await workerCommand(floor.inst.files.masterSocket, 'show servers state'));
            await supervisor.reload(floor.inst, await supervisor.status(floor.inst));
            floor.ms.push(performance.now() - t);
          }

          const text = agentConfig(limit);
          connection.destroy();
          connection = new https.Agent({ keepAlive: true, maxSockets: 1 });
          expect(200, await apiRequest(agent, 'GET', '/1.0/info', { connection }), 'info');
          const t = performance.now();
          expect(202, await upload(text), 'upload');
          const uploaded = performance.now();
          expect(202, await reload(), 'reload');
          agentMs.push(performance.now() - t);
          if (process.env.BENCH_DETAIL)
            console.log(
              `  floors ${floors.map((f) => f.ms.at(-1)!.toFixed(0)).join(' / ')} ms; agent: upload ${(uploaded - t).toFixed(0)} ms, reload ${(performance.now() - uploaded).toFixed(0)} ms`,
            );
        }
        const [plain, saved] = floors.map((f) => median(f.ms));
        const a = median(agentMs);
        console.log(
          `${h.label.padEnd(14)} ${String(members).padStart(7)}   ${plain!.toFixed(1).padStart(7)} ms   ${saved!.toFixed(1).padStart(8)} ms   ${a.toFixed(1).padStart(20)} ms   ${(a / plain!).toFixed(2).padStart(10)}x   ${(a / saved!).toFixed(2).padStart(16)}x`,
        );
        for (const f of floors) await supervisor.stop(f.inst);
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
