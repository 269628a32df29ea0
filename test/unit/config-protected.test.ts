// PUT /1.0/config: the amphora keeps its own values of the options that name
// programs, secret or trust paths, written directories, the namespace and the
// config policy; the controller's file is taken for everything else.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import ini from 'ini';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAgentConfig } from '../../agent/config/agent-config.js';
import { keepAmphoraValues, OPTION_CLASSES } from '../../agent/config/protected.js';
import { ConfigStore } from '../../agent/config/store.js';

/** The amphora's own file, as its config drive wrote it, plus options this agent adds. */
const OWN = `[DEFAULT]
debug = False
[haproxy_amphora]
base_cert_dir = /var/lib/octavia/certs
base_path = /var/lib/octavia
bind_host = ::
bind_port = 9443
haproxy_cmd = /usr/sbin/haproxy
[health_manager]
controller_ip_port_list = 192.0.2.10:5555
heartbeat_interval = 10
heartbeat_key = old-key
[amphora_agent]
agent_server_ca = /etc/octavia/certs/client_ca.pem
agent_server_cert = /etc/octavia/certs/server.pem
agent_server_network_dir = /etc/octavia/interfaces/
amphora_id = 5a2c0a6e-0000-4000-8000-000000000001
process_manager = direct
network_namespace = amphora-haproxy
systemd_unit_dir = /usr/lib/systemd/system
config_policy_extension = /etc/octavia/policy-extension.conf
[controller_worker]
loadbalancer_topology = SINGLE
`;

/** What Octavia's amphora_agent_conf.template renders from the controller's options (19's shape). */
function controllerFile(over: Record<string, string> = {}): string {
  const v = (k: string, d: string) => over[k] ?? d;
  return `[DEFAULT]
debug = False
use_syslog = True
syslog_log_facility = LOG_LOCAL1

[haproxy_amphora]
base_cert_dir = ${v('base_cert_dir', '/var/lib/octavia/certs')}
base_path = ${v('base_path', '/var/lib/octavia')}
bind_host = ::
bind_port = 9443
haproxy_cmd = ${v('haproxy_cmd', '/usr/sbin/haproxy')}
user_log_facility = 0
administrative_log_facility = 1

[health_manager]
controller_ip_port_list = 192.0.2.20:5555, 192.0.2.21:5555
heartbeat_interval = 3
heartbeat_key = new-key

[amphora_agent]
agent_server_ca = ${v('agent_server_ca', '/etc/octavia/certs/client_ca.pem')}
agent_server_cert = ${v('agent_server_cert', '/etc/octavia/certs/server.pem')}
agent_server_network_dir = /etc/octavia/interfaces/
agent_request_read_timeout = 180
amphora_id = 5a2c0a6e-0000-4000-8000-000000000001
amphora_udp_driver = keepalived_lvs
agent_tls_protocol = TLSv1.2
${over.extra ?? ''}
[controller_worker]
loadbalancer_topology = ACTIVE_STANDBY
`;
}

test('every option agent-config.ts reads is classified, once', () => {
  // Record the keys parseAgentConfig looks up, on every section it reads.
  const read = new Set<string>();
  const parse = ini.parse;
  const recording = (name: string, sec: Record<string, unknown>) =>
    new Proxy(sec, {
      get(target, key) {
        if (typeof key === 'string') read.add(`${name} ${key}`);
        return target[key as string];
      },
    });
  ini.parse = ((text: string) => {
    const doc = parse(text) as Record<string, Record<string, unknown>>;
    return new Proxy(doc, {
      get(target, name) {
        if (typeof name !== 'string') return undefined;
        return recording(name, target[name] ?? {});
      },
    });
  }) as typeof ini.parse;
  try {
    parseAgentConfig('');
  } finally {
    ini.parse = parse;
  }
  const classified = OPTION_CLASSES.map((o) => `${o.section} ${o.key}`);
  assert.is(new Set(classified).size, classified.length, 'an option classified twice');
  assert.equal(
    [...read].filter((k) => !classified.includes(k)),
    [],
    'read but not classified',
  );
  assert.equal(
    classified.filter((k) => !read.has(k)),
    [],
    'classified but not read',
  );
});

test('the kept options: programs, secret, trust and written paths, the namespace, the process manager, the policy', () => {
  const keptOnes = OPTION_CLASSES.filter((o) => o.kept).map((o) => `[${o.section}] ${o.key}`);
  assert.equal(keptOnes.sort(), [
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
    '[haproxy_amphora] user_log_format',
  ]);
  assert.ok(
    OPTION_CLASSES.every((o) => !o.kept || o.value),
    'a kept option without its value to compare',
  );
});

