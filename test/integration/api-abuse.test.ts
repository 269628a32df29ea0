// The API under abuse from the management network: 500 idle TLS connections
// (with a valid client certificate, the worst case: they pass the handshake),
// slow headers, and a flood of TCP connections sending nothing, a partial
// ClientHello, garbage or a handshake without a client certificate, all kept
// up while a well-behaved controller makes its requests. Every controller
// request is answered, p99 under 1 s (the bound: physics allows far
// less), idle and slow connections are closed by the documented timeouts,
// and the agent's memory stays bounded. Then 100 concurrent controller
// requests, config uploads among them, are all answered correctly. The API
// does not depend on the haproxy version: this runs on the image's (3.0).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import https from 'node:https';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { apiRequest } from '../helpers/api-client.js';
import { TestBackend } from '../helpers/backend.js';
import { octaviaStyleConfig } from '../helpers/octavia-config.js';
import { sleep, waitFor } from '../helpers/load.js';
import { testPorts } from '../helpers/ports.js';
import { API_LIMITS } from '../../agent/api/tls-server.js';
import type { AbuseKind, AbuseOptions, AbuseReport } from '../helpers/api-abuser-main.js';

const PORTS = testPorts('api-abuse');
const AGENT_PORT = PORTS.one();
const MEMBER_PORT = PORTS.one();
const IDLE = 500;
const SLOW = 50;
/** Connections of the handshake flood held open at once (nothing or a partial ClientHello sent). */
const HALF_OPEN = 200;
/** Workers that connect, send garbage or a certificate-less handshake, and go again as soon as they are closed. */
const CHURNERS = 8;
const CONTROLLER_REQUESTS = 300;
/** The controller goes on at least this long: past two rounds of idle timeouts and their reconnect storms. */
const CONTROLLER_MS = 2 * API_LIMITS.firstRequestTimeoutMs + 5000;
const ABUSER = fileURLToPath(new URL('../helpers/api-abuser-main.js', import.meta.url));
/** Time the server may take past a timeout: its check interval, a busy event loop. */
const MARGIN_MS = API_LIMITS.checkIntervalMs + 4000;

const t = suite('API under abuse: idle, slow and half-open connections, a handshake flood; the controller still served');
let network: TestNetwork;
let agent: AgentUnderTest;
let member: TestBackend;

