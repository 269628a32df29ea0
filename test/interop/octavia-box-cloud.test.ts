// Octavia in a box, the cloud alone (issue 27): the protocol of
// test/octavia-box/PROTOCOL.md spoken over the cloud's socket the way
// Octavia's drivers will, with amphorae that are the CI image booted under
// systemd-nspawn (test/helpers/octavia-box/). Two servers boot at once from
// config drive files only (amphora-agent.conf, server.pem, client_ca.pem as
// Octavia's controller makes them); from the box namespace the agent answers
// over mTLS at its lb_network_ip; a tenant port attached to a running
// amphora appears as a NIC with its MAC, which the agent plugs and then finds
// by address; the fail hook kills an amphora; server.delete leaves no
// namespace, veth or process.
//
// The first run on a machine builds the CI image (image-build/build.sh ci,
// a few minutes); later runs reuse it.
//
//   node dist/test/run.js octavia-box-cloud
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ciImageTar, ImageRoot } from '../helpers/amphora-container.js';
import { issue, makeCa, type Ca, type Issued } from '../helpers/certs.js';
import { testDir } from '../helpers/haproxies.js';
import { loud } from '../helpers/hooks.js';
import { sleep, waitFor } from '../helpers/load.js';
import { Box, namespaceExists } from '../helpers/octavia-box/box-network.js';
import { Cloud, type Server } from '../helpers/octavia-box/cloud.js';
import { cloudCall, cloudErrorType, cloudLine } from '../helpers/octavia-box/cloud-client.js';
import { MemberBackend } from '../helpers/octavia-box/member-backend.js';
import type { Network, Port, Subnet } from '../helpers/octavia-box/cloud-state.js';

const AGENT_PORT = 9443;

/** amphora-agent.conf as Octavia 19's amphora_agent_conf.template renders it (SINGLE, heartbeats to the box's health manager). */
function agentConf(amphoraId: string): string {
  return `[DEFAULT]
debug = False
use_syslog = True
syslog_log_facility = LOG_LOCAL1

[haproxy_amphora]
base_cert_dir = /var/lib/octavia/certs
base_path = /var/lib/octavia
bind_host = ::
bind_port = ${AGENT_PORT}
haproxy_cmd = /usr/sbin/haproxy
user_log_facility = 0
administrative_log_facility = 1

[health_manager]
controller_ip_port_list = 172.31.0.2:5555
heartbeat_interval = 10
heartbeat_key = insecure

[amphora_agent]
agent_server_ca = /etc/octavia/certs/client_ca.pem
agent_server_cert = /etc/octavia/certs/server.pem
agent_server_network_dir = /etc/octavia/interfaces/
agent_request_read_timeout = 180
amphora_id = ${amphoraId}
amphora_udp_driver = keepalived_lvs
agent_tls_protocol = TLSv1.2

[controller_worker]
loadbalancer_topology = SINGLE
`;
}

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

interface Pki {
  serverCa: Ca;
  clientCa: Ca;
  client: Issued;
}

/** An amphora's config drive files (base64, as the drivers send them): a server certificate naming the amphora id. */
function driveFiles(pki: Pki, amphoraId: string): Record<string, string> {
  const server = issue(pki.serverCa, `amphora-${amphoraId.slice(0, 8)}`, { dnsName: amphoraId, usage: 'serverAuth' });
  return {
    '/etc/octavia/amphora-agent.conf': b64(agentConf(amphoraId)),
    '/etc/octavia/certs/server.pem': b64(readFileSync(server.pem)),
    '/etc/octavia/certs/client_ca.pem': b64(readFileSync(pki.clientCa.cert)),
  };
}