test("the controller's file with the amphora's paths: nothing kept, the heartbeat options taken", () => {
  const m = keepAmphoraValues(OWN, controllerFile());
  assert.equal(m.kept, []);
  assert.equal(m.config.healthManager.controllerIpPortList, ['192.0.2.20:5555', '192.0.2.21:5555']);
  assert.is(m.config.healthManager.heartbeatKey, 'new-key');
  assert.is(m.config.healthManager.heartbeatInterval, 3);
  assert.is(m.config.controllerWorker.loadbalancerTopology, 'ACTIVE_STANDBY');
  // The options Octavia's template never writes are the amphora's, not reset to defaults.
  assert.is(m.config.amphoraAgent.processManager, 'direct');
  assert.is(ini.parse(m.text).amphora_agent.config_policy_extension, '/etc/octavia/policy-extension.conf');
});

test('the attack: config_policy off and agent_server_cert repointed are kept as the amphora has them, and named', () => {
  const m = keepAmphoraValues(OWN, controllerFile({ agent_server_cert: '/etc/cron.d/evil', extra: 'config_policy = false' }));
  assert.equal(m.kept, ['[amphora_agent] agent_server_cert', '[amphora_agent] config_policy']);
  assert.is(m.config.amphoraAgent.configPolicy, true);
  assert.is(m.config.amphoraAgent.agentServerCert, '/etc/octavia/certs/server.pem');
  const stored = parseAgentConfig(m.text);
  assert.is(stored.amphoraAgent.configPolicy, true);
  assert.is(stored.amphoraAgent.agentServerCert, '/etc/octavia/certs/server.pem');
  assert.not.match(m.text, /evil|config_policy\s*=/);
  assert.is(stored.healthManager.heartbeatKey, 'new-key', 'the rest is still taken');
});

test("the controller's file with the amphora's values is stored as sent, byte for byte", () => {
  const own = controllerFile();
  const sent = controllerFile().replace('heartbeat_key = new-key', 'heartbeat_key = newer-key');
  const m = keepAmphoraValues(own, sent);
  assert.is(m.text, sent);
  assert.equal(m.kept, []);
});

test("a file that differs keeps the controller's lines, comments and order; only the kept options' lines change", () => {
  const sent = `# written by the controller\n${controllerFile({ agent_server_cert: '/tmp/evil', extra: 'config_policy = false' })}`;
  const m = keepAmphoraValues(OWN, sent);
  const dropped = ['agent_server_cert = /tmp/evil', 'config_policy = false'];
  const added = [
    'agent_server_cert = /etc/octavia/certs/server.pem',
    'process_manager = direct',
    'network_namespace = amphora-haproxy',
    'systemd_unit_dir = /usr/lib/systemd/system',
    'config_policy_extension = /etc/octavia/policy-extension.conf',
  ];
  const expected = sent.split('\n').filter((l) => !dropped.includes(l));
  assert.equal(
    m.text.split('\n').filter((l) => !added.includes(l)),
    expected,
  );
  assert.is(m.text.indexOf('[amphora_agent]\nagent_server_cert = /etc/octavia/certs/server.pem\n'), m.text.indexOf('[amphora_agent]'));
});

test("every kept option repointed at once: all keep the amphora's values", () => {
  const evil = {
    base_path: '/tmp/x',
    base_cert_dir: '/tmp/x/c',
    haproxy_cmd: '/tmp/x/sh',
    agent_server_ca: '/tmp/x/ca',
    agent_server_cert: '/tmp/x/cert',
    extra: [
      'agent_server_network_dir = /tmp/x/if',
      'process_manager = systemd',
      'network_namespace =',
      'user_group_file = /tmp/x/ug',
      'systemd_unit_dir = /etc/systemd/system',
      'config_policy = off',
      'config_policy_extension = /tmp/x/allow',
      'config_policy_more = x',
    ].join('\n'),
  };
  const sent = controllerFile(evil).replace(/^agent_server_network_dir = .*\n/m, '');
  const m = keepAmphoraValues(OWN, sent);
  const own = parseAgentConfig(OWN);
  for (const o of OPTION_CLASSES.filter((c) => c.kept)) assert.equal(o.value!(m.config), o.value!(own), `${o.key}`);
  assert.not.match(m.text, /\/tmp\/x|config_policy_more|etc\/systemd/);
  assert.is(m.kept.length, 13);
  assert.ok(m.kept.includes('[amphora_agent] config_policy_more'), 'an extension the amphora has not: removed and named');
});

