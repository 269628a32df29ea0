// bench/apply: latency of one member change on a load balancer with 100,
// 1,000 and 5,000 members, four ways, on the same haproxy binary in the same
// run:
//  - API 2.0 member call: PUT of the one member; the runtime API;
//  - API 2.0 whole spec: a spec PUT; the agent changes the member through the runtime API;
//  - API 1.0 as Octavia drives it (upload the full config, then reload), on
//    this agent, which turns a member-only reload into runtime commands;
//  - the same 1.0 calls on an agent with runtime_member_changes = false: a
//    real reload each time, which is what Octavia's own agent does.
// Prints medians and the ratios. Run: sudo npm run bench:apply
// (BENCH_SIZES=100,1000,5000, BENCH_HAPROXY=2.6 to pick a version).
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { HAPROXIES, testDir } from '../test/helpers/haproxies.js';
import { createTestNetwork } from '../test/helpers/netns.js';
import { startAgent, type AgentUnderTest } from '../test/helpers/agent-process.js';
import { apiRequest } from '../test/helpers/api-client.js';
import { renderLoadBalancer } from '../agent/render/render.js';
import { DEFAULT_RENDER_SETTINGS } from '../agent/render/settings.js';
import { validateSpec } from '../agent/model/spec/validate.js';
import { processPssKb } from './agents.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 30);
const SIZES = (process.env.BENCH_SIZES ?? '100,1000,5000').split(',').map(Number);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function spec(lbId: string, vip: string, port: number, weight: number, members: number) {
  return {
    id: lbId,
    vip_address: vip,
    listeners: [
      {
        id: 'l-http',
        protocol: 'HTTP',
        protocol_port: port,
        connection_limit: 1000,
        default_pool: {
          id: 'p-web',
          protocol: 'HTTP',
          lb_algorithm: 'ROUND_ROBIN',
          healthmonitor: { type: 'HTTP', delay: 5, timeout: 3, max_retries: 2, url_path: '/healthz' },
          members: Array.from({ length: members }, (_, i) => ({
            id: `m${i}`,
            ...memberAt(i, i === 0 ? weight : 1),
          })),
        },
      },
    ],
  };
}

/** Member i's address (10.99.0.0/16, closed ports: checks fail fast and stay local) and weight. */
const memberAt = (i: number, weight: number) => ({ address: `10.99.${Math.floor(i / 250)}.${(i % 250) + 1}`, protocol_port: 80, weight });