/** An HTTPS call to an amphora's agent from the box namespace, with the controller's client certificate, checking the server name. */
function agentCall(box: Box, pki: Pki | null, amphoraId: string, ip: string, method: string, path: string, body?: unknown): { status: number; body: string } {
  const tls = pki ? ['--cacert', pki.serverCa.cert, '--cert', pki.client.cert, '--key', pki.client.key] : ['--insecure'];
  const data = body === undefined ? [] : ['-H', 'content-type: application/json', '--data-binary', JSON.stringify(body)];
  const r = spawnSync(
    box.exec[0]!,
    [
      ...box.exec.slice(1),
      'curl',
      '-sS',
      '--max-time',
      '30',
      ...tls,
      '-X',
      method,
      ...data,
      '--resolve',
      `${amphoraId}:${AGENT_PORT}:${ip}`,
      '-w',
      '\n%{http_code}',
      `https://${amphoraId}:${AGENT_PORT}/1.0/${path}`,
    ],
    { encoding: 'utf8' },
  );
  const lines = r.stdout.split('\n');
  const status = Number(lines.pop());
  return { status: r.status === 0 ? status : 0, body: r.status === 0 ? lines.join('\n') : r.stderr.trim() };
}

/** Links of a namespace: name and MAC. */
function links(netns: string): { name: string; mac: string }[] {
  const out = execFileSync('ip', ['-n', netns, '-o', 'link', 'show'], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => ({
      name: l.split(':')[1]!.trim().split('@')[0]!,
      mac: /link\/\S+ ([0-9a-f:]{17})/.exec(l)?.[1] ?? '',
    }));
}

function pidAlive(pid: number): boolean {
  return existsSync(`/proc/${pid}`);
}