const rssKb = () => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${agent.process.pid}/status`, 'utf8'))?.[1]);
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

t.before(
  loud(async () => {
    network = createTestNetwork();
    const dir = await testDir('api-abuse');
    member = await new TestBackend('member', network.hostIp, MEMBER_PORT).start();
    agent = await startAgent(HAPROXIES[1]!, dir, network.netns, AGENT_PORT);
  }),
);

t.after(async () => {
  await agent?.stop();
  await member?.stop();
  network?.destroy();
});

/** Runs the abuser process; `stop()` ends its flood and gives its report once the server closed all its connections. */
async function startAbuser(): Promise<{ opened: number; stop(): Promise<AbuseReport> }> {
  const options: AbuseOptions = {
    port: AGENT_PORT,
    servername: agent.amphoraId,
    ca: agent.serverCa.cert,
    cert: agent.client.cert,
    key: agent.client.key,
    idle: IDLE,
    slow: SLOW,
    halfOpen: HALF_OPEN,
    churners: CHURNERS,
  };
  const child = spawn(process.execPath, [ABUSER, JSON.stringify(options)], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  await waitFor('the abuser to open its connections', () => /^ready \d+$/m.test(out) || child.exitCode !== null, 120_000, 100);
  return {
    opened: Number(/^ready (\d+)$/m.exec(out)?.[1]),
    async stop() {
      child.stdin!.end();
      await new Promise((r) => child.once('exit', r));
      return JSON.parse(out.trim().split('\n').pop()!) as AbuseReport;
    },
  };
}

t(
  '500 idle, 50 slow, 200 half-open connections and a handshake flood: every controller request answered, p99 < 1 s; timeouts close the rest; memory bounded',
  async () => {
    for (let i = 0; i < 5; i++) assert.is((await apiRequest(agent, 'GET', '/1.0/info')).status, 200);
    const rssBefore = rssKb();
    let rssPeak = rssBefore;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, rssKb());
    }, 200);
    const latencies: number[] = [];
    const byPath = new Map<string, number[]>([
      ['/1.0/info', []],
      ['/1.0/details', []],
    ]);
    const failures: string[] = [];
    const abuser = await startAbuser();
    const connection = new https.Agent({ keepAlive: true, maxSockets: 1 });
    let report: AbuseReport;
    try {
      console.log(`  abusive connections open: ${abuser.opened}; agent RSS ${rssBefore} -> ${rssKb()} kB`);
      assert.ok(abuser.opened >= (IDLE + SLOW + HALF_OPEN) * 0.9, `only ${abuser.opened} abusive connections came up`);
      // The controller: one request at a time on a kept-alive connection, as
      // Octavia's driver sends them (a requests.Session); a new one when the server closed it.
      const until = Date.now() + CONTROLLER_MS;
      for (let i = 0; i < CONTROLLER_REQUESTS || Date.now() < until; i++) {
        await sleep(20);
        const started = performance.now();
        const path = i % 10 === 0 ? '/1.0/details' : '/1.0/info';
        try {
          const r = await apiRequest(agent, 'GET', path, { connection });
          if (r.status !== 200 || !r.json) failures.push(`${path}: ${r.status} ${r.text.slice(0, 200)}`);
        } catch (err) {
          failures.push(`${path}: ${(err as Error).message}`);
        }
        latencies.push(performance.now() - started);
        byPath.get(path)!.push(latencies[latencies.length - 1]!);
      }
    } finally {
      report = await abuser.stop();
      clearInterval(sampler);
      connection.destroy();
    }
    const stats = (ms: number[]) => {
      const sorted = [...ms].sort((a, b) => a - b);
      return { n: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1]! };
    };
    const show = (what: string, x: ReturnType<typeof stats>) =>
      console.log(`  ${what}: ${x.n} requests, p50 ${x.p50.toFixed(1)} ms, p99 ${x.p99.toFixed(1)} ms, max ${x.max.toFixed(1)} ms`);
    show('controller, all', stats(latencies));
    for (const [path, ms] of byPath) show(`controller, ${path}`, stats(ms));
    console.log(`  flood: ${report.churned} garbage/no-certificate connections`);
    assert.equal(failures, [], 'controller requests failed');
    // The bound, over every controller request. /1.0/details runs
    // `ip -s -j link show` in the namespace, the slowest of them: in a fresh CI
    // run p99 161 ms overall, 309 ms for /1.0/details (1.7 s only with two
    // other test suites sharing the 2 cores).
    const all = stats(latencies);
    assert.ok(all.p99 < 1000, `controller requests p99 ${all.p99.toFixed(1)} ms`);
    assert.ok(all.max < 5000, `a request took ${all.max.toFixed(1)} ms`);
    assert.ok(report.churned >= 500, `the flood made only ${report.churned} connections`);

    // Nobody closed them from the client side: each ended by the server's timeout for its stage.
    assert.equal(report.open, { idle: 0, slow: 0, 'half-open': 0 }, 'connections the server never closed');
    const limits: [AbuseKind, number][] = [
      ['idle', API_LIMITS.firstRequestTimeoutMs],
      ['slow', API_LIMITS.headersTimeoutMs],
      ['half-open', API_LIMITS.handshakeTimeoutMs],
    ];
    for (const [kind, limit] of limits) {
      const lives = [...report.lives[kind]].sort((a, b) => a - b);
      console.log(`  ${kind}: ${lives.length} closed by the server after ${lives[0]}..${lives[lives.length - 1]} ms (limit ${limit} ms)`);
      assert.ok(lives[lives.length - 1]! <= limit + MARGIN_MS, `${kind}: open ${lives[lives.length - 1]} ms, past ${limit} + ${MARGIN_MS} ms`);
      // Closed by that timeout, not by something sooner (an error, the cap on connections).
      assert.ok(lives[0]! >= limit - 1000, `${kind}: one closed after ${lives[0]} ms, before its ${limit} ms timeout`);
    }
    const rssAfter = rssKb();
    console.log(`  agent RSS: ${rssBefore} kB before, ${rssPeak} kB peak, ${rssAfter} kB after`);
    assert.ok(rssPeak < 2 * rssBefore + 50 * 1024, `RSS peak ${rssPeak} kB from ${rssBefore} kB`);
    assert.is((await apiRequest(agent, 'GET', '/1.0/info')).status, 200);
  },
);

t('100 concurrent controller requests: info, details and config uploads (one of 1.2 MB) all answered correctly', async () => {
  const lbs = Array.from({ length: 10 }, (_, i) => `lb-abuse-${i}`);
  const config = (lb: string, members: number) =>
    octaviaStyleConfig({
      lbId: lb,
      baseDir: agent.basePath,
      bind: `${network.nsIp}:${8080 + lbs.indexOf(lb)}`,
      monitor: null,
      members: Array.from({ length: members }, (_, i) => ({ id: `member-${i}`, address: i === 0 ? member.address : `10.99.${i >> 8}.${i & 255}:80` })),
    });
  const configs = new Map(lbs.map((lb, i) => [lb, config(lb, i === 0 ? 26_000 : 20)]));
  const big = configs.get(lbs[0]!)!;
  assert.ok(big.length > 1_000_000, `the big config is ${big.length} bytes`);
  const started = performance.now();
  const replies = await Promise.all(
    Array.from({ length: 100 }, async (_, i) => {
      if (i % 10 === 0) {
        const lb = lbs[i / 10]!;
        const r = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${lb}/haproxy`, {
          raw: configs.get(lb)!,
          headers: { 'Content-Type': 'text/plain' },
        });
        return { what: `upload ${lb}`, ok: r.status === 202, text: `${r.status} ${r.text.slice(0, 200)}` };
      }
      const path = i % 10 === 5 ? '/1.0/details' : '/1.0/info';
      const r = await apiRequest(agent, 'GET', path);
      const ok = r.status === 200 && (path === '/1.0/info' ? typeof r.json?.haproxy_version === 'string' : typeof r.json?.memory === 'object');
      return { what: path, ok, text: `${r.status} ${r.text.slice(0, 200)}` };
    }),
  );
  console.log(`  100 concurrent requests answered in ${(performance.now() - started).toFixed(0)} ms`);
  assert.equal(
    replies.filter((r) => !r.ok).map((r) => `${r.what}: ${r.text}`),
    [],
  );
  for (const lb of lbs) {
    const stored = await apiRequest(agent, 'GET', `/1.0/loadbalancer/${lb}/haproxy`);
    assert.ok(
      stored.text === configs.get(lb),
      `${lb}: the stored config differs from the upload: ${stored.status} ${stored.text.length} bytes against ${configs.get(lb)!.length}`,
    );
  }
});

t.run();
