// API 2.0's member calls on a real agent process, haproxy in a namespace, on
// every haproxy version: one member put or removed at a time under load,
// through the runtime API (reload counter and worker pid unchanged, 0 failed
// requests), a new member held until its check passes, removal drained, the
// load balancer's ETag and If-Match shared with whole-spec PUTs, the config
// files written after the call (at SIGTERM at the latest, from the spec after
// a SIGKILL), and the journal read back after an agent restart.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { CHECK_PATH, TestBackend } from '../helpers/backend.js';
import { LoadGenerator, sleep, waitFor } from '../helpers/load.js';
import { assertServedWithoutReload, startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { apiRequest } from '../helpers/api-client.js';
import { masterCommand, parseShowProc, workerCommand } from '../../agent/haproxy/process/master-cli.js';
import { parseServerState } from '../../agent/haproxy/config/server-state.js';

const LB = 'lb-members';
const POOL = 'p-web';
const PORT = 8080;

const member = (b: TestBackend, extra: Record<string, unknown> = {}) => ({ address: b.host, protocol_port: b.port, ...extra });

function spec(vip: string, members: { id: string; backend: TestBackend }[]) {
  return {
    id: LB,
    vip_address: vip,
    listeners: [
      {
        id: 'l-http',
        protocol: 'HTTP',
        protocol_port: PORT,
        connection_limit: 1000,
        default_pool: {
          id: POOL,
          protocol: 'HTTP',
          lb_algorithm: 'ROUND_ROBIN',
          healthmonitor: { type: 'HTTP', delay: 1, timeout: 1, max_retries: 2, max_retries_down: 2, url_path: CHECK_PATH },
          members: members.map((m) => ({ id: m.id, ...member(m.backend) })),
        },
      },
    ],
  };
}

HAPROXIES.forEach((h, hi) => {
  const t = suite(`API 2.0 member calls (${h.label})`);
  let net: TestNetwork;
  let dir: string;
  let agent: AgentUnderTest;
  const backends: TestBackend[] = [];
  const basePort = 18900 + hi * 20;
  const agentPort = 19883 + hi;

  const masterSocket = () => join(agent.basePath, LB, 'master.sock');
  const processTable = async () => parseShowProc(await masterCommand(masterSocket(), 'show proc'))!;
  const servers = async () => parseServerState(await workerCommand(masterSocket(), `show servers state ${POOL}:l-http`)).entries;
  const memberPath = (id: string, pool = POOL) => `/2.0/loadbalancers/${LB}/pools/${pool}/members/${id}`;
  const putMember = (id: string, body: unknown, headers: Record<string, string> = {}, query = '') =>
    apiRequest(agent, 'PUT', `${memberPath(id)}${query}`, { body, headers });
  const deleteMember = (id: string, headers: Record<string, string> = {}) => apiRequest(agent, 'DELETE', memberPath(id), { headers });
  const getLb = () => apiRequest(agent, 'GET', `/2.0/loadbalancers/${LB}`);
  const configFile = () => join(agent.basePath, LB, 'haproxy.cfg');

  t.before(
    loud(async () => {
      net = createTestNetwork();
      dir = await testDir('v2-members');
      for (let i = 0; i < 8; i++) backends.push(await new TestBackend(`b${i}`, net.hostIp, basePort + i).start());
      agent = await startAgent(h, dir, net.netns, agentPort);
      const created = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, {
        body: spec(net.nsIp, [
          { id: 'm0', backend: backends[0]! },
          { id: 'm1', backend: backends[1]! },
        ]),
      });
      assert.is(created.status, 201, created.text);
      await waitFor('members UP', async () => (await servers()).filter((s) => s.opState === 2).length === 2, 10_000);
    }),
  );

  t.after(async () => {
    await agent?.stop();
    try {
      process.kill(Number(readFileSync(join(agent.basePath, LB, `${LB}.pid`), 'utf8')), 'SIGTERM');
    } catch {
      /* already gone */
    }
    await Promise.all(backends.map((b) => b.stop()));
    net?.destroy();
  });

  t('add (not ready), weight, admin down and up, remove with a request in flight: runtime only, 0 failed, none served early', async () => {
    const before = await processTable();
    const fresh = backends[2]!;
    await fresh.setMode('not-ready');
    const servedBefore = fresh.requests;
    const load = new LoadGenerator(`http://${net.nsIp}:${PORT}/`, 200).start();
    try {
      const added = await putMember('m2', member(fresh));
      assert.is(added.status, 200, added.text);
      assert.is(added.json.result, 'runtime', added.text);
      assert.equal(added.json.changes, [`member ${POOL}/m2 added`]);
      assert.equal(added.json.runtime, [`add ${POOL}:l-http/m2`]);
      await sleep(2500); // more than rise x inter: a member that slipped through would be UP by now
      assert.not.equal((await servers()).find((s) => s.server === 'm2')?.opState, 2, 'UP while not ready');
      assert.is(fresh.requests, servedBefore, 'requests to the member before it was ready');
      await fresh.setMode('ready');
      await waitFor('m2 UP once ready', async () => (await servers()).find((s) => s.server === 'm2')?.opState === 2, 15_000);

      const weighted = await putMember('m2', member(fresh, { weight: 5 }));
      assert.is(weighted.json.result, 'runtime', weighted.text);
      assert.equal(weighted.json.changes, [`member ${POOL}/m2 changed: weight 1 -> 5`]);
      const down = await putMember('m2', member(fresh, { weight: 5, admin_state_up: false }));
      assert.equal(down.json.runtime, [`admin-down ${POOL}:l-http/m2`]);
      const up = await putMember('m2', member(fresh, { weight: 5 }));
      assert.equal(up.json.runtime, [`admin-up ${POOL}:l-http/m2`]);
      // Back in service only once its checks passed again: UP and out of the agent's hold (admin state 0).
      await waitFor(
        'm2 UP and ready again',
        async () => {
          const m2 = (await servers()).find((s) => s.server === 'm2');
          return m2?.opState === 2 && m2.adminState === 0;
        },
        15_000,
      );

      // The slow request lands on m2 while m0 and m1 weigh 0; they are back before m2 goes.
      for (const [id, b] of [
        ['m0', backends[0]!],
        ['m1', backends[1]!],
      ] as const) {
        assert.equal((await putMember(id, member(b, { weight: 0 }))).json.runtime, [`weight ${POOL}:l-http/${id}`]);
      }
      const slow = fetch(`http://${net.nsIp}:${PORT}/slow/1500`).then(async (r) => ({ status: r.status, member: r.headers.get('x-member') }));
      await sleep(200);
      for (const [id, b] of [
        ['m0', backends[0]!],
        ['m1', backends[1]!],
      ] as const)
        assert.is((await putMember(id, member(b))).json.result, 'runtime');
      const started = Date.now();
      const removed = await deleteMember('m2');
      const took = Date.now() - started;
      assert.is(removed.status, 200, removed.text);
      assert.equal(removed.json.runtime, [`remove ${POOL}:l-http/m2`]);
      assert.equal(await slow, { status: 200, member: 'b2' }, 'the session on the removed member was not cut');
      assert.ok(took >= 800, `the removal waited for the session to end (${took} ms)`);
      assert.equal((await servers()).map((s) => s.server).sort(), ['m0', 'm1']);
      await sleep(300);
    } finally {
      await load.stop();
    }
    assertServedWithoutReload(before, await processTable(), load);
  });

  t('one ETag for member calls and whole-spec PUTs; If-Match; dry run; 404s and 400s', async () => {
    const etag = String((await getLb()).headers.etag);
    const added = await putMember('m3', member(backends[3]!), { 'If-Match': etag });
    assert.is(added.status, 200, added.text);
    const next = String(added.headers.etag);
    assert.is.not(next, etag);
    const got = await getLb();
    assert.is(got.headers.etag, next, "GET has the member call's ETag");
    assert.match(got.json.config, /^ {4}server m3 /m);
    await waitFor('the config on disk', () => readFileSync(configFile(), 'utf8') === got.json.config, 10_000);
    // The same spec through a whole PUT: unchanged, and the same ETag.
    const whole = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, { body: got.json.spec });
    assert.is(whole.json.result, 'unchanged', whole.text);
    assert.is(whole.headers.etag, next);
    const stale = await putMember('m4', member(backends[4]!), { 'If-Match': etag });
    assert.is(stale.status, 412);
    assert.is(stale.headers.etag, next);
    const staleWhole = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, { body: got.json.spec, headers: { 'If-Match': etag } });
    assert.is(staleWhole.status, 412);

    const before = await servers();
    const dry = await putMember('m4', member(backends[4]!), {}, '?dry_run=true');
    assert.is(dry.json.result, 'dry_run');
    assert.is(dry.json.plan, 'runtime');
    assert.equal(dry.json.runtime, [`add ${POOL}:l-http/m4`]);
    assert.match(dry.json.config, /^ {4}server m4 /m);
    assert.equal(
      (await servers()).map((s) => s.server),
      before.map((s) => s.server),
      'dry_run changed nothing',
    );
    assert.is((await getLb()).headers.etag, next, 'dry_run stored nothing');

    assert.is((await putMember('m3', member(backends[3]!))).json.result, 'unchanged');
    assert.is((await apiRequest(agent, 'PUT', memberPath('m9', 'no-pool'), { body: member(backends[4]!) })).status, 404);
    assert.is((await deleteMember('no-member')).status, 404);
    assert.is((await apiRequest(agent, 'PUT', `/2.0/loadbalancers/no-lb/pools/${POOL}/members/m1`, { body: member(backends[4]!) })).status, 404);
    const dup = await putMember('m5', member(backends[0]!));
    assert.is(dup.status, 400);
    assert.match(dup.json.problems.join(), /already member "m0"/);
    const bad = await putMember('m5', { address: 'not-an-ip', protocol_port: 80 });
    assert.is(bad.status, 400);
    assert.match(bad.json.problems.join(), /^address: /);
  });

  t('concurrent member calls and a whole-spec PUT: one consistent spec, config and haproxy', async () => {
    const calls = [4, 5, 6, 7].map((i) => putMember(`c${i}`, member(backends[i]!, { weight: 3 })));
    const wholeSpec = (await getLb()).json.spec;
    wholeSpec.listeners[0].default_pool.members[0].weight = 9;
    const whole = apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, { body: wholeSpec });
    const replies = await Promise.all([...calls, whole]);
    assert.ok(
      replies.every((r) => r.status === 200),
      replies.map((r) => `${r.status} ${r.text}`).join('\n'),
    );
    const final = await getLb();
    const stored = (final.json.spec.listeners[0].default_pool.members as { id: string; weight: number }[]).map((m) => `${m.id}:${m.weight}`).sort();
    const running = (await servers()).map((s) => `${s.server}:${s.raw.split(/\s+/)[7]}`).sort();
    assert.equal(running, stored, 'haproxy runs the stored spec');
    // A member call's config files follow it (deferred-config.ts): within the delay, then no marker is left.
    await waitFor('the config on disk', () => readFileSync(configFile(), 'utf8') === final.json.config, 10_000);
    await waitFor('no config.behind', () => !existsSync(join(agent.basePath, LB, 'config.behind')), 10_000);
  });

  t('config files held by member calls: written at SIGTERM; after SIGKILL, written from the spec at start', async () => {
    const behind = join(agent.basePath, LB, 'config.behind');
    const hold = async () => {
      await agent.stop();
      // Held for an hour: nothing but the agent's exit or its next start writes them.
      agent = await startAgent(h, dir, net.netns, agentPort, undefined, ['member_config_write_delay_ms = 3600000']);
    };
    await hold();
    const termed = await putMember('held-term', { address: net.hostIp, protocol_port: 65001, weight: 4 });
    assert.is(termed.json.result, 'runtime', termed.text);
    assert.ok(existsSync(behind), 'the marker is on disk before the call answers');
    assert.not.match(readFileSync(configFile(), 'utf8'), /server held-term /);
    await agent.stop();
    assert.match(readFileSync(configFile(), 'utf8'), /server held-term /, 'written at SIGTERM');
    assert.not.ok(existsSync(behind));

    agent = await startAgent(h, dir, net.netns, agentPort, undefined, ['member_config_write_delay_ms = 3600000']);
    const killed = await putMember('held-kill', { address: net.hostIp, protocol_port: 65002, weight: 5 });
    assert.is(killed.json.result, 'runtime', killed.text);
    assert.not.match(readFileSync(configFile(), 'utf8'), /server held-kill /);
    agent.process.kill('SIGKILL');
    await agent.stop();
    assert.ok(existsSync(behind));
    agent = await startAgent(h, dir, net.netns, agentPort);
    const got = await getLb();
    assert.match(readFileSync(configFile(), 'utf8'), /server held-kill /, 'written from the spec at start');
    assert.is(got.json.config, readFileSync(configFile(), 'utf8'));
    assert.not.ok(existsSync(behind));
    const running = (await servers()).map((s) => s.server);
    assert.ok(running.includes('held-kill') && running.includes('held-term'), running.join());
    assert.is((await deleteMember('held-term')).json.result, 'runtime');
    assert.is((await deleteMember('held-kill')).json.result, 'runtime');
  });

  t('after an agent restart the journal gives back the spec and ETag; the next member call is runtime', async () => {
    const before = await getLb();
    await agent.stop();
    agent = await startAgent(h, dir, net.netns, agentPort);
    const after = await getLb();
    assert.is(after.headers.etag, before.headers.etag);
    assert.equal(after.json.spec, before.json.spec);
    const added = await putMember('after-restart', { address: net.hostIp, protocol_port: 65000, weight: 2 }, { 'If-Match': String(after.headers.etag) });
    assert.is(added.json.result, 'runtime', added.text);
    const removed = await deleteMember('after-restart');
    assert.is(removed.json.result, 'runtime', removed.text);
    const del = await apiRequest(agent, 'DELETE', `/2.0/loadbalancers/${LB}`);
    assert.is(del.status, 204);
  });

  t.run();
});
