// The amphora image booted as Nova boots it (test/helpers/vm.ts), configured
// by the config drive Octavia 19's own compute task asks for, and driven by
// Octavia 19's AmphoraAPIClient1_0 through the forwarded management port.
// Everything the test reads inside the guest it reads over ssh, with the key
// Nova hands the instance for [controller_worker] amp_ssh_key_name.
//
// Runs alone with `node dist/test/run.js vm/`. Builds the image on first use
// (image-build/build.sh vm-test, about 7 minutes; reused while its inputs do
// not change), then one boot: under TCG (no usable KVM) about a minute and a
// half to multi-user on a loaded 2-core machine.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { OCTAVIAS, testDir } from '../helpers/haproxies.js';
import { issue, makeCa, type Ca, type Issued } from '../helpers/certs.js';
import { octaviaComputeCreate, writeNovaConfigDrive, type ComputeBuild } from '../helpers/config-drive.js';
import { HeartbeatReceiver } from '../helpers/heartbeat-receiver.js';
import { OctaviaPeer } from '../helpers/octavia-peer.js';
import { testPorts } from '../helpers/ports.js';
import { waitFor } from '../helpers/load.js';
import { GuestShell, kvmBoots, Vm, vmImage } from '../helpers/vm.js';
import { TestBackend } from '../helpers/backend.js';
import { LoadGenerator, sleep } from '../helpers/load.js';

const OCTAVIA_19 = OCTAVIAS.find((o) => o.label === 'octavia-19')!;
const AMPHORA_ID = 'b7c1e2d3-0000-4000-8000-00000000a014';
const INSTANCE_ID = '5e1f0000-0000-4000-8000-000000000014';
const MGMT_MAC = '52:54:00:14:00:01';
const HEARTBEAT_KEY = 'vm-boot-heartbeat-key';
const ports = testPorts('vm-boot');
const API_PORT = ports.one();
const SSH_PORT = ports.one();
const HEARTBEAT_PORT = ports.one();
const MEMBER_PORT = ports.range(2);
// The VIP network: a tap on the host (the gateway and the members' host) that
// qemu hot-plugs as the VIP port, as Nova does at plug time.
const VIP_TAP = 'vmboot14vip';
const VIP_MAC = '52:54:00:14:00:02';
const VIP_HOST = '10.214.14.1';
const VIP = '10.214.14.10';
const VIP_NET_INFO = {
  subnet_cidr: '10.214.14.0/24', gateway: VIP_HOST, mac_address: VIP_MAC, vrrp_ip: '10.214.14.5', mtu: 1500,
  host_routes: [], additional_vips: [],
};
const LISTENER_PORT = 8080;
const LB_ID = 'c0ffee00-0000-4000-8000-00000000b014';
const LISTENER_ID = 'c0ffee00-0000-4000-8000-00000000c014';
const POOL_ID = 'c0ffee00-0000-4000-8000-00000000d014';
const CONFIG_FILES = ['/etc/octavia/amphora-agent.conf', '/etc/octavia/certs/client_ca.pem', '/etc/octavia/certs/server.pem', '/etc/rsyslog.d/10-rsyslog.conf'];
/** Linux capability numbers (linux/capability.h) of the names the agent's unit keeps. */
const CAP_NUMBERS: Record<string, number> = {
  CAP_CHOWN: 0, CAP_DAC_OVERRIDE: 1, CAP_DAC_READ_SEARCH: 2, CAP_FOWNER: 3, CAP_KILL: 5, CAP_SETGID: 6, CAP_SETUID: 7,
  CAP_NET_BIND_SERVICE: 10, CAP_NET_ADMIN: 12, CAP_NET_RAW: 13, CAP_SYS_ADMIN: 21, CAP_SYS_RESOURCE: 24,
};
const UNIT_FILE = new URL('../../../image-build/elements/amphora-agent-ts/static/usr/lib/systemd/system/amphora-agent.service', import.meta.url);

let dir: string;
let vm: Vm | null = null;
let guest: GuestShell;
let build: ComputeBuild;
let heartbeats: HeartbeatReceiver | null = null;
let peer: OctaviaPeer | null = null;
let serverCa: Ca;
let controller: Issued;
const members: TestBackend[] = [];
let haproxyVersion = '';

const seconds = (since: number) => ((Date.now() - since) / 1000).toFixed(1);