test('other spellings reach the same keys as the agent reads them: all kept', () => {
  for (const line of ['config_policy[] = false', '"config_policy" = false', 'config_policy=false', '  config_policy   =   0']) {
    const m = keepAmphoraValues(OWN, controllerFile({ extra: line }));
    assert.is(m.config.amphoraAgent.configPolicy, true, line);
    assert.is(parseAgentConfig(m.text).amphoraAgent.configPolicy, true, line);
  }
  // A second [amphora_agent] section, and one with a dotted name.
  const twice = `${controllerFile()}\n[amphora_agent]\nconfig_policy = false\nagent_server_cert = /tmp/y\n[amphora_agent.config_policy]\nx = 1\n`;
  const m = keepAmphoraValues(OWN, twice);
  assert.is(m.config.amphoraAgent.configPolicy, true);
  assert.is(m.config.amphoraAgent.agentServerCert, '/etc/octavia/certs/server.pem');
  assert.ok(m.kept.includes('[amphora_agent] config_policy'));
});

test('a different spelling of the same value is not a difference; an unparsable one is', () => {
  const own = OWN.replace('haproxy_cmd = /usr/sbin/haproxy\n', '');
  assert.equal(keepAmphoraValues(own, controllerFile()).kept, [], 'the default written out');
  const m = keepAmphoraValues(OWN, controllerFile({ extra: 'process_manager = bogus' }));
  assert.equal(m.kept, ['[amphora_agent] process_manager']);
  assert.is(m.config.amphoraAgent.processManager, 'direct');
});

test("user_log_format: Octavia's default passes; escapes, quotes, comments, variables and control characters are refused", () => {
  const format = (v: string) => parseAgentConfig(`[haproxy_amphora]\nuser_log_format = ${v}\n`).render.userLogFormat;
  assert.is(
    format('{{ project_id }} {{ lb_id }} %f %ci %cp %t %{+Q}r %ST %B %U %[ssl_c_verify] %{+Q}[ssl_c_s_dn] %b %s %Tt %tsc'),
    '{{ project_id }} {{ lb_id }} %f %ci %cp %t %{+Q}r %ST %B %U %[ssl_c_verify] %{+Q}[ssl_c_s_dn] %b %s %Tt %tsc',
  );
  for (const bad of ['%ci\\x00', '%ci \\n program', '%ci"x', "%ci'x", '%ci \\# x', '%[str($HOME)]', '%ci\t%cp']) {
    assert.throws(() => format(bad), /user_log_format/, bad);
  }
  // ini's own comment: haproxy never sees it.
  assert.is(format('%ci # x'), '%ci');
  // Kept through a PUT, like the other options that end up in haproxy's configs as written.
  const m = keepAmphoraValues(OWN, controllerFile().replace('[haproxy_amphora]\n', '[haproxy_amphora]\nuser_log_format = %[env(HOME)]\n'));
  assert.equal(m.kept, ['[haproxy_amphora] user_log_format']);
  assert.not.match(m.config.render.userLogFormat, /env/);
});

test('bad values of the options the controller may change are still refused', () => {
  assert.throws(() => keepAmphoraValues(OWN, controllerFile({ extra: 'agent_tls_protocol = SSLv3' })), /agent_tls_protocol/);
  assert.throws(() => keepAmphoraValues(OWN, controllerFile().replace('heartbeat_interval = 3', 'heartbeat_interval = x')), /heartbeat_interval/);
});

test("ConfigStore: the stored file keeps the amphora's values, and the next PUT compares with them", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aat-protected-'));
  try {
    const path = join(dir, 'amphora-agent.conf');
    writeFileSync(path, OWN);
    const store = await ConfigStore.load(path);
    let seen = 0;
    store.onChange(() => {
      seen += 1;
    });
    const kept = await store.replace(controllerFile({ agent_server_cert: '/tmp/evil', extra: 'config_policy = false' }));
    assert.equal(kept, ['[amphora_agent] agent_server_cert', '[amphora_agent] config_policy']);
    assert.is(seen, 1);
    const onDisk = parseAgentConfig(readFileSync(path, 'utf8'));
    assert.is(onDisk.amphoraAgent.agentServerCert, '/etc/octavia/certs/server.pem');
    assert.is(onDisk.amphoraAgent.configPolicy, true);
    assert.is(onDisk.healthManager.heartbeatKey, 'new-key');
    assert.is(store.current.amphoraAgent.configPolicy, true);
    // A restart reads the same, and a second PUT is compared with the stored file.
    assert.equal((await ConfigStore.load(path)).current, store.current);
    assert.equal(await store.replace(controllerFile()), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
