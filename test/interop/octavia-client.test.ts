// Interop: an unmodified Octavia controller client (python3-octavia's
// AmphoraAPIClient1_0, configured through oslo.config as a worker is) drives
// the agent through a realistic lifecycle, with configs rendered by Octavia's
// JinjaTemplater, while real haproxy serves traffic through them.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loud } from '../helpers/hooks.js';
import { createHash } from 'node:crypto';
import https from 'node:https';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INTEROP_PAIRS, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { LoadGenerator, sleep, waitFor } from '../helpers/load.js';
import { agentHaproxy, startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { testPorts } from '../helpers/ports.js';
import { apiRequest } from '../helpers/api-client.js';
import { OctaviaPeer } from '../helpers/octavia-peer.js';
import { issue, makeCa } from '../helpers/certs.js';
import { currentWorker } from '../../agent/haproxy/process/master-cli.js';

const PORTS = testPorts('octavia-client');
const AGENT = PORTS.range(INTEROP_PAIRS.length);
const [M1, M2, M3, M4, M5] = [PORTS.one(), PORTS.one(), PORTS.one(), PORTS.one(), PORTS.one()];
const MONITOR = { delay: 1, timeout: 1, fall: 2, rise: 2, path: '/healthz' };

const LB = '6f0cd6c0-0000-4000-8000-0000000000aa';
const LISTENER = '6f0cd6c0-0000-4000-8000-0000000000bb';
const POOL = '6f0cd6c0-0000-4000-8000-0000000000cc';
const TLS_LISTENER = '6f0cd6c0-0000-4000-8000-0000000000dd';
const TLS_POOL = '6f0cd6c0-0000-4000-8000-0000000000ee';
const md5 = (s: string) => createHash('md5').update(s).digest('hex');

INTEROP_PAIRS.forEach(({ haproxy: h, octavia: release }, i) => {
  const t = suite(`Octavia controller client (${release.label}, ${h.label})`);
  let net: TestNetwork;
  let agent: AgentUnderTest;
  let peer: OctaviaPeer;
  let members: TestBackend[];
  let haproxyVersion = '';
  const url = () => `http://${net.nsIp}:8080/`;
  /** The TLS listener's answer (its certificate is the tenant's, not checked here). */
  const tlsStatus = () =>
    new Promise<number>((resolve) => {
      const req = https.get(`https://${net.nsIp}:8443/`, { rejectUnauthorized: false, timeout: 2000 }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', () => resolve(0));
      req.on('timeout', () => req.destroy());
    });

  /** `options`: a member's weight and admin state, by member name. */
  const render = async (
    list: Pick<TestBackend, 'name' | 'host' | 'port'>[],
    options: Record<string, { weight?: number; enabled?: boolean }> = {},
    monitor = MONITOR,
  ) => {
    return peer.renderConfig({
      lb_id: LB,
      listener_id: LISTENER,
      pool_id: POOL,
      vip: net.nsIp,
      port: 8080,
      haproxy_version: haproxyVersion,
      monitor,
      members: list.map((m) => ({ id: m.name, address: m.host, port: m.port, ...options[m.name] })),
    });
  };

  t.before(
    loud(async () => {
      net = createTestNetwork();
      const dir = await testDir('interop');
      members = await Promise.all([new TestBackend('m1', net.hostIp, M1).start(), new TestBackend('m2', net.hostIp, M2).start()]);
      agent = await startAgent(h, dir, net.netns, AGENT(i));
      // The driver's certificate manager keeps the TLS listener's certificate here (update_lb).
      const certificates = { cert_manager: 'local_cert_manager', storage_path: join(dir, 'cert-store') };
      mkdirSync(certificates.storage_path, { recursive: true });
      peer = await OctaviaPeer.connect(release, agent, '127.0.0.1', { certificates });
    }),
  );

  t.after(async () => {
    peer?.close();
    await agent?.stop();
    await Promise.all((members ?? []).map((m) => m.stop()));
    net?.destroy();
  });

  t('discovery, info and details', async () => {
    const version = (await peer.call('get_api_version')) as { api_version: string };
    assert.is(version.api_version, '1.0');
    const info = (await peer.call('get_info')) as Record<string, string>;
    assert.match(info.haproxy_version!, /^\d+\.\d+/);
    haproxyVersion = info.haproxy_version!.split('.').slice(0, 2).join('.');
    const details = (await peer.call('get_details')) as Record<string, unknown>;
    assert.is(details.cpu_count, (await import('node:os')).cpus().length);
    const memory = details.memory as Record<string, number>;
    assert.ok(memory.free! > 0 && memory.cached! >= 0 && memory.buffers! >= 0);
    assert.type(details.active_tuned_profiles, 'string');
  });

  t('config rendered by JinjaTemplater: upload, reload (starts haproxy), traffic, listeners', async () => {
    await peer.call('upload_config', LB, await render(members));
    await peer.call('reload_listener', LB);
    const load = new LoadGenerator(url(), 100).start();
    await waitFor('traffic through the uploaded config', () => load.records.some((r) => r.status === 200), 10_000);
    await load.stop();
    const listeners = await peer.call('get_all_listeners');
    assert.equal(listeners, [{ status: 'ACTIVE', uuid: LISTENER, type: 'HTTP' }]);
    await peer.call('start_listener', LB);
  });

  t('certificates: upload, md5, delete', async () => {
    const pem = readFileSync(agent.client.pem, 'utf8');
    await peer.call('upload_cert_pem', LB, 'cert-1.pem', pem);
    assert.is(await peer.call('get_cert_md5sum', LB, 'cert-1.pem'), md5(pem));
    assert.ok(existsSync(join(agent.certDir, LB, 'cert-1.pem')));
    await peer.call('delete_cert_pem', LB, 'cert-1.pem');
    assert.is(await peer.call('get_cert_md5sum', LB, 'cert-1.pem', [404]), null);
  });

  t('an invalid config raises the same exception as with the Python agent; traffic keeps flowing', async () => {
    const load = new LoadGenerator(url(), 200).start();
    await sleep(200);
    const exception = await peer.callExpectingError('upload_config', LB, (await render(members)).replace('balance roundrobin', 'balance nonsense'));
    await sleep(200);
    await load.stop();
    assert.is(exception, 'InvalidRequest');
    assert.is(load.failures.length, 0, `failed requests: ${load.describeFailures()}`);
  });

  t('a member added through the controller while not ready receives 0 requests under load, and its first one at its rise-th passed check', async () => {
    const added = await new TestBackend('m3', net.hostIp, M3, 'not-ready').start();
    try {
      const load = new LoadGenerator(url(), 250).start();
      await sleep(300);
      await peer.call('upload_config', LB, await render([...members, added]));
      await peer.call('reload_listener', LB);
      await sleep(3000);
      const whileNotReady = added.requests;
      const passedBefore = added.passedChecksAt.length;
      await added.setMode('ready');
      await waitFor('the added member to serve', () => added.firstServedAt !== null, 6000);
      await sleep(200);
      await load.stop();
      assert.is(whileNotReady, 0, 'requests reached the member before it passed its checks');
      assert.is(load.failures.length, 0, `failed requests: ${load.describeFailures()}`);
      // rise 2: UP at its second passed check, and in before the check after it.
      // How soon after it (haproxy's own admission: a few ms) is bench:admission's figure, not a test's.
      const risen = added.passedChecksAt[passedBefore + MONITOR.rise - 1]!;
      const nextCheck = added.passedChecksAt[passedBefore + MONITOR.rise] ?? risen + MONITOR.delay * 1000;
      assert.ok(added.firstServedAt! >= risen, 'served before its rise-th passed check');
      assert.ok(added.firstServedAt! < nextCheck, `first request ${added.firstServedAt! - risen} ms after its rise-th passed check, after the next check`);
    } finally {
      await added.stop();
    }
  });

  t('member-only changes from the controller reload nothing, a removal included; a changed certificate reloads', async () => {
    const { processes, server } = agentHaproxy(agent, LB);
    // The members the previous test left: m3 (its backend gone) is DOWN.
    const m3 = { name: 'm3', host: net.hostIp, port: M3 };
    const m4 = await new TestBackend('m4', net.hostIp, M4).start();
    const apply = async (list: Pick<TestBackend, 'name' | 'host' | 'port'>[], options = {}) => {
      await peer.call('upload_config', LB, await render(list, options));
      await peer.call('reload_listener', LB);
    };
    const load = new LoadGenerator(url(), 250).start();
    try {
      await sleep(300);
      const before = await processes();
      await apply([...members, m3, m4]);
      await waitFor('m4 to serve', () => m4.firstServedAt !== null, 8000);
      await apply([...members, m3, m4], { m1: { weight: 5 }, m2: { enabled: false } });
      const after = await processes();
      assert.is(after.reloads, before.reloads, 'haproxy reloaded for member-only changes');
      assert.is(currentWorker(after), currentWorker(before));
      assert.is((await server('m1'))!.raw.split(/\s+/)[7], '5', 'm1 runs with weight 5');
      assert.is((await server('m2'))!.adminState & 1, 1, 'm2 is in maintenance');
      const metrics = (await apiRequest(agent, 'GET', '/2.0/metrics')).text;
      assert.match(metrics, /^amphora_agent_runtime_changes_total\{api="1\.0"\} 2$/m);

      await apply([...members, m4], { m1: { weight: 5 }, m2: { enabled: false } });
      assert.is((await processes()).reloads, before.reloads, 'removing m3 reloads nothing');
      // m3 has no session (its backend is gone): haproxy lets it be deleted at the next sweep.
      await waitFor('m3 deleted', async () => (await server('m3')) === undefined, 5000);

      await peer.call('upload_cert_pem', LB, 'client-ca.pem', readFileSync(agent.clientCa.cert, 'utf8'));
      await apply([...members, m4], { m2: { enabled: false } });
      assert.is((await processes()).reloads, before.reloads + 1, 'a weight change after a certificate upload reloads');
      await sleep(300);
    } finally {
      await load.stop();
      await m4.stop();
    }
    assert.is(load.failures.length, 0, `failed requests: ${load.describeFailures()}`);
  });

  t('a removal keeps its promises: the removed member finishes its session, gets no new one, and a member being admitted keeps its passed checks', async () => {
    const { processes, server } = agentHaproxy(agent, LB);
    const [m1, m2] = members as [TestBackend, TestBackend];
    const m5 = await new TestBackend('m5', net.hostIp, M5).start();
    // rise 4: a new member is seen half-way through its admission.
    const monitor = { ...MONITOR, rise: 4 };
    const apply = async (list: TestBackend[]) => {
      await peer.call('upload_config', LB, await render(list, {}, monitor));
      await peer.call('reload_listener', LB);
    };
    try {
      await apply([m1, m2]);
      await waitFor('m1 and m2 UP', async () => (await server('m1'))?.opState === 2 && (await server('m2'))?.opState === 2, 15_000);
      await apply([m1, m2, m5]);
      await waitFor(
        'm5 half-way: a check passed, not yet UP',
        async () => {
          const s = await server('m5');
          return s !== undefined && s.checkHealth >= 1 && s.checkHealth < monitor.rise;
        },
        10_000,
        50,
      );
      const progress = (await server('m5'))!.checkHealth;
      // A session on m1 (weight 1 of 2 UP members: two tries land one there).
      const sessions = [0, 1].map(() => fetch(`${url()}slow/1500`).then(async (r) => ({ status: r.status, member: r.headers.get('x-member') })));
      await sleep(200);
      const before = { processes: await processes(), m1: m1.requests };
      await apply([m2, m5]);

      assert.is((await processes()).reloads, before.processes.reloads, 'the removal reloaded haproxy');
      assert.ok((await server('m5'))!.checkHealth >= progress, `m5 lost its passed checks: ${progress} -> ${(await server('m5'))!.checkHealth}`);
      const requests = await Promise.all([0, 1, 2, 3].map(() => fetch(url()).then((r) => r.status)));
      assert.equal(requests, [200, 200, 200, 200]);
      assert.is(m1.requests, before.m1, 'a new request reached the removed member');
      const answered = await Promise.all(sessions);
      assert.ok(
        answered.some((a) => a.member === 'm1'),
        `no session was on m1: ${JSON.stringify(answered)}`,
      );
      assert.ok(
        answered.every((a) => a.status === 200),
        `a session was cut: ${JSON.stringify(answered)}`,
      );
      await waitFor('m1 deleted once its session ended', async () => (await server('m1')) === undefined, 10_000);
      await waitFor('m5 UP', async () => (await server('m5'))?.opState === 2, 15_000);
      assert.is((await processes()).reloads, before.processes.reloads);
    } finally {
      await m5.stop();
    }
  });

  t("Octavia's update_amphora_listeners with a TLS listener: a member change reloads nothing", async () => {
    // As the amphora memory workload drives it (amphora-workload.ts): the
    // driver builds both listeners' configs and the certificate's PEM each
    // time; an unchanged PEM is not uploaded again (its md5 matches). Octavia
    // 19 also renders a TLS session cache sized from the amphora's free
    // memory, another number at each update (runtime-plan.ts).
    const { processes } = agentHaproxy(agent, LB);
    const tenant = issue(makeCa(await testDir('interop-tls'), 'tenant-ca'), 'www', { dnsName: 'www.example.org', usage: 'serverAuth' });
    const [m1, m2] = members as [TestBackend, TestBackend];
    let free = 600_000;
    const update = async (http: TestBackend[]) => {
      free -= 7_000; // each update sees another amount of free memory, as an amphora does
      const answer = await peer.request('update_lb', {
        amp_memory: { free, buffers: 2_000, cached: 40_000 },
        lb_id: LB,
        vip: net.nsIp,
        monitor: MONITOR,
        certificate: readFileSync(tenant.cert, 'utf8'),
        private_key: readFileSync(tenant.key, 'utf8'),
        // Two listeners of 2,000 connections: this machine's open-files limit (20,000) refuses Octavia's default 50,000.
        http: {
          listener_id: LISTENER,
          port: 8080,
          pool_id: POOL,
          connection_limit: 2000,
          members: http.map((m) => ({ id: m.name, address: m.host, port: m.port })),
        },
        https: { listener_id: TLS_LISTENER, port: 8443, pool_id: TLS_POOL, connection_limit: 2000, members: [{ id: 'm2', address: m2.host, port: m2.port }] },
      });
      assert.ok(answer.ok, `update_lb: ${answer.exception}: ${answer.message}\nthe agent's last words:\n${agent.output().slice(-4000)}`);
    };
    await update([m1, m2]);
    await waitFor('the TLS listener to serve', async () => (await tlsStatus()) === 200, 15_000);
    const before = await processes();
    // A new member, not m1 again: Octavia never gives a member's id to another, and
    // m1, retired, may still be in haproxy (its re-add would be refused and reload).
    const m6 = await new TestBackend('m6', net.hostIp, M4).start();
    try {
      await update([m2]);
      await update([m2, m6]);
    } finally {
      await m6.stop();
    }
    const why = agent
      .output()
      .split('\n')
      .filter((l) => l.includes('reloading haproxy'))
      .at(-1);
    assert.is((await processes()).reloads, before.reloads, `a member change through update_amphora_listeners reloaded haproxy: ${why}`);
  });

  t('agent config update and server certificate rotation', async () => {
    const conf = readFileSync(agent.configFile, 'utf8').replace('controller_ip_port_list =', 'controller_ip_port_list = 127.0.0.1:5555');
    await peer.call('update_agent_config', conf);
    assert.match(readFileSync(agent.configFile, 'utf8'), /controller_ip_port_list = 127\.0\.0\.1:5555/);
    const rotated = issue(agent.serverCa, 'agent-rotated', { dnsName: agent.amphoraId, usage: 'serverAuth' });
    await peer.call('update_cert_for_rotation', readFileSync(rotated.pem, 'utf8'));
    // The next connection is served with the new certificate (and still verifies).
    const info = (await peer.call('get_info')) as Record<string, string>;
    assert.match(info.haproxy_version!, /^\d+\.\d+/);
  });

  t('delete: haproxy stops, the load balancer and its certificates are gone', async () => {
    await peer.call('upload_cert_pem', LB, 'cert-2.pem', readFileSync(agent.client.pem, 'utf8'));
    await peer.call('delete_listener', LB);
    assert.equal(await peer.call('get_all_listeners'), []);
    assert.not.ok(existsSync(agentHaproxy(agent, LB).files.dir));
    assert.not.ok(existsSync(join(agent.certDir, LB)));
    const res = await fetch(url()).then(
      () => 'answered',
      () => 'refused',
    );
    assert.is(res, 'refused');
    await peer.call('delete_listener', LB);
  });

  t.run();
});
