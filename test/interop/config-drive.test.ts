// The config drive an amphora boots with, as Octavia 19's worker makes it:
// its compute task (CertComputeCreate with the noop compute driver, which
// records what it would hand Nova) in both [controller_worker]
// user_data_config_drive modes, laid out as Nova's config drive. This agent
// must start from exactly those files: its config loader reads Octavia's
// amphora-agent.conf, and the certificates arrive byte for byte.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { OCTAVIAS, testDir } from '../helpers/haproxies.js';
import { issue, makeCa } from '../helpers/certs.js';
import { octaviaComputeCreate, writeNovaConfigDrive, type ComputeBuild, type ComputeCreateInput } from '../helpers/config-drive.js';
import { ConfigStore } from '../../agent/config/store.js';

const test = suite("the config drive of Octavia 19's compute task");
const OCTAVIA_19 = OCTAVIAS.find((o) => o.label === 'octavia-19')!;
const AMPHORA_ID = 'b7c1e2d3-0000-4000-8000-00000000a001';
const FILES = ['/etc/octavia/amphora-agent.conf', '/etc/octavia/certs/client_ca.pem', '/etc/octavia/certs/server.pem', '/etc/rsyslog.d/10-rsyslog.conf'];

let dir: string;
let input: ComputeCreateInput;
let asFiles: ComputeBuild;
let asUserData: ComputeBuild;

test.before(
  loud(async () => {
    dir = await testDir('config-drive');
    const pki = join(dir, 'pki');
    mkdirSync(pki, { recursive: true });
    const serverCa = makeCa(pki, 'server-ca');
    const clientCa = makeCa(pki, 'client-ca');
    const server = issue(serverCa, 'amphora', { dnsName: AMPHORA_ID, usage: 'serverAuth' });
    // What a worker on the host would configure for a VM behind qemu's user network (host = 10.0.2.2).
    const overrides = {
      controller_worker: { amp_boot_network_list: ['mgmt-net'], amp_ssh_key_name: 'octavia-ssh', loadbalancer_topology: 'SINGLE' },
      health_manager: { controller_ip_port_list: ['10.0.2.2:5555'], heartbeat_key: 'insecure' },
      amphora_agent: { admin_log_targets: ['10.0.2.2:10514'], tenant_log_targets: ['10.0.2.2:10515'], log_protocol: 'TCP' },
    };
    input = { amphoraId: AMPHORA_ID, serverPem: readFileSync(server.pem, 'utf8'), clientCa: readFileSync(clientCa.cert, 'utf8'), overrides };
    [asFiles, asUserData] = await Promise.all([
      octaviaComputeCreate(OCTAVIA_19, {
        ...input,
        overrides: { ...overrides, controller_worker: { ...overrides.controller_worker, user_data_config_drive: false } },
      }),
      octaviaComputeCreate(OCTAVIA_19, {
        ...input,
        overrides: { ...overrides, controller_worker: { ...overrides.controller_worker, user_data_config_drive: true } },
      }),
    ]);
  }),
);

test('config drive files: the four files, certificates byte for byte', () => {
  const files = asFiles.config_drive_files!;
  assert.equal(Object.keys(files).sort(), FILES);
  assert.is(files['/etc/octavia/certs/server.pem'], input.serverPem);
  assert.is(files['/etc/octavia/certs/client_ca.pem'], input.clientCa);
  assert.is(asFiles.name, `amphora-${AMPHORA_ID}`);
  assert.is(asFiles.key_name, 'octavia-ssh');
  assert.equal(asFiles.network_ids, ['mgmt-net']);
  // The user data then only restarts rsyslog (the files are in place before cloud-init runs).
  assert.equal(asFiles.user_data_files, {});
  assert.equal(asFiles.user_data_runcmd, ['systemctl restart rsyslog']);
});

