// What Octavia 16 and 19 expect of the agent on the network side, beyond 11,
// driven by those releases' own controller client and checked against their
// own agent code where it can run here:
// - failover of an ACTIVE_STANDBY load balancer: the controller asks each
//   amphora for the interface holding the VIP and fails over first the one
//   answering 404 (the BACKUP: keepalived holds the VIP on the MASTER only);
// - address announcements after an LVS listener starts (SINGLE) and for a
//   member port's addresses after plug network, seen by a raw ARP capture on
//   the other end of the link;
// - member ports named with the first free ethN from eth2, as 16/19 name them;
// - is_sriov recorded as 19's agent records it;
// - the IPVS settings of the namespace (this kernel has no IPVS: skipped).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, OCTAVIAS, octaviaPython, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { testPorts } from '../helpers/ports.js';
import { OctaviaPeer } from '../helpers/octavia-peer.js';
import { waitFor } from '../helpers/load.js';
import { applyNamespaceSysctls, IPVS_SYSCTLS } from '../../agent/net/ipvs-sysctls.js';

const PORTS = testPorts('octavia-network-releases');

const script = (name: string) => fileURLToPath(new URL(`../../../test/interop/${name}`, import.meta.url));
const ARP_CAPTURE = script('arp_capture.py');
const FAILOVER_ORDER = script('octavia_failover_order.py');
const NEXT_INTERFACE = script('octavia_next_interface.py');
const NEWER = OCTAVIAS.filter((o) => o.label !== 'octavia-11');
const O19 = OCTAVIAS.find((o) => o.label === 'octavia-19')!;

const sh = (...args: string[]) => execFileSync(args[0]!, args.slice(1), { encoding: 'utf8' });

// Two amphorae: one of a SINGLE load balancer, one of an ACTIVE_STANDBY pair.
let single: { net: TestNetwork; agent: AgentUnderTest; peer: OctaviaPeer; dir: string };
let standby: { net: TestNetwork; agent: AgentUnderTest; peer: OctaviaPeer; dir: string };
let tenant: TestNetwork;
const links: string[] = [];

const MAC = {
  vip: '02:00:00:53:00:01',
  standbyVip: '02:00:00:53:00:02',
  memberA: '02:00:00:53:00:0a',
  memberB: '02:00:00:53:00:0b',
  memberC: '02:00:00:53:00:0c',
  memberD: '02:00:00:53:00:0d',
};

/** A "hot-plugged port": a veth whose one end (with the port's MAC) is in the default namespace, the other in the tenant's. */
function hotplug(name: string, mac: string, peerAddress: string): string {
  sh('ip', 'link', 'add', name, 'address', mac, 'type', 'veth', 'peer', 'name', `${name}p`);
  links.push(name);
  sh('ip', 'link', 'set', `${name}p`, 'netns', tenant.netns);
  sh('ip', '-n', tenant.netns, 'addr', 'add', peerAddress, 'dev', `${name}p`);
  sh('ip', '-n', tenant.netns, 'link', 'set', `${name}p`, 'up');
  return `${name}p`;
}

async function amphora(label: string, port: number, extra: string[]) {
  const net = createTestNetwork();
  const dir = await testDir(label);
  const agent = await startAgent(HAPROXIES[0]!, dir, net.netns, port, undefined, extra);
  const peer = new OctaviaPeer(O19);
  const setup = await peer.request('setup', {
    amphora_id: agent.amphoraId,
    lb_network_ip: '127.0.0.1',
    overrides: {
      haproxy_amphora: {
        client_cert: agent.client.pem,
        server_ca: agent.serverCa.cert,
        bind_port: agent.port,
        connection_max_retries: 2,
        connection_retry_interval: 1,
      },
    },
  });
  assert.ok(setup.ok, setup.message);
  return { net, agent, peer, dir };
}

/** ARP frames arriving at a tenant-side interface, from a raw packet socket in the tenant namespace. */
class ArpCapture {
  readonly frames: { op: number; sha: string; spa: string; tha: string; tpa: string }[] = [];
  private readonly child: ChildProcess;
  private readonly ready: Promise<void>;

