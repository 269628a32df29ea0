// A haproxy that keeps dying (killed again each time it comes back, as an
// OOM killer would) under the agent's direct supervision: the restarts
// space out instead of one every 2 s tick, /2.0 status and the metrics say
// so, the log has one line per decision, and once the cause is gone the
// load balancer serves again without anyone asking.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { sleep, waitFor } from '../helpers/load.js';
import { agentHaproxy, startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { testPorts } from '../helpers/ports.js';
import { apiRequest } from '../helpers/api-client.js';
import { isProcessAlive } from '../../agent/system/proc.js';
import { DEFAULT_RESTART_POLICY } from '../../agent/haproxy/process/restart-backoff.js';

// bookworm's 2.6 and the image's 3.0: the supervisor does not depend on the version.
const UNDER_TEST = HAPROXIES.slice(0, 2);
const PORTS = testPorts('supervisor-backoff');
const AGENT = PORTS.range(UNDER_TEST.length);
const BACKEND = PORTS.range(UNDER_TEST.length);

const LB = 'lb-crashloop';
const PORT = 8080;
/** How long haproxy is killed again and again. */
const WINDOW_MS = 40_000;
/** The watchdog's period: a supervisor without backoff restarts this often. */
const TICK_MS = 2000;

/** SIGKILL a haproxy master and its workers (its children), as an OOM kill of the lot would. */
function killHaproxy(master: number): void {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${master}/task/${master}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    /* already gone */
  }
  for (const pid of [master, ...children]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

function spec(vip: string, member: TestBackend) {
  return {
    id: LB,
    vip_address: vip,
    listeners: [
      {
        id: 'l-http',
        protocol: 'HTTP',
        protocol_port: PORT,
        connection_limit: 1000,
        default_pool: { id: 'p-web', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ id: 'm0', address: member.host, protocol_port: member.port }] },
      },
    ],
  };
}

