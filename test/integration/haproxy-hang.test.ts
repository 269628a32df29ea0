// A haproxy that answers nothing: stopped by SIGSTOP (master and workers),
// or sockets that accept and never answer (a listener in the test stands in
// for the stats socket and the master CLI at their paths). Heartbeats keep
// reaching Octavia's receiver, the API answers, the direct supervisor does
// not start a second haproxy beside the stopped one, and after SIGCONT (or
// with the real sockets back) everything is as before.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { sleep, waitFor } from '../helpers/load.js';
import { agentHaproxy, startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { testPorts } from '../helpers/ports.js';
import { apiRequest } from '../helpers/api-client.js';
import { HeartbeatReceiver } from '../helpers/heartbeat-receiver.js';
import { statsSocket } from '../../agent/config/layout.js';

const PORTS = testPorts('haproxy-hang');
const AGENT = PORTS.range(HAPROXIES.length);
const BACKEND = PORTS.range(HAPROXIES.length);
const RECEIVER = PORTS.range(HAPROXIES.length);

const LB = 'lb-hang';
const LISTENER = 'l-http';
const PORT = 8080;
const KEY = 'haproxy-hang-key';
const INTERVAL_MS = 1000;
/** How long haproxy stays unresponsive: several heartbeats and watchdog ticks. */
const HUNG_MS = 12_000;
/** "Does not hang": every answer within this (the agent's socket timeouts are 2-5 s). */
const ANSWER_DEADLINE_MS = 10_000;

const READS = [
  '/2.0/loadbalancers/lb-hang/status',
  '/2.0/loadbalancers/lb-hang',
  '/2.0/metrics',
  '/1.0/listeners',
  '/1.0/details',
  '/1.0/info',
  '/1.0/loadbalancer/lb-hang/haproxy',
];

function spec(vip: string, member: TestBackend, connectionLimit = 1000) {
  return {
    id: LB,
    vip_address: vip,
    listeners: [
      {
        id: LISTENER,
        protocol: 'HTTP',
        protocol_port: PORT,
        connection_limit: connectionLimit,
        default_pool: { id: 'p-web', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ id: 'm0', address: member.host, protocol_port: member.port }] },
      },
    ],
  };
}

/** Pids of the haproxy processes running this load balancer's config (a second master would show here). */
function haproxyPids(liveConfig: string): number[] {
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      if (argv.some((a) => a.endsWith('haproxy')) && argv.includes(liveConfig)) pids.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return pids.sort((a, b) => a - b);
}