function cleanup(): void {
  peer?.close();
  heartbeats?.stop();
  for (const m of members) void m.stop();
  vm?.stop();
  spawnSync('ip', ['link', 'del', VIP_TAP], { stdio: 'ignore' });
}

/** Octavia's client set up as a worker's, with its retries (404 while a port is not there yet). */
async function setupPeer(retries: number, interval: number): Promise<void> {
  const setup = await peer!.request('setup', {
    amphora_id: AMPHORA_ID, lb_network_ip: '127.0.0.1',
    overrides: { haproxy_amphora: { client_cert: controller.pem, server_ca: serverCa.cert, bind_port: API_PORT, connection_max_retries: retries, connection_retry_interval: interval } },
  });
  if (!setup.ok) throw new Error(`Octavia client setup: ${setup.message}\n${setup.trace ?? ''}`);
}

/** haproxy.cfg from Octavia 19's JinjaTemplater: one HTTP listener on the VIP, members on the host, HTTP checks. */
function render(list: TestBackend[]): Promise<string> {
  return peer!.renderConfig({
    lb_id: LB_ID, listener_id: LISTENER_ID, pool_id: POOL_ID, vip: VIP, port: LISTENER_PORT, haproxy_version: haproxyVersion,
    monitor: { delay: 1, timeout: 2, fall: 2, rise: 2, path: '/healthz' },
    members: list.map((m) => ({ id: m.name, address: m.host, port: m.port })),
  });
}

const VIP_URL = `http://${VIP}:${LISTENER_PORT}/`;

/** The load balancer's unit as systemd sees it in the guest. */
function haproxyUnit(): { active: string; enabled: string; pid: number } {
  const unit = `haproxy-${LB_ID}.service`;
  const show = guest.run(`systemctl show -p ActiveState -p MainPID ${unit}`).stdout;
  return {
    active: /ActiveState=(\S+)/.exec(show)?.[1] ?? '',
    enabled: guest.run(`systemctl is-enabled ${unit}`).stdout.trim(),
    pid: Number(/MainPID=(\d+)/.exec(show)?.[1] ?? 0),
  };
}
process.on('exit', cleanup);

test.before(loud(async () => {
  const image = vmImage();
  console.log(image.summary);
  dir = await testDir('vm-boot');
  let started = Date.now();
  const kvm = await kvmBoots(image);
  console.log(`accelerator: ${kvm ? 'kvm' : 'tcg (KVM absent or does not boot this kernel)'} (probe ${seconds(started)} s)`);

  // The controller's PKI, and what its compute task hands Nova.
  const pki = join(dir, 'pki');
  mkdirSync(pki);
  serverCa = makeCa(pki, 'server-ca');
  const clientCa = makeCa(pki, 'client-ca');
  const server = issue(serverCa, 'amphora', { dnsName: AMPHORA_ID, usage: 'serverAuth' });
  controller = issue(clientCa, 'controller', { usage: 'clientAuth' });
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'octavia-ssh', '-f', join(dir, 'octavia-ssh')]);
  build = await octaviaComputeCreate(OCTAVIA_19, {
    amphoraId: AMPHORA_ID, serverPem: readFileSync(server.pem, 'utf8'), clientCa: readFileSync(clientCa.cert, 'utf8'),
    overrides: {
      controller_worker: { amp_boot_network_list: ['mgmt-net'], amp_ssh_key_name: 'octavia-ssh', loadbalancer_topology: 'SINGLE', user_data_config_drive: false },
      // qemu's user network: the host is 10.0.2.2 from the guest.
      health_manager: { controller_ip_port_list: [`10.0.2.2:${HEARTBEAT_PORT}`], heartbeat_key: HEARTBEAT_KEY, heartbeat_interval: 3 },
    },
  });
  const drive = join(dir, 'config-drive');
  writeNovaConfigDrive(drive, build, {
    uuid: INSTANCE_ID, mac: MGMT_MAC, networkId: 'mgmt-net', publicKey: readFileSync(join(dir, 'octavia-ssh.pub'), 'utf8').trim(),
  });
  const iso = join(dir, 'config-drive.iso');
  execFileSync('genisoimage', ['-quiet', '-o', iso, '-V', 'config-2', '-J', '-r', drive]);
  rmSync(drive, { recursive: true });

  heartbeats = new HeartbeatReceiver(HEARTBEAT_PORT, HEARTBEAT_KEY, OCTAVIA_19);
  await heartbeats.waitReady();

  started = Date.now();
  vm = new Vm({ dir, image, configDrive: iso, mac: MGMT_MAC, apiPort: API_PORT, sshPort: SSH_PORT, kvm });
  await vm.start();
  const kernel = await vm.waitConsole('the kernel to start init', /Run \/init as init process|systemd\[1\]|Welcome to/, 5 * 60_000);
  guest = new GuestShell(SSH_PORT, join(dir, 'octavia-ssh'));
  await waitFor('ssh into the guest with the key from the config drive', () => guest.run('true', 30_000).status === 0, 8 * 60_000, 2000);
  const sshAt = seconds(started);
  const state = guest.run('systemctl is-system-running --wait', 8 * 60_000).stdout.trim();
  console.log(`boot: kernel at ${kernel.toFixed(1)} s, ssh at ${sshAt} s, system ${state} at ${seconds(started)} s`);
  console.log(guest.run('systemd-analyze; systemd-analyze blame --no-pager | head -8').stdout.trim());

  peer = new OctaviaPeer(OCTAVIA_19);
  await setupPeer(120, 2);
}));