  constructor(ifname: string) {
    this.child = spawn('ip', ['netns', 'exec', tenant.netns, '/usr/bin/python3', '-c', readFileSync(ARP_CAPTURE, 'utf8'), ifname]);
    this.ready = new Promise((resolve) => {
      createInterface({ input: this.child.stdout! }).on('line', (line) => (line === 'ready' ? resolve() : this.frames.push(JSON.parse(line))));
    });
  }

  static async start(ifname: string): Promise<ArpCapture> {
    const c = new ArpCapture(ifname);
    await c.ready;
    return c;
  }

  /** A gratuitous ARP for the address: sender and target address are the address, from this MAC. */
  gratuitous(address: string, mac: string): boolean {
    return this.frames.some((f) => f.spa === address && f.tpa === address && f.sha === mac);
  }

  stop(): void {
    this.child.kill();
  }
}

/** The failover order ControllerWorker._get_amphorae_for_failover of a release gives for [this amphora, a dead one]. */
function failoverOrder(release: (typeof OCTAVIAS)[number], a: AgentUnderTest, vip: string): { failover_first: string[]; seconds: number } {
  const args = JSON.stringify({
    port: a.port,
    client_cert: a.client.pem,
    server_ca: a.serverCa.cert,
    vip,
    amphorae: [
      { id: a.amphoraId, lb_network_ip: '127.0.0.1' },
      { id: 'dead-amphora', lb_network_ip: '127.0.0.2' },
    ],
  });
  const [cmd, argv] = octaviaPython(release, FAILOVER_ORDER, [args]);
  const res = spawnSync(cmd, argv, { encoding: 'utf8', timeout: 60_000 });
  assert.is(res.status, 0, res.stderr);
  return JSON.parse(res.stdout.trim().split('\n').pop()!);
}

/** The name a release's own agent would give the next member port in this namespace. */
function octaviaNextInterface(release: (typeof OCTAVIAS)[number], netns: string): string {
  const [cmd, argv] = octaviaPython(release, NEXT_INTERFACE);
  return sh('ip', 'netns', 'exec', netns, cmd, ...argv)
    .trim()
    .split('\n')
    .pop()!;
}

const interfaceFile = (dir: string, name: string) => JSON.parse(readFileSync(join(dir, 'interfaces', `${name}.json`), 'utf8')) as Record<string, unknown>;

test.before(
  loud(async () => {
    tenant = createTestNetwork();
    // Octavia 19's controller builds plug bodies with is_sriov; 11's sends none.
    single = await amphora('net-single', PORTS.one(), []);
    standby = await amphora('net-standby', PORTS.one(), ['[controller_worker]', 'loadbalancer_topology = ACTIVE_STANDBY']);
  }),
);

test.after(async () => {
  for (const a of [single, standby]) {
    a?.peer.close();
    await a?.agent.stop();
    a?.net.destroy();
  }
  for (const l of links) spawnSync('ip', ['link', 'del', l], { stdio: 'ignore' });
  tenant?.destroy();
});

test("plug vip without is_sriov (as Octavia 11 controllers send it): eth1.json says is_sriov false, as 19's agent writes it", async () => {
  hotplug('aats3vip', MAC.vip, '10.53.0.1/24');
  await single.peer.call('plug_vip', '10.53.0.10', {
    subnet_cidr: '10.53.0.0/24',
    gateway: '10.53.0.1',
    mac_address: MAC.vip,
    vrrp_ip: '10.53.0.5',
    mtu: 1500,
    host_routes: [],
    additional_vips: [],
  });
  const file = interfaceFile(single.dir, 'eth1');
  assert.is(file.if_type, 'vip');
  assert.is(file.is_sriov, false);
});

