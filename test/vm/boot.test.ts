// The amphora image booted as Nova boots it (test/helpers/amphora-vm.ts),
// configured by the config drive Octavia 19's own compute task asks for, and
// driven by Octavia 19's AmphoraAPIClient1_0 through the forwarded management
// port: first boot, the agent, plug_vip after a hot-plug, a load balancer
// under systemd. Everything the test reads inside the guest it reads over
// ssh, with the key Nova hands the instance for amp_ssh_key_name.
// test/vm/reboot.test.ts boots another for the reboots.
//
// Runs alone with `node dist/test/run.js vm/boot`. One boot: under TCG (no
// usable KVM) 3 to 4.5 minutes to a running system on a loaded 2-core machine.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { loud } from '../helpers/hooks.js';
import { AmphoraVm, seconds } from '../helpers/amphora-vm.js';
import { TestBackend } from '../helpers/backend.js';
import { LoadGenerator, sleep, waitFor } from '../helpers/load.js';
import { testPorts } from '../helpers/ports.js';
import { HeartbeatReceiver } from '../helpers/heartbeat-receiver.js';
import { OCTAVIA_19 } from '../helpers/amphora-vm.js';
import { createHash } from 'node:crypto';

const ports = testPorts('vm-boot');
const amp = new AmphoraVm('vm-boot', ports, 14);
const MEMBER_PORT = ports.range(2);
const SECOND_HEARTBEAT_PORT = ports.one();
const CONFIG_FILES = ['/etc/octavia/amphora-agent.conf', '/etc/octavia/certs/client_ca.pem', '/etc/octavia/certs/server.pem', '/etc/rsyslog.d/10-rsyslog.conf'];
/** Linux capability numbers (linux/capability.h) of the names the agent's unit keeps. */
const CAP_NUMBERS: Record<string, number> = {
  CAP_CHOWN: 0,
  CAP_DAC_OVERRIDE: 1,
  CAP_DAC_READ_SEARCH: 2,
  CAP_FOWNER: 3,
  CAP_KILL: 5,
  CAP_SETGID: 6,
  CAP_SETUID: 7,
  CAP_NET_BIND_SERVICE: 10,
  CAP_NET_ADMIN: 12,
  CAP_NET_RAW: 13,
  CAP_SYS_ADMIN: 21,
  CAP_SYS_RESOURCE: 24,
};
const UNIT_FILE = new URL('../../../image-build/elements/amphora-agent-ts/static/usr/lib/systemd/system/amphora-agent.service', import.meta.url);
const members: TestBackend[] = [];

test.before(loud(() => amp.boot()));
test.after(async () => {
  amp.cleanup();
  for (const m of members) await m.stop();
});

test('boot reaches multi-user with no failed unit', () => {
  const failed = amp.guest.run('systemctl --failed --plain --no-legend').stdout.trim();
  assert.is(failed, '', `failed units:\n${failed}\n${amp.guest.run('journalctl -b -p warning --no-pager | tail -40').stdout}`);
  assert.is(amp.guest.run('systemctl is-system-running').stdout.trim(), 'running');
  assert.is(amp.guest.run('systemctl is-active multi-user.target').stdout.trim(), 'active');
});