HAPROXIES.forEach((h, hi) => {
  const t = suite(`a haproxy that answers nothing does not hang the agent (${h.label})`);
  let net: TestNetwork;
  let agent: AgentUnderTest;
  let member: TestBackend;
  let receiver: HeartbeatReceiver;

  const files = () => agentHaproxy(agent, LB).files;
  const listenerOpen = (since: number) => receiver.accepted(since).some((m) => m.listeners[LISTENER]?.status === 'OPEN');

  /** Each read route answers within the deadline; returns the times (ms) by path. */
  async function readsAnswer(when: string): Promise<Record<string, number>> {
    const times: Record<string, number> = {};
    for (const path of READS) {
      const t0 = Date.now();
      const reply = await Promise.race([apiRequest(agent, 'GET', path), sleep(ANSWER_DEADLINE_MS).then(() => null)]);
      times[path] = Date.now() - t0;
      assert.ok(reply, `${when}: GET ${path} did not answer within ${ANSWER_DEADLINE_MS} ms`);
      assert.is(reply!.status, 200, `${when}: GET ${path}: ${reply!.text}`);
    }
    console.log(
      `${h.label} ${when}: ${Object.entries(times)
        .map(([p, ms]) => `${p} ${ms} ms`)
        .join(', ')}`,
    );
    return times;
  }

  /** Heartbeats during `ms`: their arrival times. */
  async function heartbeatsDuring(ms: number): Promise<number[]> {
    const since = Date.now();
    await sleep(ms);
    return receiver.received.filter((r) => r.ok && r.at >= since).map((r) => r.at);
  }

  function assertHeartbeatsFlow(when: string, arrivals: number[], since: number): void {
    const gaps = [arrivals[0]! - since, ...arrivals.slice(1).map((a, i) => a - arrivals[i]!)];
    console.log(`${h.label} ${when}: ${arrivals.length} heartbeats in ${HUNG_MS} ms, longest gap ${Math.max(...gaps)} ms`);
    // One interval plus one stats socket timeout (2 s) is what a beat may take; 3x that is "does not hang".
    assert.ok(arrivals.length >= 3, `${when}: ${arrivals.length} heartbeats in ${HUNG_MS} ms`);
    assert.ok(Math.max(...gaps) < 3 * (INTERVAL_MS + 2000), `${when}: a ${Math.max(...gaps)} ms gap between heartbeats`);
  }

  t.before(
    loud(async () => {
      net = createTestNetwork();
      const dir = await testDir('haproxy-hang');
      member = await new TestBackend('m0', net.hostIp, BACKEND(hi)).start();
      receiver = new HeartbeatReceiver(RECEIVER(hi), KEY);
      await receiver.waitReady();
      agent = await startAgent(h, dir, net.netns, AGENT(hi), [
        `controller_ip_port_list = 127.0.0.1:${receiver.port}`,
        `heartbeat_interval = ${INTERVAL_MS / 1000}`,
        `heartbeat_key = ${KEY}`,
      ]);
      const put = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, { body: spec(net.nsIp, member) });
      assert.is(put.status, 201, put.text);
      await waitFor('the listener OPEN in a heartbeat', () => listenerOpen(0), 15_000);
    }),
  );

  t.after(async () => {
    const pids = agent ? haproxyPids(files().live) : [];
    for (const pid of pids)
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        /* gone */
      }
    await apiRequest(agent, 'DELETE', `/2.0/loadbalancers/${LB}`).catch(() => undefined);
    await agent?.stop();
    for (const pid of pids)
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    receiver?.stop();
    await member?.stop();
    net?.destroy();
  });

  t('SIGSTOP of master and workers: heartbeats go on, reads answer, a write fails fast, no second haproxy; SIGCONT: all normal', async () => {
    const pids = haproxyPids(files().live);
    assert.ok(pids.length >= 2, `haproxy processes: ${pids}`);
    for (const pid of pids) process.kill(pid, 'SIGSTOP');
    try {
      const since = Date.now();
      const arrivals = heartbeatsDuring(HUNG_MS);
      await readsAnswer('stopped');
      const status = (await apiRequest(agent, 'GET', `/2.0/loadbalancers/${LB}/status`)).json;
      assert.is(status.haproxy.running, true, JSON.stringify(status.haproxy));
      assert.is(status.haproxy.stopped_by_signal, true, JSON.stringify(status.haproxy));
      const metrics = (await apiRequest(agent, 'GET', '/2.0/metrics')).text;
      assert.match(metrics, new RegExp(`^amphora_agent_haproxy_stopped_by_signal\\{lb_id="${LB}"\\} 1$`, 'm'));
      // A change cannot reach a stopped master: a clear failure, at once, not a wait for the load timeout.
      const t0 = Date.now();
      const put = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, { body: spec(net.nsIp, member, 900) });
      console.log(`${h.label} stopped: PUT answered ${put.status} in ${Date.now() - t0} ms: ${put.text.slice(0, 200)}`);
      assert.ok(Date.now() - t0 < ANSWER_DEADLINE_MS, `PUT took ${Date.now() - t0} ms`);
      assert.ok(put.status >= 400, put.text);
      assert.match(put.text, /stopped/);
      assertHeartbeatsFlow('stopped', await arrivals, since);
      // Several watchdog ticks have passed: the stopped haproxy is alive, not restarted.
      assert.equal(haproxyPids(files().live), pids, 'the watchdog started another haproxy beside the stopped one');
    } finally {
      for (const pid of pids) process.kill(pid, 'SIGCONT');
    }
    const resumed = Date.now();
    await waitFor('the listener OPEN in a heartbeat after SIGCONT', () => listenerOpen(resumed), 10_000);
    const status = (await apiRequest(agent, 'GET', `/2.0/loadbalancers/${LB}/status`)).json;
    assert.is(status.haproxy.stopped_by_signal, false);
    assert.is(status.listeners[0].operating_status, 'ONLINE');
    const put = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, { body: spec(net.nsIp, member, 900) });
    assert.is(put.status, 200, put.text);
    assert.is(put.json.result, 'reloaded');
  });

  t('stats socket and master CLI that accept and never answer: heartbeats go on, reads answer; the real sockets back: all normal', async () => {
    const paths = [statsSocket(agent.basePath, LB), files().masterSocket];
    const held: Socket[] = [];
    const servers: Server[] = [];
    for (const p of paths) {
      renameSync(p, `${p}.real`);
      const server = createServer({ allowHalfOpen: true }, (c) => {
        held.push(c);
        c.on('error', () => {});
      });
      await new Promise<void>((r) => server.listen(p, r));
      servers.push(server);
    }
    try {
      const since = Date.now();
      const arrivals = heartbeatsDuring(HUNG_MS);
      await readsAnswer('silent sockets');
      assertHeartbeatsFlow('silent sockets', await arrivals, since);
      assert.ok(held.length > 0, 'the agent never connected to the silent sockets');
      const pids = haproxyPids(files().live);
      assert.is(pids.length >= 2, true);
    } finally {
      for (const c of held) c.destroy();
      for (const s of servers) await new Promise((r) => s.close(r));
      for (const p of paths) {
        rmSync(p, { force: true });
        renameSync(`${p}.real`, p);
      }
    }
    const back = Date.now();
    await waitFor('the listener OPEN in a heartbeat with the real sockets', () => listenerOpen(back), 10_000);
    const put = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, { body: spec(net.nsIp, member, 800) });
    assert.is(put.status, 200, put.text);
    assert.is(put.json.result, 'reloaded');
  });

  t.run();
});
