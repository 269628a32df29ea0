// PUT /1.0/config against real Octavia controllers (11, 16, 19) and every
// haproxy of the matrix (issue 26, class 7):
//  - the controller's update_amphora_agent_config (its AgentJinjaTemplater's
//    file, with the amphora's paths) answers 202 {"message": "OK"} as before,
//    its heartbeat options are taken, and what its template never writes
//    (process_manager, network_namespace...) stays the amphora's;
//  - the attack: the same file with config_policy = false, agent_server_cert
//    repointed at a marker and every other kept path repointed outside the
//    agent's directories, then PUT /1.0/certificate. The marker is never
//    written, nothing appears outside, the API's own certificate is renewed,
//    an upload with a program section is still refused by the policy, and the
//    load balancer's files go to the amphora's own directories.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { INTEROP_PAIRS, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { agentHaproxy, startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { apiRequest } from '../helpers/api-client.js';
import { OctaviaPeer } from '../helpers/octavia-peer.js';
import { issue } from '../helpers/certs.js';
import { waitFor } from '../helpers/load.js';
import { testPorts } from '../helpers/ports.js';
import { parseAgentConfig } from '../../agent/config/agent-config.js';

const PORTS = testPorts('config-protected');
const AGENT_PORT = PORTS.range(INTEROP_PAIRS.length);
const LISTENER_PORT = PORTS.range(INTEROP_PAIRS.length);

const LB = '6c0f3e2a-0000-4000-8000-0000000000aa';

/** Replace `key = ...` in the rendered file, or add it to [amphora_agent]. */
function setOption(text: string, key: string, value: string): string {
  const line = new RegExp(`^${key} = .*$`, 'm');
  return line.test(text) ? text.replace(line, `${key} = ${value}`) : text.replace(/^\[amphora_agent\]$/m, `[amphora_agent]\n${key} = ${value}`);
}