/** A metric's value (summed over the series that match `labels`). */
function metric(text: string, name: string, labels: RegExp = /.*/): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`).exec(line);
    if (m && labels.test(m[1] ?? '')) sum += Number(m[2]);
  }
  return sum;
}

UNDER_TEST.forEach((h, hi) => {
  const t = suite(`direct supervisor backs off a haproxy that keeps dying (${h.label})`);
  let net: TestNetwork;
  let agent: AgentUnderTest;
  let member: TestBackend;

  const pidFile = () => agentHaproxy(agent, LB).files.pidFile;
  const masterPid = () => {
    try {
      return Number(readFileSync(pidFile(), 'utf8').trim()) || null;
    } catch {
      return null;
    }
  };
  const status = async () => (await apiRequest(agent, 'GET', `/2.0/loadbalancers/${LB}/status`)).json;
  const metrics = async () => (await apiRequest(agent, 'GET', '/2.0/metrics')).text;
  const serves = async () => {
    try {
      return (await fetch(`http://${net.nsIp}:${PORT}/`, { signal: AbortSignal.timeout(2000) })).status === 200;
    } catch {
      return false;
    }
  };

  t.before(
    loud(async () => {
      net = createTestNetwork();
      const dir = await testDir('supervisor-backoff');
      member = await new TestBackend('m0', net.hostIp, BACKEND(hi)).start();
      agent = await startAgent(h, dir, net.netns, AGENT(hi));
      const put = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, { body: spec(net.nsIp, member) });
      assert.is(put.status, 201, put.text);
      await waitFor('the load balancer to serve', serves);
    }),
  );

  t.after(async () => {
    await apiRequest(agent, 'DELETE', `/2.0/loadbalancers/${LB}`).catch(() => undefined);
    await agent?.stop();
    const pid = masterPid();
    if (pid) killHaproxy(pid);
    await member?.stop();
    net?.destroy();
  });

  t('restarts space out while haproxy keeps dying; status, metrics and log say so; it serves again once the kills stop', async () => {
    const attemptsBefore = metric(await metrics(), 'amphora_agent_haproxy_restarts_total', new RegExp(LB));
    const logBefore = agent.output().length;
    // Kill every haproxy master and its workers as soon as the master exists.
    const killed = new Set<number>();
    const killedAt: number[] = [];
    let killing = true;
    const killer = (async () => {
      while (killing) {
        const pid = masterPid();
        if (pid && !killed.has(pid) && (await isProcessAlive(pid))) {
          killed.add(pid);
          killedAt.push(Date.now());
          killHaproxy(pid);
        }
        await sleep(20);
      }
    })();
    const started = Date.now();
    let sawWaiting: { state: string; restarts_in_a_row: number; next_restart_in_s: number } | null = null;
    let sawWaitMetric = 0;
    while (Date.now() - started < WINDOW_MS) {
      const s = (await status()).haproxy;
      if (s.restart.state === 'waiting' && s.restart.next_restart_in_s > 0) sawWaiting = s.restart;
      sawWaitMetric = Math.max(sawWaitMetric, metric(await metrics(), 'amphora_agent_haproxy_restart_wait_seconds', new RegExp(LB)));
      await sleep(250);
    }
    killing = false;
    await killer;
    const attempts = metric(await metrics(), 'amphora_agent_haproxy_restarts_total', new RegExp(LB)) - attemptsBefore;
    const tightLoop = Math.floor(WINDOW_MS / TICK_MS);
    const gaps = killedAt.slice(1).map((at, i) => ((at - killedAt[i]!) / 1000).toFixed(1));
    console.log(
      `${h.label}: ${attempts} restart attempts and ${killed.size} masters killed in ${WINDOW_MS / 1000} s (a restart every tick would be ${tightLoop}); s between kills: ${gaps.join(', ')}`,
    );
    assert.ok(attempts >= 3, `only ${attempts} restart attempts: haproxy was not restarted`);
    assert.ok(attempts <= tightLoop / 2, `${attempts} restart attempts in ${WINDOW_MS / 1000} s: no backoff`);
    assert.ok(sawWaiting, '/2.0 status never showed a restart waiting');
    assert.ok(sawWaiting!.restarts_in_a_row >= 1, JSON.stringify(sawWaiting));
    assert.ok(sawWaitMetric > 0, 'amphora_agent_haproxy_restart_wait_seconds never above 0');
    // One log line per decision: each death found, each restart; not one per tick.
    const log = agent.output().slice(logBefore);
    const waits = log.split('\n').filter((l) => /next (restart|attempt) in/.test(l)).length;
    assert.ok(waits >= 1 && waits <= attempts + 1, `${waits} "next restart/attempt in" lines for ${attempts} attempts`);

    // The cause is gone: the next restart (at most the cap away) brings it back, nobody asks.
    const stopped = Date.now();
    await waitFor('haproxy to serve again', serves, DEFAULT_RESTART_POLICY.maxDelayMs + 20_000, 250);
    console.log(`${h.label}: serving again ${((Date.now() - stopped) / 1000).toFixed(1)} s after the kills stopped`);
    const after = (await status()).haproxy;
    assert.is(after.running, true);
    assert.is(after.restart.state, 'running');
    assert.is(metric(await metrics(), 'amphora_agent_haproxy_up', new RegExp(LB)), 1);
  });

  t('a PUT while a restart waits starts haproxy at once and clears the delays', async () => {
    // Up for less than a minute after the crash loop: the next death waits.
    killHaproxy(masterPid()!);
    const waiting = await waitFor(
      'a restart to wait',
      async () => {
        const s = (await status()).haproxy;
        return s.restart.state === 'waiting' && s.restart.next_restart_in_s >= 5 ? s.restart : null;
      },
      10_000,
      100,
    );
    const put = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, { body: spec(net.nsIp, member) });
    assert.is(put.status, 200, put.text);
    assert.is(put.json.result, 'started', `restart was waiting ${waiting.next_restart_in_s} s`);
    assert.ok(await serves());
    await waitFor('the delays to be cleared', async () => (await status()).haproxy.restart.restarts_in_a_row === 0, 5000, 100);
  });

  t.run();
});
