// Interop: the controllers of newer Octavia releases (16, trixie's; 19, sid's)
// drive the agent as test/interop/octavia-client.test.ts drives it with 11's:
// their own JinjaTemplater renders the configs (16: option httpchk with the
// Host header hidden in the version, which the agent translates for haproxy
// 2.7+; 19: http-check send hdr Host), their AmphoraAPIClient1_0 uploads and
// reloads. A member added while not ready receives no request before its
// check passes, and member-only changes go through the runtime API (the
// master's reload counter and worker PID do not move).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, OCTAVIAS, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { LoadGenerator, sleep, waitFor } from '../helpers/load.js';
import { agentHaproxy, startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { testPorts } from '../helpers/ports.js';
import { apiRequest } from '../helpers/api-client.js';
import { OctaviaPeer } from '../helpers/octavia-peer.js';
import { currentWorker } from '../../agent/haproxy/process/master-cli.js';

const PORTS = testPorts('octavia-releases');
const AGENT = PORTS.range(16);
const [M1, M2, M3] = [PORTS.range(16), PORTS.range(16), PORTS.range(16)];

const RUN_ON = ['haproxy-3.0', 'haproxy-3.4'];
const RELEASES = OCTAVIAS.filter((o) => ['octavia-16', 'octavia-19'].includes(o.label));
/** What each release renders for an HTTP/1.1 monitor with a domain name. */
const MONITOR_FORM: Record<string, RegExp> = {
  'octavia-16': /^\s*option httpchk GET \/healthz HTTP\/1\.1\\r\\nHost:\\ health\.example\.test$/m,
  'octavia-19': /^\s*option httpchk GET \/healthz HTTP\/1\.1\n\s*http-check send hdr Host health\.example\.test$/m,
};

HAPROXIES.filter((h) => RUN_ON.includes(h.label)).forEach((h, i) => {
  RELEASES.forEach((release, r) => {
    const t = suite(`Octavia ${release.label.split('-')[1]} controller client and templater (${h.label})`);
    const slot = 2 * i + r;
    const lb = `6f0cd6c0-0000-4000-8000-0000000002${slot}a`;
    let net: TestNetwork;
    let agent: AgentUnderTest;
    let peer: OctaviaPeer;
    let members: TestBackend[];
    let haproxyVersion = '';
    const url = () => `http://${net.nsIp}:8080/`;
    const render = async (list: Pick<TestBackend, 'name' | 'host' | 'port'>[], options: Record<string, { weight?: number; enabled?: boolean }> = {}) => {
      return peer.renderConfig({
        lb_id: lb,
        listener_id: `${lb.slice(0, -1)}b`,
        pool_id: `${lb.slice(0, -1)}c`,
        vip: net.nsIp,
        port: 8080,
        haproxy_version: haproxyVersion,
        monitor: { delay: 1, timeout: 1, fall: 2, rise: 2, path: '/healthz', http_version: 1.1, domain_name: 'health.example.test' },
        members: list.map((m) => ({ id: m.name, address: m.host, port: m.port, ...options[m.name] })),
      });
    };
    const apply = async (list: Pick<TestBackend, 'name' | 'host' | 'port'>[], options = {}) => {
      await peer.call('upload_config', lb, await render(list, options));
      await peer.call('reload_listener', lb);
    };
    const processes = () => agentHaproxy(agent, lb).processes();
    const server = (name: string) => agentHaproxy(agent, lb).server(name);

    t.before(
      loud(async () => {
        net = createTestNetwork();
        const dir = await testDir('releases');
        members = await Promise.all([new TestBackend('m1', net.hostIp, M1(slot)).start(), new TestBackend('m2', net.hostIp, M2(slot)).start()]);
        agent = await startAgent(h, dir, net.netns, AGENT(slot));
        peer = await OctaviaPeer.connect(release, agent);
        const info = (await peer.call('get_info')) as Record<string, string>;
        haproxyVersion = info.haproxy_version!.split('.').slice(0, 2).join('.');
      }),
    );

    t.after(async () => {
      peer?.close();
      await agent?.stop();
      await Promise.all((members ?? []).map((m) => m.stop()));
      net?.destroy();
    });

    t('upload and reload start haproxy; the health check sends the Host header', async () => {
      const text = await render(members);
      assert.match(text, MONITOR_FORM[release.label]!);
      await apply(members);
      await waitFor(
        'traffic through the uploaded config',
        () =>
          fetch(url()).then(
            (res) => res.status === 200,
            () => false,
          ),
        10_000,
      );
      const before = members.map((m) => m.checks);
      await waitFor('a check on each member', () => members.every((m, k) => m.checks > before[k]!), 8000);
      for (const m of members) assert.equal(m.lastCheck, { requestLine: 'GET /healthz HTTP/1.1', host: 'health.example.test' });
      const stored = await apiRequest(agent, 'GET', `/1.0/loadbalancer/${lb}/haproxy`);
      assert.match(stored.text, MONITOR_FORM[release.label]!, 'GET returns the config as uploaded');
    });

    t('a member added while not ready receives 0 requests under load; member-only changes reload nothing', async () => {
      const added = await new TestBackend('m3', net.hostIp, M3(slot), 'not-ready').start();
      const load = new LoadGenerator(url(), 250).start();
      try {
        await sleep(300);
        const before = await processes();
        await apply([...members, added]);
        // Its checks go on and fail while the load runs.
        const checks = added.checks;
        await waitFor('three failed checks on the added member', () => added.checks >= checks + 3, 8000);
        const whileNotReady = added.requests;
        await added.setMode('ready');
        await waitFor('the added member to serve', () => added.firstServedAt !== null, 8000);
        assert.is(whileNotReady, 0, 'requests reached the member before it passed its checks');

        await apply([...members, added], { m1: { weight: 5 }, m2: { enabled: false } });
        const after = await processes();
        assert.is(after.reloads, before.reloads, 'haproxy reloaded for member-only changes');
        assert.is(currentWorker(after), currentWorker(before), 'the same worker serves');
        assert.is((await server('m1'))!.raw.split(/\s+/)[7], '5', 'm1 runs with weight 5');
        assert.is((await server('m2'))!.adminState & 1, 1, 'm2 is in maintenance');
        const metrics = (await apiRequest(agent, 'GET', '/2.0/metrics')).text;
        assert.match(metrics, /^amphora_agent_runtime_changes_total\{api="1\.0"\} 2$/m);
        await sleep(200);
      } finally {
        await load.stop();
        await added.stop();
      }
      assert.is(load.failures.length, 0, `failed requests: ${load.describeFailures()}`);
    });

    t.run();
  });
});
