// Issue 32 §1: no change costs a member being admitted its passed checks. On
// a real agent process and every haproxy version (the gate: 2.6 and 3.4;
// `npm run test:matrix`: all four), a member with 1 of its 2
// checks passed (rise 2) comes UP at its next passed check, not one later,
// across: (a) an API 1.0 removal of another member, (b) API 1.0 reloads (a
// changed certificate; a reload call with nothing changed), (c) an API 2.0
// member call and a whole-spec PUT that changes the listener (a reload),
// (d) a restart of the agent. A member that is UP stays UP through all of
// them: the load sees no failed request.
//
// On schedule, counted in checks rather than time: the member's first
// request comes after its 2nd passed check and before its 3rd. Started
// again from zero (the new worker's checks alone), it would come at the 3rd.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { loud } from '../helpers/hooks.js';
import { HAPROXY_GATE, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { CHECK_PATH, TestBackend } from '../helpers/backend.js';
import { LoadGenerator, waitFor } from '../helpers/load.js';
import { agentHaproxy, restartAgent, startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { apiRequest } from '../helpers/api-client.js';
import { octaviaStyleConfig } from '../helpers/octavia-config.js';
import { testPorts } from '../helpers/ports.js';

const PORTS = testPorts('admission-progress');
/** inter 2 s: room for a change between two checks of the member; fall 1: down at one failed check. */
const MONITOR = { interS: 2, rise: 2, fall: 1 };
const V1 = 'lb-progress-v1';
const V2 = 'lb-progress-v2';
const V2_POOL = 'p-progress';
const V2_PORT = 8081;

HAPROXY_GATE.forEach((h) => {
  const t = suite(`admission progress across changes (${h.label})`);
  const agentPort = PORTS.one();
  const members = ['up', 'half', 'other', 'extra'] as const;
  /** Each load balancer's own backends: a member's checks are counted by the one haproxy that checks it. */
  const ports: Record<string, number[]> = { [V1]: members.map(() => PORTS.one()), [V2]: members.map(() => PORTS.one()) };
  let net: TestNetwork;
  let dir: string;
  let agent: AgentUnderTest;
  const pools: Record<string, Record<(typeof members)[number], TestBackend>> = {};

  const v1Config = (members: TestBackend[], generation = 0) =>
    octaviaStyleConfig({
      lbId: V1,
      baseDir: agent.basePath,
      bind: `${net.nsIp}:8080`,
      monitor: MONITOR,
      generation,
      members: members.map((m) => ({ id: m.name, address: m.address })),
    });
  const v1Apply = async (config: string) => {
    const uploaded = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${V1}/haproxy`, { raw: config });
    assert.is(uploaded.status, 202, uploaded.text);
    const reloaded = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${V1}/reload`);
    assert.is(reloaded.status, 202, reloaded.text);
  };
  const v2Spec = (members: TestBackend[], timeoutClient = 50_000) => ({
    id: V2,
    vip_address: net.nsIp,
    listeners: [
      {
        id: 'l-progress',
        protocol: 'HTTP',
        protocol_port: V2_PORT,
        connection_limit: 1000,
        timeout_client_data: timeoutClient,
        default_pool: {
          id: V2_POOL,
          protocol: 'HTTP',
          lb_algorithm: 'ROUND_ROBIN',
          healthmonitor: { type: 'HTTP', delay: MONITOR.interS, timeout: 1, max_retries: MONITOR.rise, max_retries_down: MONITOR.fall, url_path: CHECK_PATH },
          members: members.map((m) => ({ id: m.name, address: m.host, protocol_port: m.port })),
        },
      },
    ],
  });
  const v2Put = async (members: TestBackend[], timeoutClient?: number) => {
    const r = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${V2}`, { body: v2Spec(members, timeoutClient) });
    assert.ok(r.status === 200 || r.status === 201, r.text);
    return r.json as { result: string };
  };

  /**
   * Takes the load balancer's `half` down, then waits until it has passed
   * exactly 1 of its 2 checks; runs `change`; then asserts it served its
   * first request after its 2nd passed check and before its 3rd, and that
   * `up` kept serving.
   */
  async function keepsProgress(lbId: string, port: number, change: () => Promise<void>): Promise<void> {
    const { server, processes } = agentHaproxy(agent, lbId);
    const half = pools[lbId]!.half;
    await half.setMode('not-ready');
    await waitFor('the member down', async () => (await server(half.name))?.opState === 0, 15_000);
    const load = new LoadGenerator(`http://${net.nsIp}:${port}/`, 100).start();
    try {
      await half.setMode('ready');
      const passedBefore = half.passedChecksAt.length;
      half.firstServedAt = null;
      await waitFor('1 of 2 checks passed', async () => (await server(half.name))?.checkHealth === 1, 10_000, 10);
      const reloadsBefore = (await processes()).reloads;
      await change();
      assert.ok(half.passedChecksAt.length <= passedBefore + 1, 'the change took longer than the check interval: the test proves nothing');
      await waitFor('the member to serve', () => half.firstServedAt !== null, 10_000);
      const second = half.passedChecksAt[passedBefore + 1]!;
      const third = half.passedChecksAt[passedBefore + 2] ?? Number.POSITIVE_INFINITY;
      assert.ok(half.firstServedAt! >= second, 'served before its 2nd passed check');
      assert.ok(
        half.firstServedAt! < third,
        `served at its 3rd passed check: the change reset its progress (${(await processes()).reloads - reloadsBefore} reloads)`,
      );
    } finally {
      await load.stop();
    }
    assert.is(load.failures.length, 0, `failed requests (the UP member stopped serving): ${load.describeFailures()}`);
  }

  t.before(
    loud(async () => {
      net = createTestNetwork();
      dir = await testDir('admission-progress');
      for (const lbId of [V1, V2]) {
        const started = await Promise.all(members.map((name, i) => new TestBackend(name, net.hostIp, ports[lbId]![i]!).start()));
        pools[lbId] = Object.fromEntries(members.map((name, i) => [name, started[i]!])) as (typeof pools)[string];
      }
      agent = await startAgent(h, dir, net.netns, agentPort);
      const [p1, p2] = [pools[V1]!, pools[V2]!];
      await v1Apply(v1Config([p1.up, p1.half, p1.other]));
      await v2Put([p2.up, p2.half, p2.other]);
      for (const lbId of [V1, V2]) {
        const { servers } = agentHaproxy(agent, lbId);
        await waitFor(`${lbId}: members UP`, async () => (await servers()).filter((s) => s.opState === 2).length === 3, 15_000);
      }
    }),
  );

  t.after(async () => {
    await agent?.stop();
    for (const lbId of [V1, V2]) {
      try {
        process.kill(Number(readFileSync(agentHaproxy(agent, lbId).files.pidFile, 'utf8')), 'SIGTERM');
      } catch {
        /* already gone */
      }
    }
    await Promise.all(Object.values(pools).flatMap((p) => Object.values(p).map((b) => b.stop())));
    net?.destroy();
  });

  t('(a) API 1.0: another member removed', async () => {
    const { up, half } = pools[V1]!;
    await keepsProgress(V1, 8080, () => v1Apply(v1Config([up, half])));
  });

  t('(b) API 1.0: a reload after a certificate upload', async () => {
    const { up, half } = pools[V1]!;
    const { processes } = agentHaproxy(agent, V1);
    const reloads = (await processes()).reloads;
    await keepsProgress(V1, 8080, async () => {
      const pem = readFileSync(agent.client.pem, 'utf8');
      const r = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${V1}/certificates/rotated.pem`, { raw: pem });
      assert.is(r.status, 200, r.text);
      await v1Apply(v1Config([up, half]));
    });
    assert.is((await processes()).reloads, reloads + 1, 'the certificate change did not reload: (b) tested nothing');
  });

  t('(b) API 1.0: a reload call with nothing changed, and a listener change', async () => {
    const { up, half } = pools[V1]!;
    await keepsProgress(V1, 8080, () => v1Apply(v1Config([up, half])));
    await keepsProgress(V1, 8080, () => v1Apply(v1Config([up, half], 1)));
  });

  t('(c) API 2.0: a member call, and a whole-spec PUT that changes the listener', async () => {
    const { up, half, other, extra } = pools[V2]!;
    await keepsProgress(V2, V2_PORT, async () => {
      const r = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${V2}/pools/${V2_POOL}/members/extra`, {
        body: { address: extra.host, protocol_port: extra.port },
      });
      assert.is(r.status, 200, r.text);
    });
    await keepsProgress(V2, V2_PORT, async () => {
      assert.is((await v2Put([up, half, other, extra], 40_000)).result, 'reloaded');
    });
  });

  t('(d) an agent restart', async () => {
    for (const [lbId, port] of [
      [V1, 8080],
      [V2, V2_PORT],
    ] as const) {
      await keepsProgress(lbId, port, async () => {
        await agent.stop();
        agent = await restartAgent(agent);
      });
    }
  });

  t.run();
});