INTEROP_PAIRS.forEach(({ haproxy: h, octavia: o }, i) => {
  const t = suite(`${h.label} + ${o.label}: PUT /1.0/config keeps the amphora's security options`);
  let net: TestNetwork;
  let agent: AgentUnderTest;
  let peer: OctaviaPeer;
  let dir: string;
  let ownCert: string;
  let rendered: string;

  t.before(
    loud(async () => {
      net = createTestNetwork();
      dir = await testDir('cfgkeep');
      agent = await startAgent(h, dir, net.netns, AGENT_PORT(i));
      ownCert = /^agent_server_cert = (.+)$/m.exec(readFileSync(agent.configFile, 'utf8'))![1]!;
      // The controller is configured with the paths the amphora booted with, as in a deployment.
      peer = new OctaviaPeer(o);
      const setup = await peer.request('setup', {
        amphora_id: agent.amphoraId,
        lb_network_ip: '127.0.0.1',
        overrides: {
          haproxy_amphora: {
            client_cert: agent.client.pem,
            server_ca: agent.serverCa.cert,
            bind_port: agent.port,
            bind_host: '127.0.0.1',
            base_path: agent.basePath,
            base_cert_dir: agent.certDir,
            connection_max_retries: 3,
            connection_retry_interval: 1,
            haproxy_cmd: h.command.join(' '),
          },
          amphora_agent: { agent_server_ca: agent.clientCa.cert, agent_server_cert: ownCert, agent_server_network_dir: join(dir, 'interfaces') },
          health_manager: { controller_ip_port_list: ['127.0.0.1:9'], heartbeat_key: 'new-key', heartbeat_interval: 7 },
        },
      });
      assert.ok(setup.ok, `setup: ${setup.message}\n${peer.stderr}`);
      const a = await peer.request('agent_config', { topology: 'SINGLE' });
      assert.ok(a.ok, `build_agent_config: ${a.message}`);
      rendered = a.result as string;
    }),
  );

  t.after(async () => {
    peer?.close();
    await agent?.stop();
    net?.destroy();
  });

  t("the controller's file: 202 {message: OK} as before, its heartbeat options taken, the amphora's own options kept", async () => {
    const direct = await apiRequest(agent, 'PUT', '/1.0/config', { raw: rendered });
    assert.is(direct.status, 202, direct.text);
    assert.equal(direct.json, { message: 'OK' });
    const put = await peer.request('driver', { method: 'update_amphora_agent_config', params: [rendered] });
    assert.ok(put.ok, `update_amphora_agent_config: ${put.exception}: ${put.message}`);
    const stored = parseAgentConfig(readFileSync(agent.configFile, 'utf8'));
    assert.is(stored.healthManager.heartbeatKey, 'new-key');
    assert.is(stored.healthManager.heartbeatInterval, 7);
    assert.equal(stored.healthManager.controllerIpPortList, ['127.0.0.1:9']);
    assert.is(stored.amphoraAgent.configPolicy, true);
    assert.is(stored.amphoraAgent.agentServerCert, ownCert);
    // Octavia's template never writes these: before, a PUT reset them to the defaults.
    assert.is(stored.amphoraAgent.processManager, 'direct');
    assert.is(stored.amphoraAgent.networkNamespace, net.netns);
    assert.is(stored.amphoraAgent.systemdUnitDir, join(dir, 'units'));
  });

  t('config_policy off and agent_server_cert repointed, then PUT /1.0/certificate: no marker, nothing outside, the policy still on', async () => {
    const outside = join(dir, 'outside');
    mkdirSync(outside);
    const marker = join(outside, 'marker.pem');
    let evil = rendered;
    for (const [key, value] of Object.entries({
      agent_server_cert: marker,
      base_path: join(outside, 'lib'),
      base_cert_dir: join(outside, 'certs'),
      haproxy_cmd: join(outside, 'haproxy'),
      agent_server_network_dir: join(outside, 'interfaces'),
      agent_server_ca: join(outside, 'ca.pem'),
      config_policy: 'false',
      config_policy_extension: join(outside, 'allow'),
      systemd_unit_dir: join(outside, 'units'),
      user_group_file: join(outside, 'ug.conf'),
      process_manager: 'systemd',
      network_namespace: '',
      heartbeat_key: 'evil-key',
    }))
      evil = setOption(evil, key, value);

    const put = await apiRequest(agent, 'PUT', '/1.0/config', { raw: evil });
    assert.is(put.status, 202, put.text);

    // The certificate goes to the amphora's own server.pem, and the API serves it.
    const renewed = readFileSync(issue(agent.serverCa, 'agent-renewed', { dnsName: agent.amphoraId, usage: 'serverAuth' }).pem, 'utf8');
    const cert = await apiRequest(agent, 'PUT', '/1.0/certificate', { raw: renewed });
    assert.is(cert.status, 202, cert.text);
    assert.not.ok(existsSync(marker), 'PUT /1.0/certificate wrote the marker');
    assert.is(readFileSync(ownCert, 'utf8'), renewed);
    assert.is((await apiRequest(agent, 'GET', '/1.0/info')).status, 200);
    // The answer names what the amphora kept.
    assert.is(put.json.message, 'OK');
    assert.equal([...put.json.kept].sort(), [
      '[amphora_agent] agent_server_ca',
      '[amphora_agent] agent_server_cert',
      '[amphora_agent] agent_server_network_dir',
      '[amphora_agent] config_policy',
      '[amphora_agent] config_policy_extension',
      '[amphora_agent] network_namespace',
      '[amphora_agent] process_manager',
      '[amphora_agent] systemd_unit_dir',
      '[amphora_agent] user_group_file',
      '[haproxy_amphora] base_cert_dir',
      '[haproxy_amphora] base_path',
      '[haproxy_amphora] haproxy_cmd',
    ]);
    assert.match(put.json.details, /kept its own values of .*config_policy/);

    // The policy is still on: a program section is refused, the config itself accepted and run from the agent's own directories.
    const config = await peer.renderConfig({
      lb_id: LB,
      listener_id: `${LB.slice(0, -1)}b`,
      pool_id: `${LB.slice(0, -1)}c`,
      vip: net.nsIp,
      port: LISTENER_PORT(i),
      haproxy_version: h.label.replace('haproxy-', ''),
      members: [],
    });
    const upload = (text: string) => apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${LB}/haproxy`, { raw: text });
    const refused = await upload(`${config}\nprogram pwn\n    command /usr/bin/touch ${join(outside, 'ran')}\n`);
    assert.is(refused.status, 400, `the policy is off: ${refused.status} ${refused.text}`);
    assert.match(String(refused.json?.details), /config policy/);
    const accepted = await upload(config);
    assert.is(accepted.status, 202, accepted.text);
    assert.is((await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/start`)).status, 202);
    await waitFor(
      'haproxy with the uploaded config',
      async () => {
        const r = await apiRequest(agent, 'GET', '/1.0/listeners');
        return r.status === 200 && JSON.stringify(r.json).includes('ACTIVE');
      },
      30_000,
    );
    assert.ok(existsSync(agentHaproxy(agent, LB).files.config), "the config is not in the amphora's base_path");
    const pem = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/certificates/tls.pem`, { raw: renewed });
    assert.is(pem.status, 200, pem.text);
    assert.is(readFileSync(join(agent.certDir, LB, 'tls.pem'), 'utf8'), renewed);

    assert.equal(readdirSync(outside, { recursive: true }), [], "written outside the agent's directories");
    const stored = parseAgentConfig(readFileSync(agent.configFile, 'utf8'));
    assert.is(stored.amphoraAgent.configPolicy, true);
    assert.is(stored.amphoraAgent.agentServerCert, ownCert);
    assert.is(stored.haproxyAmphora.basePath, agent.basePath);
    assert.is(stored.amphoraAgent.networkNamespace, net.netns);
    assert.is(stored.healthManager.heartbeatKey, 'evil-key', 'the options the controller may change are still taken');
    assert.not.match(readFileSync(agent.configFile, 'utf8'), /outside|config_policy/);
  });

  t.run();
});
