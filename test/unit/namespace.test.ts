// network_namespace = '' (the agent's own): haproxy and keepalived run beside
// the agent, and plugging refuses before any command runs, since a VIP's
// default route, policy rules and firewall would land in the agent's own
// namespace.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { v1ErrorResponse } from '../../agent/api/v1/errors.js';
import { v2ErrorResponse } from '../../agent/api/v2/errors.js';
import { parseAgentConfig } from '../../agent/config/agent-config.js';
import { certificateDir } from '../../agent/config/layout.js';
import { rootLogger } from '../../agent/log.js';
import { amphoraNamespace, bringInterfaces, networkSettings, NoNamespaceError } from '../../agent/net/interfaces.js';
import { plugNetwork, plugVip } from '../../agent/net/plug.js';
import { renderLoadBalancer } from '../../agent/render/render.js';
import { DEFAULT_RENDER_SETTINGS } from '../../agent/render/settings.js';
import { validateSpec } from '../../agent/model/spec/validate.js';

const OWN = parseAgentConfig('[amphora_agent]\nnetwork_namespace =\nagent_server_network_dir = /nonexistent/interfaces\n');
const log = rootLogger.child({ test: 'namespace' });

test('plug vip, plug network and interface up refuse without a namespace, before any command', async () => {
  const settings = { ...networkSettings(OWN), topology: 'SINGLE' as const };
  assert.is(settings.netns, null);
  const vips = [{ ip_address: '203.0.113.1', subnet_cidr: '203.0.113.0/24', gateway: null, host_routes: [] }];
  const refusals = [
    plugVip(settings, { vips, mac: '02:00:00:00:00:01', vrrpIp: null, mtu: null, isSriov: null }, log),
    plugNetwork(settings, { mac: '02:00:00:00:00:02', fixedIps: [], mtu: null, isSriov: null, vip: null }, log),
    bringInterfaces(settings, 'up', 'all'),
  ];
  for (const r of refusals) {
    const err = await r.then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof NoNamespaceError, String(err));
  }
  assert.is(amphoraNamespace(networkSettings(parseAgentConfig(''))), 'amphora-haproxy');
});

test('API 1.0 answers the refusal with 409 and says which option to set; API 2.0 has no such route', () => {
  const err = new NoNamespaceError();
  const out = v1ErrorResponse(err, 'Error plugging VIP');
  assert.is(out.status, 409);
  assert.is((out.body as { message: string }).message, 'No network namespace configured');
  assert.match((out.body as { details: string }).details, /network_namespace/);
  assert.throws(() => v2ErrorResponse(err));
});

test("an LVS config names the namespace keepalived enters, and none when it runs in the agent's", () => {
  const spec = validateSpec({
    id: 'lb',
    vip_address: '203.0.113.1',
    listeners: [
      {
        id: 'u',
        protocol: 'UDP',
        protocol_port: 53,
        default_pool: { id: 'p', protocol: 'UDP', lb_algorithm: 'ROUND_ROBIN', members: [{ id: 'm', address: '192.0.2.1', protocol_port: 53 }] },
      },
    ],
  });
  const lvs = (networkNamespace: string | null) =>
    renderLoadBalancer(spec, { ...DEFAULT_RENDER_SETTINGS, networkNamespace }, { initStateAtStartup: true }).lvsConfigs[0]!.content;
  assert.match(lvs('amphora-haproxy'), /^net_namespace amphora-haproxy$/m);
  const own = lvs(null);
  assert.not.match(own, /net_namespace/);
  assert.is(own, lvs('amphora-haproxy').replace('net_namespace amphora-haproxy\n', ''), 'only that line differs');
});

test("a load balancer's certificates are in <base_cert_dir>/<lb_id>", () => {
  assert.is(certificateDir('/var/lib/octavia/certs', 'lb-1'), '/var/lib/octavia/certs/lb-1');
});

test.run();