test.after(cleanup);

test('boot reaches multi-user with no failed unit', () => {
  const failed = guest.run('systemctl --failed --plain --no-legend').stdout.trim();
  assert.is(failed, '', `failed units:\n${failed}\n${guest.run('journalctl -b -p warning --no-pager | tail -40').stdout}`);
  assert.is(guest.run('systemctl is-system-running').stdout.trim(), 'running');
  assert.is(guest.run('systemctl is-active multi-user.target').stdout.trim(), 'active');
});

test('cloud-init is done, from the ConfigDrive datasource, with no error', () => {
  const result = JSON.parse(guest.root('cat /run/cloud-init/result.json')) as { v1: { datasource: string; errors: string[] } };
  assert.match(result.v1.datasource, /^DataSourceConfigDrive/);
  assert.equal(result.v1.errors, []);
  assert.match(guest.run('cloud-init status --wait').stdout, /status: done/);
  // The management NIC got its address the way network_data.json asked (DHCP from qemu's user network).
  assert.match(guest.run('ip -4 -o addr show').stdout, /inet 10\.0\.2\.15\//);
});

test("the agent's config and certificates are byte for byte what Octavia's compute task produced", () => {
  for (const path of CONFIG_FILES) {
    const onGuest = Buffer.from(guest.root(`base64 -w0 ${path}`), 'base64').toString('utf8');
    assert.is(onGuest, build.config_drive_files![path], path);
  }
  // Private key material stays root's (cloud-init writes config drive files 0660 root:root).
  const [mode, owner] = guest.root('stat -c "%a %U:%G" /etc/octavia/certs/server.pem').trim().split(' ');
  assert.is(mode!.slice(-1), '0', `server.pem mode ${mode}`);
  assert.is(owner, 'root:root');
});

test('amphora-agent.service is active under its hardening, as /proc of the running agent shows', () => {
  const show = guest.run('systemctl show -p ActiveState -p MainPID amphora-agent.service').stdout;
  assert.match(show, /ActiveState=active/);
  const pid = Number(/MainPID=(\d+)/.exec(show)![1]);
  assert.ok(pid > 1, show);
  const status = guest.root(`cat /proc/${pid}/status`);
  assert.match(status, /^NoNewPrivs:\s+1$/m);
  const unit = readFileSync(UNIT_FILE, 'utf8');
  const names = /^CapabilityBoundingSet=(.*)$/m.exec(unit)![1]!.trim().split(/\s+/);
  const expected = names.reduce((mask, n) => mask | (1n << BigInt(CAP_NUMBERS[n]!)), 0n);
  const capBnd = BigInt(`0x${/^CapBnd:\s+([0-9a-f]+)$/m.exec(status)![1]}`);
  assert.is(capBnd.toString(16), expected.toString(16), 'CapBnd');
  // ProtectSystem=strict: / and /usr read-only for the agent, its ReadWritePaths writable.
  const mounts = guest.root(`cat /proc/${pid}/mountinfo`).split('\n').map((l) => l.split(' '));
  const options = (mountPoint: string) => mounts.find((f) => f[4] === mountPoint)?.[5] ?? '';
  assert.match(options('/'), /^ro\b/, 'root read-only');
  assert.match(options('/var/lib/octavia'), /^rw\b/, '/var/lib/octavia writable');
  assert.match(options('/etc/octavia'), /^rw\b/, '/etc/octavia writable');
  const security = guest.root('systemd-analyze security --no-pager amphora-agent.service');
  const exposure = /Overall exposure level for amphora-agent\.service:\s*([\d.]+)\s+(\w+)/.exec(security);
  assert.ok(exposure, security.slice(-500));
  console.log(`systemd-analyze security: exposure ${exposure![1]} ${exposure![2]}`);
});

test("Octavia 19's client: info gives the image's haproxy, details the VM", async () => {
  const started = Date.now();
  const info = await peer!.call('get_info') as Record<string, string>;
  console.log(`first answer from Octavia's client: ${seconds(started)} s`);
  const haproxy = /version (\S+)/.exec(guest.run('/usr/sbin/haproxy -v').stdout)![1]!;
  assert.is(info.haproxy_version, haproxy);
  assert.is(info.hostname, `amphora-${AMPHORA_ID}`);
  const details = await peer!.call('get_details') as { cpu_count: number; memory: Record<string, number>; haproxy_version: string; interface?: string };
  assert.is(details.cpu_count, 1);
  assert.ok(details.memory.total! > 800_000 && details.memory.total! < 1_100_000, `memory.total ${details.memory.total}`);
  assert.is(details.haproxy_version, haproxy);
  haproxyVersion = haproxy.split('.').slice(0, 2).join('.');
});

test("heartbeats reach Octavia's receiver on the host", async () => {
  const hb = await waitFor('a heartbeat from the VM', () => heartbeats!.accepted().find((m) => m.id === AMPHORA_ID), 60_000, 500);
  assert.equal(hb!.listeners, {});
});

test('plug_vip: 404 until the VIP port is hot-plugged (the controller times out), then eth1 in amphora-haproxy', async () => {
  await setupPeer(2, 1);
  assert.is(await peer!.callExpectingError('plug_vip', VIP, VIP_NET_INFO), 'TimeOutException');
  spawnSync('ip', ['link', 'del', VIP_TAP], { stdio: 'ignore' });
  execFileSync('ip', ['tuntap', 'add', 'dev', VIP_TAP, 'mode', 'tap']);
  execFileSync('ip', ['addr', 'add', `${VIP_HOST}/24`, 'dev', VIP_TAP]);
  execFileSync('ip', ['link', 'set', VIP_TAP, 'up']);
  await vm!.qmp.execute('netdev_add', { type: 'tap', id: 'vip', ifname: VIP_TAP, script: 'no', downscript: 'no' });
  await vm!.qmp.execute('device_add', { driver: 'virtio-net-pci', id: 'vip-port', netdev: 'vip', mac: VIP_MAC, romfile: '' });
  await setupPeer(120, 2);
  const started = Date.now();
  await peer!.call('plug_vip', VIP, VIP_NET_INFO);
  console.log(`plug_vip after the hot-plug: ${seconds(started)} s`);
  const addr = guest.root('ip netns exec amphora-haproxy ip -o addr show dev eth1');
  assert.match(addr, /inet 10\.214\.14\.5\/24/);
  assert.match(addr, /inet 10\.214\.14\.10\/32/);
});

test("upload + start of Octavia's config: traffic through the VIP to a member on the host; a member added while not ready gets 0 requests until its check passes", async () => {
  members.push(await new TestBackend('m1', VIP_HOST, MEMBER_PORT(0)).start());
  await peer!.call('upload_config', LB_ID, await render(members));
  await peer!.call('start_listener', LB_ID);
  const load = new LoadGenerator(VIP_URL, 10, 2).start();
  try {
    await waitFor('traffic through the VIP', () => load.records.some((r) => r.status === 200), 120_000, 250);
    const added = await new TestBackend('m2', VIP_HOST, MEMBER_PORT(1), 'not-ready').start();
    members.push(added);
    await peer!.call('upload_config', LB_ID, await render(members));
    await peer!.call('reload_listener', LB_ID);
    // The window: the new config runs and checks m2 (at least two checks seen), and m2 has had no request.
    await waitFor('health checks of the not-ready member', () => added.checks >= 2, 60_000, 250);
    await sleep(3000);
    assert.is(added.requests, 0, 'the not-ready member got requests');
    await added.setMode('ready');
    await waitFor('requests to the member once its check passes', () => added.requests > 0, 60_000, 250);
  } finally {
    await load.stop();
  }
  assert.ok(load.records.filter((r) => r.status === 200).length > 0);
  assert.equal(await peer!.call('get_all_listeners'), [{ status: 'ACTIVE', uuid: LISTENER_ID, type: 'HTTP' }]);
});

test('haproxy-<lb>.service: active, enabled, MainPID the master in amphora-haproxy; kill -9: systemd restarts it, traffic resumes', async () => {
  const before = haproxyUnit();
  assert.is(before.active, 'active');
  assert.is(before.enabled, 'enabled');
  assert.ok(before.pid > 1);
  assert.is(guest.root(`ip netns identify ${before.pid}`).trim(), 'amphora-haproxy');
  assert.match(guest.root(`tr '\\0' ' ' < /proc/${before.pid}/cmdline`), /haproxy .*-W/);
  guest.root(`kill -9 ${before.pid}`);
  const killedAt = Date.now();
  const after = await waitFor('systemd to restart haproxy', () => {
    const u = haproxyUnit();
    return u.active === 'active' && u.pid > 1 && u.pid !== before.pid ? u : null;
  }, 120_000, 1000);
  console.log(`haproxy restarted by systemd ${seconds(killedAt)} s after kill -9 (pid ${before.pid} -> ${after!.pid})`);
  assert.is(guest.root(`ip netns identify ${after!.pid}`).trim(), 'amphora-haproxy');
  const load = new LoadGenerator(VIP_URL, 10, 2).start();
  try {
    await waitFor('traffic after the restart', () => load.records.some((r) => r.status === 200), 60_000, 250);
  } finally {
    await load.stop();
  }
});

/** After a reboot of any kind: a new boot, the load balancer serving and OPEN in heartbeats, with no controller call. */
async function backWithoutController(how: string, bootIdBefore: string, since: number): Promise<void> {
  await waitFor(`ssh after the ${how}`, () => {
    const r = guest.run('cat /proc/sys/kernel/random/boot_id', 30_000);
    return r.status === 0 && r.stdout.trim() !== bootIdBefore;
  }, 10 * 60_000, 3000);
  const load = new LoadGenerator(VIP_URL, 5, 1).start();
  try {
    await waitFor(`traffic through the VIP after the ${how}`, () => load.records.some((r) => r.status === 200 && r.start >= since), 10 * 60_000, 500);
  } finally {
    await load.stop();
  }
  console.log(`${how}: serving again ${seconds(since)} s after it`);
  const open = await waitFor(`a heartbeat with the listener OPEN after the ${how}`, () => heartbeats!.accepted(since).find(
    (m) => m.id === AMPHORA_ID && m.listeners[LISTENER_ID]?.status === 'OPEN'), 5 * 60_000, 1000);
  assert.ok(open);
  const addr = guest.root('ip netns exec amphora-haproxy ip -o addr show dev eth1');
  assert.match(addr, /inet 10\.214\.14\.10\/32/, 'VIP restored');
  assert.match(guest.root('ip netns exec amphora-haproxy ip route show table all'), /default via 10\.214\.14\.1/, 'VIP routes restored');
  assert.is(guest.run('systemctl is-system-running --wait', 5 * 60_000).stdout.trim(), 'running', guest.run('systemctl --failed --no-legend').stdout);
}

test('reboot from inside: the load balancer serves again, heartbeats report it OPEN, no controller call', async () => {
  const bootId = guest.run('cat /proc/sys/kernel/random/boot_id').stdout.trim();
  const since = Date.now();
  guest.run('sudo -n systemctl reboot', 30_000);
  await backWithoutController('reboot', bootId, since);
});

test('hard reset (QMP system_reset): the same', async () => {
  const bootId = guest.run('cat /proc/sys/kernel/random/boot_id').stdout.trim();
  guest.root('sync');
  const since = Date.now();
  await vm!.qmp.execute('system_reset');
  await backWithoutController('hard reset', bootId, since);
});

test.run();