/** Pids whose command line names the container (its systemd-nspawn), and those in its namespace. */
function containerPids(netns: string): number[] {
  const inNs = spawnSync('ip', ['netns', 'pids', netns], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
  const nspawn = spawnSync('pgrep', ['-f', `--machine=${netns}( |$)`], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean)
    .map(Number);
  return [...inNs, ...nspawn];
}

const test = suite('Octavia in a box: the cloud (protocol over the socket, amphora containers)');
const tag = randomBytes(2).toString('hex');
let image: ImageRoot | null = null;
let box: Box | null = null;
let cloud: Cloud | null = null;
let socket = '';
let pki: Pki;
const timings: string[] = [];
const call = <T>(method: string, params: Record<string, unknown> = {}) => cloudCall<T>(socket, method, params);
/** The two servers booted together: [id, amphora id, server]. */
const amps: { id: string; amphoraId: string; server: Server }[] = [];

test.before(
  loud(async () => {
    const t0 = Date.now();
    const { tar, summary } = ciImageTar();
    timings.push(summary);
    const t1 = Date.now();
    image = ImageRoot.extract(tar);
    timings.push(`image extracted in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
    box = Box.create(tag);
    socket = join(box.stateDir, 'cloud.sock');
    cloud = await Cloud.listen(socket, box, image);
    const dir = await testDir('octavia-box-cloud-pki');
    const serverCa = makeCa(dir, 'server-ca');
    const clientCa = makeCa(dir, 'client-ca');
    pki = { serverCa, clientCa, client: issue(clientCa, 'controller', { usage: 'clientAuth' }) };
    console.log(`[octavia-box] ${timings.join('; ')}; box ${box.netns} up ${((Date.now() - t0) / 1000).toFixed(1)} s after the start`);
  }),
);

test.after(async () => {
  await cloud?.close();
  box?.destroy();
  image?.remove();
});

test('networks, subnets and errors: fixed networks by id or name, bad lines, unknown ids and methods', async () => {
  const nets = await call<Network[]>('network.list');
  assert.equal(nets.map((n) => n.name).sort(), ['mgmt', 'tenant']);
  const mgmt = await call<Network>('network.get', { id: 'mgmt' });
  assert.equal(await call<Network>('network.get', { id: mgmt.id }), mgmt);
  const sub = await call<Subnet>('subnet.get', { id: mgmt.subnets[0]! });
  assert.is(sub.cidr, '172.31.0.0/24');
  assert.is(sub.gateway_ip, null);
  const tenant = await call<Subnet>('subnet.get', { id: 'tenant-subnet' });
  assert.is(tenant.gateway_ip, '10.99.0.1');
  assert.is((await call<Subnet[]>('subnet.list')).length, 2);
  for (const bad of ['not json', '[]', '{"params": {}}', `{"method": "server.get", "params": [1]}`, `{"method": "nope"}`]) {
    const a = await cloudLine(socket, bad);
    assert.ok('error' in a && a.error.type === 'BadRequest', `${bad}: ${JSON.stringify(a)}`);
  }
  assert.is(await cloudErrorType(socket, 'server.get', { id: randomUUID() }), 'NotFound');
  assert.is(await cloudErrorType(socket, 'port.get', { id: randomUUID() }), 'NotFound');
  assert.is(await cloudErrorType(socket, 'network.get', { id: 'nowhere' }), 'NotFound');
  assert.is(await cloudErrorType(socket, 'port.create', { network_id: 'tenant', bogus: 1 }), 'BadRequest');
  assert.is(await cloudErrorType(socket, 'port.create', { network_id: 'tenant', fixed_ips: [{ ip_address: '10.98.0.5' }] }), 'BadRequest');
  assert.is(await cloudErrorType(socket, 'server.create', { name: 'x', network_ids: ['mgmt'], config_drive_files: { 'rel/path': '' } }), 'BadRequest');
  // port.delete of a port that is gone is no error.
  assert.is(await call('port.delete', { id: randomUUID() }), null);
  // Still serving after all that.
  assert.is((await call<Network[]>('network.list')).length, 2);
});

test('ports: Neutron MACs, addresses from the pool or as asked, Conflict when taken', async () => {
  const p = await call<Port>('port.create', { network_id: 'mgmt', name: 'probe' });
  assert.match(p.mac_address, /^fa:16:3e(:[0-9a-f]{2}){3}$/);
  assert.equal(
    p.fixed_ips.map((f) => f.ip_address),
    ['172.31.0.10'],
  );
  assert.is(p.status, 'DOWN');
  const t = await call<Port>('port.create', { network_id: 'tenant' });
  assert.equal(
    t.fixed_ips.map((f) => f.ip_address),
    ['10.99.0.100'],
  );
  assert.is(await cloudErrorType(socket, 'port.create', { network_id: 'tenant', fixed_ips: [{ ip_address: '10.99.0.100' }] }), 'Conflict');
  assert.is(await cloudErrorType(socket, 'port.create', { network_id: 'tenant', fixed_ips: [{ ip_address: '10.99.0.1' }] }), 'Conflict');
  box!.member(0);
  assert.is(await cloudErrorType(socket, 'port.create', { network_id: 'tenant', fixed_ips: [{ ip_address: '10.99.0.20' }] }), 'Conflict');
  const u = await call<Port>('port.update', { id: t.id, allowed_address_pairs: [{ ip_address: '10.99.0.200' }], name: 'vip' });
  assert.equal(u.allowed_address_pairs, [{ ip_address: '10.99.0.200', mac_address: t.mac_address }]);
  assert.equal(
    (await call<Port[]>('port.list', { name: 'vip' })).map((x) => x.id),
    [t.id],
  );
  // fixed_ips replaced: its own address kept, a second one added; then the old one freed for others.
  const two = await call<Port>('port.update', { id: t.id, fixed_ips: [{ ip_address: '10.99.0.100' }, { subnet_id: 'tenant-subnet' }] });
  assert.equal(
    two.fixed_ips.map((f) => f.ip_address),
    ['10.99.0.100', '10.99.0.101'],
  );
  await call<Port>('port.update', { id: t.id, fixed_ips: [{ ip_address: '10.99.0.101' }] });
  const reuse = await call<Port>('port.create', { network_id: 'tenant', admin_state_up: false });
  assert.equal(
    reuse.fixed_ips.map((f) => f.ip_address),
    ['10.99.0.100'],
  );
  assert.is(reuse.admin_state_up, false);
  assert.is(await call('port.delete', { id: reuse.id }), null);
  for (const x of [p, t]) assert.is(await call('port.delete', { id: x.id }), null);
  assert.equal(await call<Port[]>('port.list'), []);
});

test('server.create: BUILD at once, ACTIVE once the container booted; the agent answers over mTLS at lb_network_ip', async () => {
  const started = Date.now();
  // Two at once, as ACTIVE_STANDBY builds them.
  for (const name of ['a', 'b']) {
    const amphoraId = randomUUID();
    const server = await call<Server>('server.create', {
      name: `amphora-${amphoraId}`,
      image_id: 'ci',
      flavor_id: 'box',
      network_ids: ['mgmt'],
      port_ids: [],
      config_drive_files: driveFiles(pki, amphoraId),
      user_data: null,
      availability_zone: null,
    });
    assert.is(server.status, 'BUILD', name);
    amps.push({ id: server.id, amphoraId, server });
  }
  const answered = Date.now() - started;
  assert.equal(
    amps.map((a) => a.server.lb_network_ip),
    ['172.31.0.10', '172.31.0.11'],
  );
  assert.ok(answered < 5000, `server.create took ${answered} ms to answer`);
  for (const a of amps) {
    a.server = (await waitFor(
      `server ${a.id} ACTIVE`,
      async () => {
        const s = await call<Server>('server.get', { id: a.id });
        if (s.status === 'ERROR') throw new Error(`server ${a.id} ERROR: ${s.fault}`);
        return s.status === 'ACTIVE' ? s : null;
      },
      180_000,
      500,
    ))!;
  }
  const boots = amps.map((a) => cloud!.amphoraOf(a.id).bootMs!);
  console.log(
    `[octavia-box] two amphora containers booted together: ${boots.map((ms) => `${(ms / 1000).toFixed(1)} s`).join(', ')} (server.create answered in ${answered} ms)`,
  );
  assert.equal((await call<Server[]>('server.list')).map((s) => s.id).sort(), amps.map((a) => a.id).sort());
  for (const a of amps) {
    // The config drive as cloud-init writes it.
    const c = cloud!.amphoraOf(a.id).container!;
    assert.is(c.exec(['stat', '-c', '%a', '/etc/octavia/certs/server.pem']).trim(), '600');
    assert.is(c.exec(['stat', '-c', '%a', '/etc/octavia/amphora-agent.conf']).trim(), '644');
    assert.is(c.exec(['hostname']).trim(), a.server.name);
    // eth0: the management port's MAC and address.
    const port = await call<Port>('port.get', { id: a.server.port_ids[0]! });
    assert.is(port.device_id, a.id);
    assert.is(port.status, 'ACTIVE');
    const eth0 = links(cloud!.amphoraOf(a.id).netns).find((l) => l.name === 'eth0');
    assert.is(eth0?.mac, port.mac_address);
    const t0 = Date.now();
    const info = (await waitFor(
      `amphora ${a.amphoraId}'s agent`,
      () => {
        const r = agentCall(box!, pki, a.amphoraId, a.server.lb_network_ip!, 'GET', 'info');
        return r.status === 200 ? r : null;
      },
      60_000,
      500,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${c.exec(['journalctl', '--no-pager', '-u', 'amphora-agent', '-n', '40'])}`);
    }))!;
    const body = JSON.parse(info.body) as { api_version?: string };
    assert.ok(body.api_version, info.body);
    console.log(`[octavia-box] ${a.server.lb_network_ip}: /1.0/info ${info.body.replace(/\s+/g, ' ')} (${Date.now() - t0} ms after ACTIVE)`);
    // mTLS: without the controller's client certificate the agent refuses.
    assert.is.not(agentCall(box!, null, a.amphoraId, a.server.lb_network_ip!, 'GET', 'info').status, 200);
  }
});

test('server.attach_port: a tenant port with a fixed IP appears with its MAC; the agent plugs it and finds it by address', async () => {
  const a = amps[0]!;
  const netns = cloud!.amphoraOf(a.id).netns;
  const port = await call<Port>('port.create', { network_id: 'tenant', fixed_ips: [{ subnet_id: 'tenant-subnet', ip_address: '10.99.0.150' }] });
  const attached = await call<Port>('server.attach_port', { server_id: a.id, port_id: port.id });
  assert.is(attached.device_id, a.id);
  assert.is(attached.status, 'ACTIVE');
  assert.is(await cloudErrorType(socket, 'server.attach_port', { server_id: a.id, port_id: port.id }), 'Conflict');
  assert.is(await cloudErrorType(socket, 'server.attach_port', { server_id: amps[1]!.id, port_id: port.id }), 'Conflict');
  // Administratively down: DOWN, and back.
  assert.is((await call<Port>('port.update', { id: port.id, admin_state_up: false })).status, 'DOWN');
  assert.is((await call<Port>('port.update', { id: port.id, admin_state_up: true })).status, 'ACTIVE');
  const nic = links(netns).find((l) => l.mac === port.mac_address);
  assert.is(nic?.name, 'eth1', 'the hot-plugged NIC, next to eth0');
  assert.ok((await call<Server>('server.get', { id: a.id })).port_ids.includes(port.id));
  const ip = a.server.lb_network_ip!;
  // Not configured until Octavia asks the agent to plug it.
  assert.is(agentCall(box!, pki, a.amphoraId, ip, 'GET', 'interface/10.99.0.150').status, 404);
  const plugged = agentCall(box!, pki, a.amphoraId, ip, 'POST', 'plug/network', {
    mac_address: port.mac_address,
    mtu: 1500,
    fixed_ips: [{ ip_address: '10.99.0.150', subnet_cidr: '10.99.0.0/24', host_routes: [] }],
  });
  assert.is(plugged.status, 202, plugged.body);
  const found = agentCall(box!, pki, a.amphoraId, ip, 'GET', 'interface/10.99.0.150');
  assert.is(found.status, 200, found.body);
  const ifname = (JSON.parse(found.body) as { interface: string }).interface;
  // Traffic on br-tenant: from a member namespace to the plugged address.
  const member = box!.member(0);
  const ping = spawnSync(member.exec[0]!, [...member.exec.slice(1), 'ping', '-c', '1', '-W', '3', '10.99.0.150'], { encoding: 'utf8' });
  assert.is(ping.status, 0, ping.stdout + ping.stderr);
  console.log(
    `[octavia-box] tenant port ${port.mac_address} attached as eth1, plugged by the agent as ${ifname} in amphora-haproxy; member 10.99.0.20 reaches it`,
  );
  // Detached: the NIC leaves (from the amphora namespace too), the port is unbound but kept.
  assert.is(await call('server.detach_port', { server_id: a.id, port_id: port.id }), null);
  const c = cloud!.amphoraOf(a.id).container!;
  await waitFor('the NIC gone from amphora-haproxy', () => !c.exec(['ip', '-n', 'amphora-haproxy', '-o', 'link']).includes(port.mac_address), 5000, 100);
  const after = await call<Port>('port.get', { id: port.id });
  assert.is(after.device_id, '');
  assert.is(after.status, 'DOWN');
  assert.is(await cloudErrorType(socket, 'server.detach_port', { server_id: a.id, port_id: port.id }), 'NotFound');
  await call('port.delete', { id: port.id });
});

test('a member namespace runs a backend the box namespace reaches on br-tenant', async () => {
  const backend = await MemberBackend.start(box!.member(1), 8080);
  try {
    const r = spawnSync(box!.exec[0]!, [...box!.exec.slice(1), 'curl', '-sS', '--max-time', '5', 'http://10.99.0.21:8080/'], { encoding: 'utf8' });
    assert.is(r.stdout, 'member-1\n', r.stderr);
    assert.is((await backend.setMode('not-ready')).mode, 'not-ready');
    const r2 = spawnSync(box!.exec[0]!, [...box!.exec.slice(1), 'curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', 'http://10.99.0.21:8080/'], {
      encoding: 'utf8',
    });
    assert.is(r2.stdout, '503');
    assert.is((await backend.stats()).requests, 2);
  } finally {
    await backend.stop();
  }
});

test('a boot that fails: ERROR with its fault; a server deleted while it boots leaves nothing once its boot ended', async () => {
  // A config drive file below a file: writing it fails before the container starts.
  const broken = await call<Server>('server.create', {
    name: 'broken',
    network_ids: ['mgmt'],
    config_drive_files: { '/etc/hostname/x': b64('x') },
  });
  const failed = (await waitFor(
    'the broken server in ERROR',
    async () => {
      const s = await call<Server>('server.get', { id: broken.id });
      return s.status === 'ERROR' ? s : null;
    },
    30_000,
    100,
  ))!;
  assert.match(failed.fault ?? '', /hostname/);
  const brokenNs = cloud!.amphoraOf(broken.id).netns;
  assert.is(await call('server.delete', { id: broken.id }), null);
  assert.not.ok(namespaceExists(brokenNs));
  // Deleted right after create, while its container starts.
  const amphoraId = randomUUID();
  const early = await call<Server>('server.create', {
    name: `amphora-${amphoraId}`,
    network_ids: ['mgmt'],
    config_drive_files: driveFiles(pki, amphoraId),
  });
  const netns = cloud!.amphoraOf(early.id).netns;
  const booted = cloud!.amphoraOf(early.id).booted;
  const t0 = Date.now();
  assert.is(await call('server.delete', { id: early.id }), null);
  assert.not.ok(namespaceExists(netns));
  assert.is(await cloudErrorType(socket, 'server.get', { id: early.id }), 'NotFound');
  await booted;
  await waitFor(`no process of ${netns}`, () => containerPids(netns).length === 0, 10_000, 100);
  console.log(`[octavia-box] server deleted during its boot: its boot ended ${Date.now() - t0} ms after the delete, nothing left`);
  // Only the two booted servers' management ports are left.
  assert.equal((await call<Port[]>('port.list', { network_id: 'mgmt' })).map((p) => p.device_id).sort(), amps.map((a) => a.id).sort());
});

test('fail(): the amphora dies (PID 1 killed), its agent stops answering; the server stays ACTIVE', async () => {
  const b = amps[1]!;
  const leader = cloud!.amphoraOf(b.id).container!.leader;
  cloud!.fail(b.id);
  await waitFor("the container's PID 1 gone", () => !pidAlive(leader), 10_000, 50);
  assert.is(agentCall(box!, pki, b.amphoraId, b.server.lb_network_ip!, 'GET', 'info').status, 0);
  assert.is((await call<Server>('server.get', { id: b.id })).status, 'ACTIVE');
});

test('server.delete: no namespace, veth or process of the container left; its own ports deleted', async () => {
  const before = box!.inventory().veths.length;
  for (const a of amps) {
    const amp = cloud!.amphoraOf(a.id);
    const pids = containerPids(amp.netns);
    const outers = [...amp.nics.values()].map((n) => n.outer);
    const t0 = Date.now();
    assert.is(await call('server.delete', { id: a.id }), null);
    console.log(`[octavia-box] server.delete of ${amp.netns} (${pids.length} processes) answered in ${Date.now() - t0} ms`);
    assert.not.ok(namespaceExists(amp.netns), `${amp.netns} still there`);
    assert.equal(pids.filter(pidAlive), [], 'processes of the container left');
    assert.equal(containerPids(amp.netns), []);
    const boxLinks = links(box!.netns).map((l) => l.name);
    for (const o of outers) assert.not.ok(boxLinks.includes(o), `veth ${o} left`);
    assert.is(await cloudErrorType(socket, 'server.get', { id: a.id }), 'NotFound');
  }
  assert.ok(box!.inventory().veths.length < before);
  assert.equal(await call<Port[]>('port.list', { network_id: 'mgmt' }), []);
  assert.equal(await call<Server[]>('server.list'), []);
});

test('close and destroy: nothing of the box left (namespaces, socket)', async () => {
  await cloud!.close();
  box!.destroy();
  await sleep(100);
  const left = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter((l) => l.startsWith(`aatb-${tag}`));
  assert.equal(left, []);
  assert.not.ok(existsSync(socket));
});

test.run();