test('cloud-init is done, from the ConfigDrive datasource, with no error', () => {
  const result = JSON.parse(amp.guest.root('cat /run/cloud-init/result.json')) as { v1: { datasource: string; errors: string[] } };
  assert.match(result.v1.datasource, /^DataSourceConfigDrive/);
  assert.equal(result.v1.errors, []);
  assert.match(amp.guest.run('cloud-init status --wait').stdout, /status: done/);
  // The management NIC got its address the way network_data.json asked (DHCP from qemu's user network).
  assert.match(amp.guest.run('ip -4 -o addr show').stdout, /inet 10\.0\.2\.15\//);
});

test("the agent's config and certificates are byte for byte what Octavia's compute task produced", () => {
  for (const path of CONFIG_FILES) {
    const onGuest = Buffer.from(amp.guest.root(`base64 -w0 ${path}`), 'base64').toString('utf8');
    assert.is(onGuest, amp.build.config_drive_files![path], path);
  }
  // Private key material stays root's (cloud-init writes config drive files 0660 root:root).
  const [mode, owner] = amp.guest.root('stat -c "%a %U:%G" /etc/octavia/certs/server.pem').trim().split(' ');
  assert.is(mode!.slice(-1), '0', `server.pem mode ${mode}`);
  assert.is(owner, 'root:root');
});

test('amphora-agent.service is active under its hardening, as /proc of the running agent shows', () => {
  const show = amp.guest.run('systemctl show -p ActiveState -p MainPID amphora-agent.service').stdout;
  assert.match(show, /ActiveState=active/);
  const pid = Number(/MainPID=(\d+)/.exec(show)![1]);
  assert.ok(pid > 1, show);
  const status = amp.guest.root(`cat /proc/${pid}/status`);
  assert.match(status, /^NoNewPrivs:\s+1$/m);
  const unit = readFileSync(UNIT_FILE, 'utf8');
  const names = /^CapabilityBoundingSet=(.*)$/m.exec(unit)![1]!.trim().split(/\s+/);
  const expected = names.reduce((mask, n) => mask | (1n << BigInt(CAP_NUMBERS[n]!)), 0n);
  const capBnd = BigInt(`0x${/^CapBnd:\s+([0-9a-f]+)$/m.exec(status)![1]}`);
  assert.is(capBnd.toString(16), expected.toString(16), 'CapBnd');
  // ProtectSystem=strict: / and /usr read-only for the agent, its ReadWritePaths writable.
  const mounts = amp.guest
    .root(`cat /proc/${pid}/mountinfo`)
    .split('\n')
    .map((l) => l.split(' '));
  const options = (mountPoint: string) => mounts.find((f) => f[4] === mountPoint)?.[5] ?? '';
  assert.match(options('/'), /^ro\b/, 'root read-only');
  assert.match(options('/var/lib/octavia'), /^rw\b/, '/var/lib/octavia writable');
  assert.match(options('/etc/octavia'), /^rw\b/, '/etc/octavia writable');
  const security = amp.guest.root('systemd-analyze security --no-pager amphora-agent.service');
  const exposure = /Overall exposure level for amphora-agent\.service:\s*([\d.]+)\s+(\w+)/.exec(security);
  assert.ok(exposure, security.slice(-500));
  console.log(`systemd-analyze security: exposure ${exposure![1]} ${exposure![2]}`);
});

test("Octavia 19's client: info gives the image's haproxy, details the VM", async () => {
  const started = Date.now();
  const info = (await amp.peer!.call('get_info')) as Record<string, string>;
  console.log(`first answer from Octavia's client: ${seconds(started)} s`);
  const haproxy = /version (\S+)/.exec(amp.guest.run('/usr/sbin/haproxy -v').stdout)![1]!;
  assert.is(info.haproxy_version, haproxy);
  assert.is(info.hostname, `amphora-${amp.amphoraId}`);
  const details = (await amp.peer!.call('get_details')) as { cpu_count: number; memory: Record<string, number>; haproxy_version: string; interface?: string };
  assert.is(details.cpu_count, 1);
  assert.ok(details.memory.total! > 800_000 && details.memory.total! < 1_100_000, `memory.total ${details.memory.total}`);
  assert.is(details.haproxy_version, haproxy);
});

test("heartbeats reach Octavia's receiver on the host", async () => {
  const hb = await waitFor('a heartbeat from the VM', () => amp.heartbeats!.accepted().find((m) => m.id === amp.amphoraId), 60_000, 500);
  assert.equal(hb!.listeners, {});
});

test('plug_vip: 404 until the VIP port is hot-plugged (the controller times out), then eth1 in amphora-haproxy', async () => {
  await amp.setupPeer(2, 1);
  assert.is(await amp.peer!.callExpectingError('plug_vip', amp.vip, amp.vipNetInfo), 'TimeOutException');
  await amp.hotplugVip();
  await amp.setupPeer(120, 2);
  const started = Date.now();
  await amp.peer!.call('plug_vip', amp.vip, amp.vipNetInfo);
  console.log(`plug_vip after the hot-plug: ${seconds(started)} s`);
  const addr = amp.guest.root('ip netns exec amphora-haproxy ip -o addr show dev eth1');
  assert.match(addr, /inet 10\.214\.14\.5\/24/);
  assert.match(addr, /inet 10\.214\.14\.10\/32/);
});

test("upload + start of Octavia's config: traffic through the VIP to a member on the host; a member added while not ready gets 0 requests until its check passes", async () => {
  members.push(await new TestBackend('m1', amp.vipHost, MEMBER_PORT(0)).start());
  await amp.peer!.call('upload_config', amp.lbId, await amp.render(members));
  await amp.peer!.call('start_listener', amp.lbId);
  const load = new LoadGenerator(amp.vipUrl, 10, 2).start();
  try {
    await waitFor('traffic through the VIP', () => load.records.some((r) => r.status === 200), 120_000, 250);
    const added = await new TestBackend('m2', amp.vipHost, MEMBER_PORT(1), 'not-ready').start();
    members.push(added);
    await amp.peer!.call('upload_config', amp.lbId, await amp.render(members));
    await amp.peer!.call('reload_listener', amp.lbId);
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
  assert.equal(await amp.peer!.call('get_all_listeners'), [{ status: 'ACTIVE', uuid: amp.listenerId, type: 'HTTP' }]);
});

test('haproxy-<lb>.service: active, enabled, MainPID the master in amphora-haproxy; kill -9: systemd restarts it, traffic resumes', async () => {
  const before = amp.haproxyUnit();
  assert.is(before.active, 'active');
  assert.is(before.enabled, 'enabled');
  assert.ok(before.pid > 1);
  assert.is(amp.guest.root(`ip netns identify ${before.pid}`).trim(), 'amphora-haproxy');
  assert.match(amp.guest.root(`tr '\\0' ' ' < /proc/${before.pid}/cmdline`), /haproxy .*-W/);
  amp.guest.root(`kill -9 ${before.pid}`);
  const killedAt = Date.now();
  const after = await waitFor(
    'systemd to restart haproxy',
    () => {
      const u = amp.haproxyUnit();
      return u.active === 'active' && u.pid > 1 && u.pid !== before.pid ? u : null;
    },
    120_000,
    1000,
  );
  console.log(`haproxy restarted by systemd ${seconds(killedAt)} s after kill -9 (pid ${before.pid} -> ${after!.pid})`);
  assert.is(amp.guest.root(`ip netns identify ${after!.pid}`).trim(), 'amphora-haproxy');
  const load = new LoadGenerator(amp.vipUrl, 10, 2).start();
  try {
    await waitFor('traffic after the restart', () => load.records.some((r) => r.status === 200), 60_000, 250);
  } finally {
    await load.stop();
  }
});

test("certificate upload: the md5 Octavia reads back is the uploaded PEM's", async () => {
  const pem = amp.build.config_drive_files!['/etc/octavia/certs/client_ca.pem']!;
  await amp.peer!.call('upload_cert_pem', amp.lbId, 'vm-boot.pem', pem);
  assert.is(await amp.peer!.call('get_cert_md5sum', amp.lbId, 'vm-boot.pem'), createHash('md5').update(pem).digest('hex'));
  await amp.peer!.call('delete_cert_pem', amp.lbId, 'vm-boot.pem');
});

test('agent config update: heartbeats go to the new controller from the next one', async () => {
  const second = new HeartbeatReceiver(SECOND_HEARTBEAT_PORT, amp.heartbeatKey, OCTAVIA_19);
  try {
    await second.waitReady();
    const conf = amp.build.config_drive_files!['/etc/octavia/amphora-agent.conf']!.replace(
      `10.0.2.2:${amp.heartbeatPort}`,
      `10.0.2.2:${SECOND_HEARTBEAT_PORT}`,
    );
    assert.match(conf, new RegExp(`controller_ip_port_list = 10\\.0\\.2\\.2:${SECOND_HEARTBEAT_PORT}`));
    const updated = Date.now();
    await amp.peer!.call('update_agent_config', conf);
    const hb = await waitFor('a heartbeat at the new controller', () => second.accepted().find((m) => m.id === amp.amphoraId), 60_000, 500);
    console.log(`first heartbeat at the new controller ${seconds(updated)} s after the update`);
    assert.is(hb!.listeners[amp.listenerId]?.status, 'OPEN');
    assert.is(Buffer.from(amp.guest.root('base64 -w0 /etc/octavia/amphora-agent.conf'), 'base64').toString('utf8'), conf);
  } finally {
    second.stop();
  }
});

test.run();
