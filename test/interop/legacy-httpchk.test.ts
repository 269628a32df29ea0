// Interop: Octavia 11's and 16's controller (client + JinjaTemplater) with an
// HTTP health monitor that has an HTTP version. Those releases hide the
// version's headers in `option httpchk`, which haproxy 2.7+ refuses; the agent
// translates it for such binaries (agent/haproxy/config/legacy-httpchk.ts). Checked
// here: the upload is accepted, GET still returns what was uploaded, the
// reload works, the check really sends that request line and Host header, and
// a failing member goes DOWN. On 2.6 nothing is translated.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, OCTAVIAS, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { waitFor } from '../helpers/load.js';
import { agentHaproxy, startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { testPorts } from '../helpers/ports.js';
import { apiRequest } from '../helpers/api-client.js';
import { OctaviaPeer } from '../helpers/octavia-peer.js';
import { haproxyCapabilities } from '../../agent/haproxy/process/capabilities.js';

const PORTS = testPorts('legacy-httpchk');
const [AGENT, M1, M2] = [PORTS.range(HAPROXIES.length), PORTS.range(HAPROXIES.length), PORTS.range(HAPROXIES.length)];

const RUN_ON = ['haproxy-2.6', 'haproxy-3.0', 'haproxy-3.2'];
const RELEASES = OCTAVIAS.filter((o) => ['octavia-11', 'octavia-16'].includes(o.label));
const MONITORS = [
  { name: 'HTTP/1.0', monitor: { http_version: 1.0 }, requestLine: 'GET /healthz HTTP/1.0', host: null },
  {
    name: 'HTTP/1.1 with a domain name',
    monitor: { method: 'POST', http_version: 1.1, domain_name: 'health.example.test' },
    requestLine: 'POST /healthz HTTP/1.1',
    host: 'health.example.test',
  },
];
/** The line Octavia 11 to 16 render: headers hidden behind \r\n in the version word. */
const LEGACY = /^\s*option httpchk \S+ \/healthz HTTP\/1\.[01]\\r\\n/m;

HAPROXIES.filter((h) => RUN_ON.includes(h.label)).forEach((h, i) => {
  const t = suite(`legacy option httpchk from Octavia 11 and 16 (${h.label})`);
  let net: TestNetwork;
  let agent: AgentUnderTest;
  let members: TestBackend[];
  let refusesLegacy = false;
  let haproxyVersion = '';

  t.before(
    loud(async () => {
      net = createTestNetwork();
      const dir = await testDir('httpchk');
      members = await Promise.all([new TestBackend('m1', net.hostIp, M1(i)).start(), new TestBackend('m2', net.hostIp, M2(i)).start()]);
      agent = await startAgent(h, dir, net.netns, AGENT(i));
      const caps = await haproxyCapabilities(h.command, join(dir, 'probe'));
      refusesLegacy = !caps.legacyHttpchkAccepted;
      haproxyVersion = `${caps.major}.${caps.minor}`;
    }),
  );

  t.after(async () => {
    await agent?.stop();
    await Promise.all((members ?? []).map((m) => m.stop()));
    net?.destroy();
  });

  t('the capability probe finds the legacy form refused from haproxy 2.7 on', () => {
    assert.is(refusesLegacy, h.label !== 'haproxy-2.6');
  });

  RELEASES.forEach((release, r) => {
    MONITORS.forEach((m, k) => {
      t(`${release.label}, ${m.name}: upload 202, reload, the check sends ${m.requestLine}, a failing member goes DOWN`, async () => {
        const lb = `6f0cd6c0-0000-4000-8000-0000000001${r}${k}`;
        const peer = await OctaviaPeer.connect(release, agent);
        try {
          const rendered = await peer.request('render', {
            lb_id: lb,
            listener_id: `${lb.slice(0, -2)}bb`,
            pool_id: `${lb.slice(0, -2)}cc`,
            vip: net.nsIp,
            port: 8080,
            haproxy_version: haproxyVersion,
            monitor: { delay: 1, timeout: 1, fall: 2, rise: 2, path: '/healthz', ...m.monitor },
            members: members.map((b) => ({ id: b.name, address: b.host, port: b.port })),
          });
          assert.ok(rendered.ok, `JinjaTemplater: ${rendered.message}`);
          const text = rendered.result as string;
          assert.match(text, LEGACY, `${release.label} no longer renders the legacy form`);
          for (const b of members) await b.setMode('ready');

          // The client raises on anything but 2xx (400 is InvalidRequest).
          await peer.call('upload_config', lb, text);
          const stored = await apiRequest(agent, 'GET', `/1.0/loadbalancer/${lb}/haproxy`);
          assert.is(stored.status, 200);
          assert.match(stored.text, LEGACY, 'GET returns the config as uploaded');
          const live = () => readFileSync(agentHaproxy(agent, lb).files.live, 'utf8');
          await peer.call('reload_listener', lb);
          assert.is(LEGACY.test(live()), !refusesLegacy, 'translated only where haproxy refuses the legacy form');

          const sent = new Map(members.map((b) => [b.name, b.checks]));
          await waitFor('a health check on each member', () => members.every((b) => b.checks > sent.get(b.name)!), 8000);
          for (const b of members) {
            assert.equal(b.lastCheck, { requestLine: m.requestLine, host: m.host }, `the check ${b.name} received`);
          }
          // New members take traffic after `rise` passing checks, not the first one.
          const opState = async (name: string) => (await agentHaproxy(agent, lb).server(name))?.opState;
          await waitFor('both members UP', async () => (await opState('m1')) === 2 && (await opState('m2')) === 2, 8000);
          const res = await fetch(`http://${net.nsIp}:8080/`);
          assert.is(res.status, 200);

          await members[1]!.setMode('not-ready');
          await waitFor('m2 DOWN after failing checks', async () => (await opState('m2')) === 0, 8000);
          assert.is(await opState('m1'), 2, 'm1 stays UP');
        } finally {
          // Also after a failure: a listener left behind would keep checking the members for the next test.
          await peer.call('delete_listener', lb).catch(() => undefined);
          peer.close();
        }
      });
    });
  });

  t.run();
});
