// API 2.0 on a real agent process, haproxy in a namespace, on both haproxy
// versions: specs in, member changes through the runtime API without reloads
// (reload counter and worker pid unchanged) and without failed requests,
// protection of members added at runtime, ETags, concurrent writers, restart.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { CHECK_PATH, TestBackend } from '../helpers/backend.js';
import { LoadGenerator, sleep, waitFor } from '../helpers/load.js';
import { agentHaproxy, assertServedWithoutReload, startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { testPorts } from '../helpers/ports.js';
import { apiRequest } from '../helpers/api-client.js';
import { openApiDocument } from '../../agent/api/v2/openapi.js';

const PORTS = testPorts('api-v2');
const AGENT = PORTS.range(HAPROXIES.length);
const BACKENDS = HAPROXIES.map(() => PORTS.range(12));

const LB = 'lb-v2';
const PORT = 8080;

interface Member {
  id: string;
  backend: TestBackend;
  weight?: number;
  admin_state_up?: boolean;
}

function spec(vip: string, members: Member[], extra: { timeout_client_data?: number } = {}) {
  return {
    id: LB,
    vip_address: vip,
    listeners: [
      {
        id: 'l-http',
        protocol: 'HTTP',
        protocol_port: PORT,
        connection_limit: 1000,
        ...extra,
        default_pool: {
          id: 'p-web',
          protocol: 'HTTP',
          lb_algorithm: 'ROUND_ROBIN',
          healthmonitor: { type: 'HTTP', delay: 1, timeout: 1, max_retries: 2, max_retries_down: 2, url_path: CHECK_PATH },
          members: members.map((m) => ({
            id: m.id,
            address: m.backend.host,
            protocol_port: m.backend.port,
            ...(m.weight !== undefined ? { weight: m.weight } : {}),
            ...(m.admin_state_up !== undefined ? { admin_state_up: m.admin_state_up } : {}),
          })),
        },
      },
    ],
  };
}

HAPROXIES.forEach((h, hi) => {
  const t = suite(`API 2.0 (${h.label})`);
  let net: TestNetwork;
  let dir: string;
  let agent: AgentUnderTest;
  const backends: TestBackend[] = [];
  const backendPort = BACKENDS[hi]!;

  const processTable = () => agentHaproxy(agent, LB).processes();
  const servers = () => agentHaproxy(agent, LB).servers('p-web:l-http');
  const put = (body: unknown, headers: Record<string, string> = {}, query = '') =>
    apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}${query}`, { body, headers });
  const backend = (i: number) => backends[i]!;

  t.before(
    loud(async () => {
      net = createTestNetwork();
      dir = await testDir('v2');
      for (let i = 0; i < 12; i++) backends.push(await new TestBackend(`b${i}`, net.hostIp, backendPort(i)).start());
      agent = await startAgent(h, dir, net.netns, AGENT(hi));
    }),
  );

  t.after(async () => {
    await agent?.stop();
    // haproxy outlives the agent (direct supervision); the last test deletes
    // the load balancer, but a failed run may leave it running.
    try {
      process.kill(Number(readFileSync(agentHaproxy(agent, LB).files.pidFile, 'utf8')), 'SIGTERM');
    } catch {
      /* already gone */
    }
    await Promise.all(backends.map((b) => b.stop()));
    net?.destroy();
  });

  t('PUT creates the load balancer (201, ETag); GET returns spec, ETag and config; the spec is checked', async () => {
    const created = await put(
      spec(net.nsIp, [
        { id: 'm0', backend: backend(0) },
        { id: 'm1', backend: backend(1) },
      ]),
    );
    assert.is(created.status, 201, created.text);
    assert.is(created.json.result, 'started');
    assert.ok(created.headers.etag);
    const got = await apiRequest(agent, 'GET', `/2.0/loadbalancers/${LB}`);
    assert.is(got.status, 200);
    assert.is(got.headers.etag, created.headers.etag);
    assert.is(got.json.spec.id, LB);
    assert.match(got.json.config, /^backend p-web:l-http$/m);
    await waitFor('members UP', async () => (await servers()).filter((s) => s.opState === 2).length === 2, 10_000);

    const bad = await put({ ...spec(net.nsIp, []), listeners: [{ id: 'l', protocol: 'HTTP', protocol_port: 70000 }] });
    assert.is(bad.status, 400);
    assert.equal(bad.json.problems, ['listeners[0].protocol_port: must be <= 65535']);
    const other = await apiRequest(agent, 'PUT', '/2.0/loadbalancers/other-lb', { body: spec(net.nsIp, []) });
    assert.is(other.status, 400);
    assert.match(other.json.message, /is not the load balancer in the path/);
    const notJson = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, { raw: '{"id": ' });
    assert.is(notJson.status, 400);
    assert.is(notJson.json.error, 'invalid_json');
  });

  t('the same spec again is "unchanged"; dry_run plans without touching haproxy', async () => {
    const current = spec(net.nsIp, [
      { id: 'm0', backend: backend(0) },
      { id: 'm1', backend: backend(1) },
    ]);
    const again = await put(current);
    assert.is(again.status, 200);
    assert.is(again.json.result, 'unchanged');
    const before = await processTable();
    const dry = await put(spec(net.nsIp, [{ id: 'm0', backend: backend(0) }]), {}, '?dry_run=true');
    assert.is(dry.json.result, 'dry_run');
    assert.is(dry.json.plan, 'runtime');
    assert.equal(dry.json.runtime, ['remove p-web:l-http/m1']);
    assert.not.match(dry.json.config, /server m1 /);
    assert.is((await servers()).length, 2, 'dry_run changed nothing');
    assert.equal(await processTable(), before);
    const dryReload = await put(spec(net.nsIp, [{ id: 'm0', backend: backend(0) }], { timeout_client_data: 9000 }), {}, '?dry_run=true');
    assert.is(dryReload.json.plan, 'reload');
  });

  t('20 rounds of add / weight / admin down / remove under load: 0 failed requests, 0 reloads', async () => {
    const base: Member[] = [
      { id: 'm0', backend: backend(0) },
      { id: 'm1', backend: backend(1) },
    ];
    const before = await processTable();
    const load = new LoadGenerator(`http://${net.nsIp}:${PORT}/`, 200).start();
    try {
      for (let round = 0; round < 20; round++) {
        const extra = backend(2 + (round % 4));
        const id = `r${round}`;
        const steps: Member[][] = [
          [...base, { id, backend: extra }],
          [...base.map((m) => (m.id === 'm0' ? { ...m, weight: 2 + (round % 5) } : m)), { id, backend: extra }],
          [...base, { id, backend: extra, admin_state_up: false }],
          base,
        ];
        for (const members of steps) {
          const res = await put(spec(net.nsIp, members));
          assert.is(res.status, 200, res.text);
          assert.is(res.json.result, 'runtime', `round ${round}: ${res.text}`);
        }
      }
    } finally {
      await load.stop();
    }
    assertServedWithoutReload(before, await processTable(), load);
    assert.equal((await servers()).map((s) => s.server).sort(), ['m0', 'm1']);
    const metrics = await apiRequest(agent, 'GET', '/2.0/metrics');
    assert.match(metrics.text, /^amphora_agent_runtime_changes_total\{api="2\.0"\} (8\d|9\d|\d{3,})$/m);
  });

  t('rolling replacement of 4 members, each new one not ready for 3 s: 0 failed requests, none served early', async () => {
    const olds: Member[] = [6, 7, 8, 9].map((i) => ({ id: `old${i}`, backend: backend(i) }));
    let current = [...olds];
    let res = await put(spec(net.nsIp, current));
    assert.ok(['runtime', 'reloaded'].includes(res.json.result), res.text);
    await waitFor('old members UP', async () => (await servers()).filter((s) => s.opState === 2).length === 4, 10_000);
    const spares = [2, 3, 4, 5].map((i) => backend(i));
    const load = new LoadGenerator(`http://${net.nsIp}:${PORT}/`, 200).start();
    try {
      for (let i = 0; i < 4; i++) {
        const fresh = spares[i]!;
        await fresh.setMode('not-ready');
        const servedBefore = fresh.requests;
        const added: Member = { id: `new${i}`, backend: fresh };
        current = [...current, added];
        res = await put(spec(net.nsIp, current));
        assert.is(res.json.result, 'runtime', res.text);
        const readyAt = Date.now() + 3000;
        let whileNotReady = -1;
        setTimeout(() => {
          whileNotReady = fresh.requests - servedBefore;
          void fresh.setMode('ready');
        }, 3000);
        await waitFor(`new${i} UP`, async () => (await servers()).find((s) => s.server === `new${i}`)?.opState === 2, 15_000);
        assert.ok(Date.now() >= readyAt, `new${i} was UP before it was ready`);
        assert.is(whileNotReady, 0, `new${i} received requests while not ready`);
        current = current.filter((m) => m.id !== olds[i]!.id);
        res = await put(spec(net.nsIp, current));
        assert.is(res.json.result, 'runtime', res.text);
      }
      await sleep(500);
    } finally {
      await load.stop();
    }
    assert.is(load.failures.length, 0, `failed requests: ${load.describeFailures()}`);
    assert.equal((await servers()).map((s) => s.server).sort(), ['new0', 'new1', 'new2', 'new3']);
  });

  t('a removed member is drained first: its slow request completes before it is deleted', async () => {
    const drainee: Member = { id: 'drainee', backend: backend(11) };
    const keep: Member[] = [2, 3, 4, 5].map((i) => ({ id: `new${i - 2}`, backend: backend(i) }));
    let res = await put(spec(net.nsIp, [drainee]));
    assert.is(res.json.result, 'runtime', res.text);
    await waitFor(
      'drainee alone and UP',
      async () => {
        const s = await servers();
        return s.length === 1 && s[0]!.opState === 2;
      },
      15_000,
    );
    const slow = fetch(`http://${net.nsIp}:${PORT}/slow/1500`).then(async (r) => ({ status: r.status, member: r.headers.get('x-member') }));
    await sleep(200);
    const started = Date.now();
    res = await put(spec(net.nsIp, keep));
    const took = Date.now() - started;
    assert.is(res.json.result, 'runtime', res.text);
    assert.equal(await slow, { status: 200, member: 'b11' }, 'the session on the removed member was not cut');
    assert.ok(took >= 1000, `the removal waited for the session to end (${took} ms)`);
    assert.not.ok((await servers()).some((s) => s.server === 'drainee'));
    await waitFor('the kept members UP', async () => (await servers()).filter((s) => s.opState === 2).length === 4, 15_000);
  });

  t('a stale If-Match gets 412; 20 concurrent writers leave one whole spec, on disk and in haproxy', async () => {
    const members = (w: number): Member[] => [2, 3, 4, 5].map((i) => ({ id: `new${i - 2}`, backend: backend(i), weight: w }));
    const got = await apiRequest(agent, 'GET', `/2.0/loadbalancers/${LB}`);
    const etag = String(got.headers.etag);
    const ok = await put(spec(net.nsIp, members(7)), { 'If-Match': etag });
    assert.is(ok.status, 200, ok.text);
    const stale = await put(spec(net.nsIp, members(8)), { 'If-Match': etag });
    assert.is(stale.status, 412);
    assert.is(stale.headers.etag, ok.headers.etag, 'the 412 carries the current ETag');

    const writes = await Promise.all(Array.from({ length: 20 }, (_, i) => put(spec(net.nsIp, members(10 + i)))));
    assert.ok(
      writes.every((w) => w.status === 200),
      writes.map((w) => w.status).join(','),
    );
    const final = await apiRequest(agent, 'GET', `/2.0/loadbalancers/${LB}`);
    const weights = new Set((final.json.spec.listeners[0].default_pool.members as { weight: number }[]).map((m) => m.weight));
    assert.is(weights.size, 1, "the stored spec is one writer's");
    const w = [...weights][0]!;
    const cfg = readFileSync(agentHaproxy(agent, LB).files.config, 'utf8');
    assert.is(cfg, final.json.config);
    assert.is([...cfg.matchAll(/ weight (\d+)/g)].filter((m) => Number(m[1]) !== w).length, 0, "the config on disk is the same writer's");
    const running = await servers();
    assert.ok(
      running.every((e) => e.raw.split(/\s+/)[7] === String(w)),
      `haproxy runs weight ${w}`,
    );
  });

  t("after runtime changes, an agent restart and a reload, haproxy runs exactly the last spec's members", async () => {
    const last: Member[] = [
      { id: 'new0', backend: backend(2) },
      { id: 'new1', backend: backend(3) },
      { id: 'back', backend: backend(10) },
    ];
    const res = await put(spec(net.nsIp, last));
    assert.is(res.json.result, 'runtime', res.text);
    await agent.stop();
    agent = await startAgent(h, dir, net.netns, AGENT(hi));
    const before = await processTable();
    const reload = await put(spec(net.nsIp, last, { timeout_client_data: 40000 }));
    assert.is(reload.json.result, 'reloaded', reload.text);
    assert.ok((await processTable()).reloads > before.reloads);
    await waitFor('members UP after the reload', async () => (await servers()).filter((s) => s.opState === 2).length === 3, 10_000);
    assert.equal((await servers()).map((s) => s.server).sort(), ['back', 'new0', 'new1']);
  });

  t('a member added while not ready, then an agent restart: it still needs its check, and comes UP once ready', async () => {
    const last: Member[] = [
      { id: 'new0', backend: backend(2) },
      { id: 'new1', backend: backend(3) },
      { id: 'back', backend: backend(10) },
    ];
    const late = backend(11);
    await late.setMode('not-ready');
    const before = late.requests;
    // The previous test left timeout_client_data at 40000: keep it, so only members change.
    const keep = { timeout_client_data: 40000 };
    const res = await put(spec(net.nsIp, [...last, { id: 'late', backend: late }], keep));
    assert.is(res.json.result, 'runtime', res.text);
    await agent.stop();
    agent = await startAgent(h, dir, net.netns, AGENT(hi));
    await sleep(2500); // more than rise x inter: a member that slipped through would be UP by now
    assert.not.equal((await servers()).find((s) => s.server === 'late')?.opState, 2, 'UP while not ready');
    // Held down and its check failed (not disabled): the status (and the heartbeat) say ERROR, not OFFLINE.
    const status = await apiRequest(agent, 'GET', `/2.0/loadbalancers/${LB}/status`);
    const lateStatus = status.json.pools
      .flatMap((p: { members: { id: string; operating_status: string }[] }) => p.members)
      .find((m: { id: string }) => m.id === 'late');
    assert.is(lateStatus?.operating_status, 'ERROR', JSON.stringify(lateStatus));
    await late.setMode('ready');
    await waitFor('late UP after the restart', async () => (await servers()).find((s) => s.server === 'late')?.opState === 2, 15_000);
    assert.is(late.requests, before, 'no request before it was ready and UP');
    const back = await put(spec(net.nsIp, last, keep));
    assert.is(back.json.result, 'runtime', back.text);
  });

  t('a UDP listener goes to keepalived LVS: config written and valid; started, or the missing IPVS reported', async () => {
    const last: Member[] = [
      { id: 'new0', backend: backend(2) },
      { id: 'new1', backend: backend(3) },
      { id: 'back', backend: backend(10) },
    ];
    const withUdp = spec(net.nsIp, last) as ReturnType<typeof spec> & { listeners: object[] };
    withUdp.listeners.push({
      id: 'l-dns',
      protocol: 'UDP',
      protocol_port: 5353,
      default_pool: {
        id: 'p-dns',
        protocol: 'UDP',
        lb_algorithm: 'ROUND_ROBIN',
        healthmonitor: { type: 'UDP-CONNECT', delay: 5, timeout: 3, max_retries: 2 },
        members: [{ id: 'd1', address: net.hostIp, protocol_port: 5353 }],
      },
    });
    const before = await apiRequest(agent, 'GET', `/2.0/loadbalancers/${LB}`);
    const res = await put(withUdp);
    const lvsConf = join(agent.basePath, 'lvs', 'octavia-keepalivedlvs-l-dns.conf');
    const ipvs = execFileSync('sh', ['-c', `ip netns exec ${net.netns} ipvsadm -Ln 2>&1 || true`], { encoding: 'utf8' });
    if (/Protocol not available|Can't initialize ipvs/.test(ipvs)) {
      // This kernel has no IP_VS: keepalived exits at once, and the agent says so.
      assert.is(res.status, 500, res.text);
      assert.is(res.json.error, 'keepalived_failed');
      assert.ok(res.json.problems.length > 0, "keepalived's own words are passed on");
      const after = await apiRequest(agent, 'GET', `/2.0/loadbalancers/${LB}`);
      assert.is(after.headers.etag, before.headers.etag, 'a spec that did not apply is not stored');
      assert.not.ok(existsSync(lvsConf), 'the listener of the failed apply is gone');
      assert.equal((await servers()).map((s) => s.server).sort(), ['back', 'new0', 'new1'], 'haproxy kept serving');
      const withoutUdp = await put(spec(net.nsIp, last));
      assert.is(withoutUdp.status, 200, withoutUdp.text);
      assert.equal(withoutUdp.json.lvs, []);
    } else {
      assert.is(res.status, 200, res.text);
      assert.equal(res.json.lvs, ['restarted l-dns']);
      assert.match(readFileSync(lvsConf, 'utf8'), /real_server 10\.\d+\.\d+\.1 5353/);
      const removed = await put(spec(net.nsIp, last));
      assert.equal(removed.json.lvs, ['removed l-dns']);
      assert.not.ok(existsSync(lvsConf));
    }
  });

  t('status follows haproxy; OpenAPI is served and matches docs/openapi-2.0.json; DELETE removes', async () => {
    await backend(10).setMode('not-ready');
    await waitFor(
      'back DOWN in /status',
      async () => {
        const s = await apiRequest(agent, 'GET', `/2.0/loadbalancers/${LB}/status`);
        return s.json.pools[0].members.find((m: { id: string }) => m.id === 'back')?.operating_status === 'ERROR';
      },
      10_000,
    );
    const s = await apiRequest(agent, 'GET', `/2.0/loadbalancers/${LB}/status`);
    assert.equal(s.json.listeners, [{ id: 'l-http', haproxy_status: 'OPEN', operating_status: 'ONLINE' }]);
    assert.is(s.json.pools[0].members.find((m: { id: string }) => m.id === 'new0').operating_status, 'ONLINE');
    await backend(10).setMode('ready');

    const doc = await apiRequest(agent, 'GET', '/2.0/openapi.json');
    assert.equal(doc.json, openApiDocument());
    assert.equal(doc.json, JSON.parse(readFileSync(join(process.cwd(), 'docs', 'openapi-2.0.json'), 'utf8')));

    const del = await apiRequest(agent, 'DELETE', `/2.0/loadbalancers/${LB}`);
    assert.is(del.status, 204);
    assert.is((await apiRequest(agent, 'GET', `/2.0/loadbalancers/${LB}`)).status, 404);
    assert.is((await apiRequest(agent, 'DELETE', `/2.0/loadbalancers/${LB}`)).status, 404);
  });

  t.run();
});