test('IPVS settings in the namespace: set where the kernel has IPVS, skipped (and said once) where it has not', async () => {
  const ipvs = spawnSync('ip', ['netns', 'exec', single.net.netns, 'test', '-d', '/proc/sys/net/ipv4/vs']).status === 0;
  if (ipvs) {
    for (const key of Object.keys(IPVS_SYSCTLS)) assert.is(sh('ip', 'netns', 'exec', single.net.netns, 'sysctl', '-n', key).trim(), '1', key);
  } else {
    // This machine's kernel: no IP_VS. plug vip went through (above), and the agent says why nothing was set.
    assert.match(single.agent.output(), /the kernel has no IPVS in the namespace \(yet\): these settings are left unset/);
    assert.is(single.agent.output().match(/the kernel has no IPVS/g)?.length, 1, 'said once');
  }
  // The mechanism on a setting this kernel does have, next to the IPVS ones.
  const scratch = createTestNetwork();
  try {
    sh('ip', 'netns', 'exec', scratch.netns, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=0');
    const out = await applyNamespaceSysctls(scratch.netns, { 'net.ipv4.ip_forward': '1', ...IPVS_SYSCTLS });
    assert.is(sh('ip', 'netns', 'exec', scratch.netns, 'sysctl', '-n', 'net.ipv4.ip_forward').trim(), '1');
    assert.equal(out.set, ['net.ipv4.ip_forward', ...(ipvs ? Object.keys(IPVS_SYSCTLS) : [])]);
    assert.equal(out.absent, ipvs ? [] : Object.keys(IPVS_SYSCTLS));
  } finally {
    scratch.destroy();
  }
});

test('SINGLE: after an LVS listener starts, its virtual address is announced by gratuitous ARP from the VIP port', async () => {
  const listener = '53535353-0000-4000-8000-000000000001';
  // The listener's virtual_server_group as Octavia renders it. No
  // virtual_server: with one, keepalived needs IPVS, which this kernel lacks
  // (keepalived exits and the start is a 500, see octavia-network.test.ts);
  // without, it runs, so the start succeeds and what follows it is seen.
  const config = ['virtual_server_group ipv4-group {', '    10.53.0.10 5353', '}', ''].join('\n');
  await single.peer.call('upload_udp_config', listener, config);
  const capture = await ArpCapture.start('aats3vipp');
  try {
    await single.peer.call('start_listener', listener);
    await waitFor('a gratuitous ARP for the LVS VIP', () => capture.gratuitous('10.53.0.10', MAC.vip), 5000, 50);
  } finally {
    capture.stop();
  }
  await single.peer.call('delete_listener', listener);
});

test("plug network: the member port's address is announced by gratuitous ARP, new and updated, as 16/19 do", async () => {
  const peerEnd = hotplug('aats3ma', MAC.memberA, '10.54.0.1/24');
  const capture = await ArpCapture.start(peerEnd);
  try {
    await single.peer.call('plug_network', {
      mac_address: MAC.memberA,
      fixed_ips: [{ ip_address: '10.54.0.5', subnet_cidr: '10.54.0.0/24', host_routes: [], gateway: null }],
      mtu: 1500,
      is_sriov: false,
    });
    await waitFor('a gratuitous ARP for the new member port', () => capture.gratuitous('10.54.0.5', MAC.memberA), 5000, 50);
    await single.peer.call('plug_network', {
      mac_address: MAC.memberA,
      fixed_ips: [{ ip_address: '10.54.0.6', subnet_cidr: '10.54.0.0/24', host_routes: [], gateway: null }],
      mtu: 1500,
      is_sriov: false,
    });
    await waitFor('a gratuitous ARP for the updated member port', () => capture.gratuitous('10.54.0.6', MAC.memberA), 5000, 50);
  } finally {
    capture.stop();
  }
  assert.is(interfaceFile(single.dir, 'eth2').if_type, 'backend');
});

test('member port names: the first free ethN from eth2, so a port plugged after a detach takes the freed name, as 16 and 19 name it', async () => {
  const ns = single.net.netns;
  const plug = async (mac: string, n: number) => {
    hotplug(`aats3m${n}`, mac, `10.${55 + n}.0.1/24`);
    const expected = NEWER.map((o) => octaviaNextInterface(o, ns));
    const r = (await single.peer.call('plug_network', {
      mac_address: mac,
      fixed_ips: [{ ip_address: `10.${55 + n}.0.5`, subnet_cidr: `10.${55 + n}.0.0/24`, host_routes: [] }],
      mtu: 1500,
      is_sriov: false,
    })) as { status: number; body: { details: string } };
    const name = /Plugged on interface (eth\d+)/.exec(r.body.details)?.[1];
    assert.equal(
      expected,
      NEWER.map(() => name),
      `Octavia ${NEWER.map((o) => o.label).join('/')} would name it ${expected.join('/')}, the agent ${name}`,
    );
    return name;
  };
  assert.is(await plug(MAC.memberB, 1), 'eth3'); // eth2 is member A's
  // Nova detaches member A's port: its NIC vanishes from the namespace.
  sh('ip', '-n', ns, 'link', 'del', 'eth2');
  assert.is(await plug(MAC.memberC, 2), 'eth2');
  assert.is(await plug(MAC.memberD, 3), 'eth4');
  const file = interfaceFile(single.dir, 'eth2');
  assert.is(file.if_type, 'backend');
  assert.is(file.is_sriov, false);
  assert.match(sh('ip', '-n', ns, 'addr', 'show', 'dev', 'eth2'), /inet 10\.57\.0\.5\/24/);
});

test('ACTIVE_STANDBY failover: the BACKUP answers 404 for the VIP and is failed over first; once it holds the VIP, the other one is', async () => {
  hotplug('aats3svip', MAC.standbyVip, '10.59.0.1/24');
  await standby.peer.call('plug_vip', '10.59.0.10', {
    subnet_cidr: '10.59.0.0/24',
    gateway: '10.59.0.1',
    mac_address: MAC.standbyVip,
    vrrp_ip: '10.59.0.5',
    mtu: 1500,
    host_routes: [],
    additional_vips: [],
    is_sriov: false,
  });
  const eth1 = () => sh('ip', '-n', standby.net.netns, 'addr', 'show', 'dev', 'eth1');
  assert.match(eth1(), /inet 10\.59\.0\.5\/24/);
  assert.not.match(eth1(), /10\.59\.0\.10/, "the VIP is keepalived's to add, not plug vip's");
  // The BACKUP's answer, as Octavia's agent gives it: a JSON 404 without "No suitable network interface found" (which the controller retries).
  assert.is(await standby.peer.callExpectingError('get_interface', '10.59.0.10'), 'NotFound');
  assert.equal(await standby.peer.call('get_interface', '10.59.0.5'), { message: 'OK', interface: 'eth1' });
  for (const release of NEWER) {
    const asBackup = failoverOrder(release, standby.agent, '10.59.0.10');
    assert.is(asBackup.failover_first[0], standby.agent.amphoraId, `${release.label}: the BACKUP is not failed over first`);
    assert.ok(asBackup.seconds < 1, `${release.label}: the controller retried the 404 (${asBackup.seconds} s)`);
  }
  // keepalived takes the VIP (MASTER: its peer never answers).
  await standby.peer.call(
    'upload_vrrp_config',
    [
      'vrrp_instance s3 {',
      '    state BACKUP',
      '    interface eth1',
      '    virtual_router_id 53',
      '    priority 100',
      '    nopreempt',
      '    accept',
      '    advert_int 1',
      '    unicast_src_ip 10.59.0.5',
      '    unicast_peer {',
      '        10.59.0.6',
      '    }',
      '    virtual_ipaddress {',
      '        10.59.0.10',
      '    }',
      '}',
      '',
    ].join('\n'),
  );
  await standby.peer.call('start_vrrp');
  try {
    await waitFor('keepalived to take the VIP', () => /inet 10\.59\.0\.10\/32/.test(eth1()), 15_000, 200);
    assert.equal(await standby.peer.call('get_interface', '10.59.0.10'), { message: 'OK', interface: 'eth1' });
    for (const release of NEWER) {
      const asMaster = failoverOrder(release, standby.agent, '10.59.0.10');
      assert.equal(asMaster.failover_first, ['dead-amphora', standby.agent.amphoraId], `${release.label}: the MASTER is failed over first`);
    }
  } finally {
    await standby.peer.call('stop_vrrp');
  }
});

test.run();