for (const h of HAPROXIES.filter((x) => !process.env.BENCH_HAPROXY || x.label.includes(process.env.BENCH_HAPROXY)))
  for (const MEMBERS of SIZES) {
    const net = createTestNetwork();
    const dir = await testDir('bench-apply');
    const agent = await startAgent(h, `${dir}/runtime`, net.netns, 19943);
    const classic = await startAgent(h, `${dir}/classic`, net.netns, 19944, undefined, ['runtime_member_changes = false']);
    try {
      const v2Lb = 'lb-bench-v2';
      // One kept-alive TLS connection per agent, as a control plane keeps one.
      const connection = new https.Agent({ keepAlive: true, maxSockets: 1 });
      const classicConnection = new https.Agent({ keepAlive: true, maxSockets: 1 });
      const put2 = (weight: number) =>
        apiRequest(agent, 'PUT', `/2.0/loadbalancers/${v2Lb}`, { body: spec(v2Lb, net.nsIp, 8080, weight, MEMBERS), connection });
      const putMember = (weight: number) =>
        apiRequest(agent, 'PUT', `/2.0/loadbalancers/${v2Lb}/pools/p-web/members/m0`, { body: memberAt(0, weight), connection });
      const v1 = v1Path(agent, 'lb-bench-v1', net.nsIp, 8081, connection, MEMBERS);
      const v1Classic = v1Path(classic, 'lb-bench-v1c', net.nsIp, 8082, classicConnection, MEMBERS);

      // The agent's own memory (not its haproxy's) from before the 2.0 create to the end of the timed whole-spec PUTs.
      const pssIdleKb = processPssKb(agent.process.pid!);
      let pssPeakKb = pssIdleKb;
      const sampler = setInterval(() => {
        pssPeakKb = Math.max(pssPeakKb, processPssKb(agent.process.pid!));
      }, 50);
      // Each path runs with only its own load balancer: every one of them
      // health-checks all its members (3,000 checks a second for three pools of
      // 5,000), and the others' checks would be counted against the path timed.
      // The agent closes a connection idle for 5 s (Node's keep-alive timeout;
      // Octavia's gunicorn closes after 2 s): each path starts on a new one.
      // Untimed warm-up first, so each is measured as a long-running agent runs
      // it (V8 optimises a function after some dozens of calls; with 5 warm-up
      // rounds the 2.0 median was 13 ms, from the 30th round on it is 7-9 ms),
      // then a second for the start-up checks to settle.
      const warm = async (step: (i: number) => Promise<unknown>) => {
        for (let i = 0; i < WARMUP; i++) await step(i);
        await new Promise((r) => setTimeout(r, 1000));
      };
      const timed = async (call: (w: number) => Promise<{ text: string; json?: { result?: string } }>) => {
        const ms: number[] = [];
        for (let i = 0; i < ROUNDS; i++) {
          const t = performance.now();
          const res = await call(2 + (i % 2));
          ms.push(performance.now() - t);
          if (res.json?.result !== 'runtime') throw new Error(`2.0 change was not a runtime change: ${res.text}`);
        }
        return median(ms);
      };
      if ((await put2(1)).status !== 201) throw new Error('2.0 create failed');
      await warm((i) => putMember(6 + (i % 2)));
      await putMember(7);
      const member = await timed(putMember);
      await warm((i) => put2(4 + (i % 2)));
      await put2(5);
      const whole = await timed(put2);
      clearInterval(sampler);
      await apiRequest(agent, 'DELETE', `/2.0/loadbalancers/${v2Lb}`, { connection });
      connection.destroy();
      await v1.change(1);
      await warm((i) => v1.change(4 + (i % 2)));
      const runtime1 = await v1.measure(ROUNDS);
      await apiRequest(agent, 'DELETE', '/1.0/loadbalancer/lb-bench-v1/haproxy', { connection });
      await v1Classic.change(1);
      await warm((i) => v1Classic.change(4 + (i % 2)));
      const classic1 = await v1Classic.measure(ROUNDS);
      console.log(`${h.label}: one member's weight, ${MEMBERS}-member pool, median of ${ROUNDS}`);
      console.log(`  API 2.0 member call (runtime API)                 ${member.toFixed(1)} ms`);
      console.log(`  API 2.0 whole spec PUT (runtime API)              ${whole.toFixed(1)} ms`);
      console.log(
        `  API 1.0 upload + reload, member-only -> runtime   ${runtime1.total.toFixed(1)} ms (upload with haproxy -c ${runtime1.upload.toFixed(1)} ms)`,
      );
      console.log(
        `  API 1.0 upload + real reload (Octavia's agent)    ${classic1.total.toFixed(1)} ms (upload with haproxy -c ${classic1.upload.toFixed(1)} ms)`,
      );
      console.log(
        `  agent PSS: ${(pssIdleKb / 1024).toFixed(1)} MiB before the 2.0 create, peak ${(pssPeakKb / 1024).toFixed(1)} MiB during it and the PUTs (sampled every 50 ms)`,
      );
      console.log(`  ratio, member call against upload + real reload   ${(classic1.total / member).toFixed(1)}x faster`);
      console.log(`  ratio, whole spec against upload + real reload    ${(classic1.total / whole).toFixed(1)}x faster`);
      console.log(`  ratio, 1.0 runtime against upload + real reload   ${(classic1.total / runtime1.total).toFixed(1)}x faster`);
    } catch (err) {
      // What the agents said before it failed: the bench's own error rarely tells.
      console.error(`${h.label}, ${MEMBERS} members: ${String(err)}\n${agent.output().slice(-4000)}\n${classic.output().slice(-2000)}`);
      process.exitCode = 1;
    } finally {
      await apiRequest(agent, 'DELETE', '/2.0/loadbalancers/lb-bench-v2').catch(() => undefined);
      await apiRequest(agent, 'DELETE', '/1.0/loadbalancer/lb-bench-v1/haproxy').catch(() => undefined);
      await apiRequest(classic, 'DELETE', '/1.0/loadbalancer/lb-bench-v1c/haproxy').catch(() => undefined);
      await agent.stop();
      await classic.stop();
      net.destroy();
    }
  }

/** One member change as Octavia's controller makes it: upload the whole config, then reload. */
function v1Path(agent: AgentUnderTest, lbId: string, vip: string, port: number, connection: https.Agent, members: number) {
  const settings = { ...DEFAULT_RENDER_SETTINGS, basePath: agent.basePath, baseCertDir: agent.certDir };
  const config = (weight: number) =>
    renderLoadBalancer(validateSpec(spec(lbId, vip, port, weight, members)), settings, { initStateAtStartup: false }).haproxyConfig!;
  const uploadMs: number[] = [];
  const change = async (weight: number) => {
    const t = performance.now();
    const up = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${lbId}/haproxy`, {
      raw: config(weight),
      headers: { 'Content-Type': 'text/plain' },
      connection,
    });
    if (up.status !== 202) throw new Error(`1.0 upload: ${up.status} ${up.text}`);
    uploadMs.push(performance.now() - t);
    const re = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${lbId}/reload`, { connection });
    if (re.status !== 202) throw new Error(`1.0 reload: ${re.status} ${re.text}`);
  };
  return {
    change,
    async measure(rounds: number) {
      uploadMs.length = 0;
      const total: number[] = [];
      for (let i = 0; i < rounds; i++) {
        const t = performance.now();
        await change(2 + (i % 2));
        total.push(performance.now() - t);
      }
      return { total: median(total), upload: median(uploadMs) };
    },
  };
}