test('the agent reads the amphora-agent.conf Octavia 19 renders', async () => {
  const file = join(dir, 'amphora-agent.conf');
  writeFileSync(file, asFiles.config_drive_files!['/etc/octavia/amphora-agent.conf']!);
  const config = (await ConfigStore.load(file)).current;
  assert.is(config.amphoraAgent.amphoraId, AMPHORA_ID);
  assert.equal(config.healthManager.controllerIpPortList, ['10.0.2.2:5555']);
  assert.is(config.healthManager.heartbeatKey, 'insecure');
  assert.is(config.amphoraAgent.agentServerCert, '/etc/octavia/certs/server.pem');
  assert.is(config.amphoraAgent.agentServerCa, '/etc/octavia/certs/client_ca.pem');
  assert.is(config.haproxyAmphora.bindPort, 9443);
  assert.is(config.haproxyAmphora.basePath, '/var/lib/octavia');
});

test('10-rsyslog.conf forwards local1 (admin) and local0 (tenant) to the targets', () => {
  const text = asFiles.config_drive_files!['/etc/rsyslog.d/10-rsyslog.conf']!;
  assert.match(text, /target="10\.0\.2\.2"\s+port="10514"\s+protocol="TCP"/);
  assert.match(text, /target="10\.0\.2\.2"\s+port="10515"\s+protocol="TCP"/);
  assert.match(text, /^local1\.\* call admin_forwarding$/m);
  assert.match(text, /^local0\.=info call tenant_forwarding$/m);
});

test('user_data_config_drive: the same four files through write_files, then the agent restarts', () => {
  assert.is(asUserData.config_drive_files, null);
  const files = asFiles.config_drive_files!;
  assert.equal(Object.keys(asUserData.user_data_files).sort(), FILES);
  for (const path of FILES) {
    // A YAML literal block ("content: |") ends its text with one newline: a
    // file Octavia renders without one (the two templated configs) gets one.
    const direct = files[path]!.endsWith('\n') ? files[path]! : `${files[path]}\n`;
    // Octavia 19 renders the user data with Jinja's autoescape on, so every
    // '"' of a file becomes '&#34;' on the amphora: harmless for the
    // certificates and amphora-agent.conf (none has one), but the
    // 10-rsyslog.conf of log offloading arrives with '&#34;' where rsyslog's
    // syntax has '"'.
    // With log offloading, keep user_data_config_drive = False (the default).
    const expected = path === '/etc/rsyslog.d/10-rsyslog.conf' ? direct.replaceAll('"', '&#34;') : direct;
    assert.ok(path === '/etc/rsyslog.d/10-rsyslog.conf' || !/["&<>']/.test(direct), `${path} has characters Jinja escapes`);
    assert.is(asUserData.user_data_files[path], expected, path);
  }
  assert.equal(asUserData.user_data_runcmd, ['systemctl restart rsyslog', 'service amphora-agent restart']);
});

test("Nova's layout: meta_data.json files point at their content, user_data and network_data.json beside", () => {
  const root = join(dir, 'drive');
  writeNovaConfigDrive(root, asFiles, {
    uuid: '5e1f0000-0000-4000-8000-000000000001',
    mac: '52:54:00:12:34:56',
    networkId: 'mgmt-net',
    publicKey: 'ssh-ed25519 AAAA test',
  });
  const meta = JSON.parse(readFileSync(join(root, 'openstack/latest/meta_data.json'), 'utf8')) as {
    files: { path: string; content_path: string }[];
    public_keys: Record<string, string>;
    hostname: string;
  };
  assert.equal(meta.files.map((f) => f.path).sort(), FILES);
  for (const f of meta.files) {
    assert.match(f.content_path, /^\/content\/\d{4}$/);
    assert.is(readFileSync(join(root, 'openstack', f.content_path), 'utf8'), asFiles.config_drive_files![f.path]);
  }
  assert.equal(meta.public_keys, { 'octavia-ssh': 'ssh-ed25519 AAAA test' });
  assert.is(meta.hostname, `amphora-${AMPHORA_ID}`);
  assert.is(readFileSync(join(root, 'openstack/latest/user_data'), 'utf8'), asFiles.user_data);
  const net = JSON.parse(readFileSync(join(root, 'openstack/latest/network_data.json'), 'utf8')) as {
    links: { ethernet_mac_address: string }[];
    networks: { type: string }[];
  };
  assert.is(net.links[0]!.ethernet_mac_address, '52:54:00:12:34:56');
  assert.is(net.networks[0]!.type, 'ipv4_dhcp');
});

test.run();
