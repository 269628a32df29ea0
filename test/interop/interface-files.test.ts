// Interface files at parity with Octavia's agent (VIPInterfaceFile,
// PortInterfaceFile and plug_lo) of 11, 16 and 19 for the same plug requests.
// 16 and 19 record if_type and is_sriov, which must match too; 11 has
// neither. Differences by design, and only these: IPv6 is written exploded
// everywhere; and the LVS masquerade is done by the agent
// (agent/net/masquerade.ts) instead of script lines, so Octavia's scripts must
// name exactly the IP families the agent masquerades (with " sriov" on
// SR-IOV ports, where the agent leaves TCP tracked).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { OCTAVIAS, octaviaPython } from '../helpers/haproxies.js';
import { fileURLToPath } from 'node:url';
import {
  backendInterfaceFile,
  interfaceFamilies,
  loopbackInterfaceFile,
  vipInterfaceFile,
  type FixedIp,
  type InterfaceFile,
  type VipSubnet,
} from '../../agent/net/interface-file.js';
import { explode } from '../../agent/net/ip.js';

const OCTAVIA = fileURLToPath(new URL('../../../test/interop/octavia_interface_files.py', import.meta.url));

type Topology = 'SINGLE' | 'ACTIVE_STANDBY';
type Case =
  | {
      label: string;
      kind: 'vip';
      name: string;
      topology: Topology;
      vips: VipSubnet[];
      vrrp_ip: string | null;
      fixed_ips?: FixedIp[];
      mtu: number | null;
      is_sriov?: boolean;
    }
  | { label: string; kind: 'port'; name: string; fixed_ips: FixedIp[]; mtu: number | null; is_sriov?: boolean }
  | { label: string; kind: 'lo' };

const v4 = (ip: string, gateway: string | null = '10.0.0.1', host_routes = [{ destination: '192.0.2.0/24', nexthop: '10.0.0.254' }]): VipSubnet => ({
  ip_address: ip,
  subnet_cidr: '10.0.0.0/24',
  gateway,
  host_routes,
});
const v6 = (ip: string, gateway: string | null = '2001:db8:1::1'): VipSubnet => ({
  ip_address: ip,
  subnet_cidr: '2001:db8:1::/64',
  gateway,
  host_routes: [{ destination: '2001:db8:99::/48', nexthop: '2001:db8:1::fe' }],
});

const CASES: Case[] = [
  {
    label: 'SINGLE IPv4 VIP with VRRP address, gateway, host route, MTU',
    kind: 'vip',
    name: 'eth1',
    topology: 'SINGLE',
    vips: [v4('10.0.0.10')],
    vrrp_ip: '10.0.0.5',
    mtu: 1450,
  },
  {
    label: 'ACTIVE_STANDBY IPv4 VIP (keepalived owns the VIP)',
    kind: 'vip',
    name: 'eth1',
    topology: 'ACTIVE_STANDBY',
    vips: [v4('10.0.0.10')],
    vrrp_ip: '10.0.0.5',
    mtu: null,
  },
  {
    label: 'SINGLE dual-stack without VRRP address: DHCP and autoconfiguration',
    kind: 'vip',
    name: 'eth1',
    topology: 'SINGLE',
    vips: [v4('10.0.0.10', null, []), v6('2001:db8:1::10', null)],
    vrrp_ip: null,
    mtu: null,
  },
  {
    label: 'ACTIVE_STANDBY IPv6 VIP with VRRP address',
    kind: 'vip',
    name: 'eth1',
    topology: 'ACTIVE_STANDBY',
    vips: [v6('2001:db8:1::10')],
    vrrp_ip: '2001:db8:1::5',
    mtu: 9000,
  },
  {
    label: 'SINGLE VIP port with a second subnet (vip_net_info): fixed IP with gateway and host route',
    kind: 'vip',
    name: 'eth1',
    topology: 'SINGLE',
    vips: [v4('10.0.0.10')],
    vrrp_ip: '10.0.0.5',
    mtu: null,
    fixed_ips: [
      { ip_address: '10.1.0.7', subnet_cidr: '10.1.0.0/24', gateway: '10.1.0.1', host_routes: [{ destination: '198.51.100.0/24', nexthop: '10.1.0.254' }] },
    ],
  },
  {
    label: 'member port with fixed IPs of both families',
    kind: 'port',
    name: 'eth2',
    mtu: 1500,
    fixed_ips: [
      { ip_address: '10.88.0.5', subnet_cidr: '10.88.0.0/24', host_routes: [{ destination: '203.0.113.0/24', nexthop: '10.88.0.254' }] },
      { ip_address: '2001:db8:88::5', subnet_cidr: '2001:db8:88::/64', host_routes: [] },
    ],
  },
  { label: 'member port without fixed IPs', kind: 'port', name: 'eth3', fixed_ips: [], mtu: null },
  {
    label: 'SR-IOV VIP port (vnic_type direct)',
    kind: 'vip',
    name: 'eth1',
    topology: 'SINGLE',
    vips: [v4('10.0.0.10')],
    vrrp_ip: '10.0.0.5',
    mtu: 1500,
    is_sriov: true,
  },
  {
    label: 'SR-IOV member port',
    kind: 'port',
    name: 'eth4',
    mtu: null,
    is_sriov: true,
    fixed_ips: [{ ip_address: '10.89.0.5', subnet_cidr: '10.89.0.0/24', host_routes: [] }],
  },
  { label: 'loopback', kind: 'lo' },
];

/** Controllers from 16 on send is_sriov in every plug body (false unless vnic_type is direct). */
function ours(c: Case): InterfaceFile {
  if (c.kind === 'lo') return loopbackInterfaceFile();
  if (c.kind === 'port') return backendInterfaceFile({ name: c.name, fixedIps: c.fixed_ips, mtu: c.mtu, isSriov: c.is_sriov ?? false });
  return vipInterfaceFile({
    name: c.name,
    vips: c.vips,
    vrrpIp: c.vrrp_ip,
    fixedIps: c.fixed_ips ?? [],
    topology: c.topology,
    mtu: c.mtu,
    isSriov: c.is_sriov ?? false,
  });
}

/** Addresses written exploded, with the prefix kept. */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        ['address', 'gateway', 'prefsrc', 'src', 'dst'].includes(k) && typeof v === 'string'
          ? v
              .split('/')
              .map((part, i) => (i === 0 ? explode(part) : part))
              .join('/')
          : normalize(v),
      ]),
    );
  }
  return value;
}

type TheirFile = Omit<InterfaceFile, 'if_type' | 'is_sriov'> & { if_type?: string; is_sriov?: boolean };

for (const release of OCTAVIAS) {
  const [cmd, argv] = octaviaPython(release, OCTAVIA);
  const octavia = JSON.parse(execFileSync(cmd, argv, { input: JSON.stringify(CASES), encoding: 'utf8' })) as TheirFile[];
  const newer = release.label !== 'octavia-11';

  CASES.forEach((c, i) => {
    test(`${c.label}: the file ${release.label} writes`, () => {
      const mine = ours(c);
      const theirs = octavia[i]!;
      const { if_type: type, is_sriov: sriov, scripts, ...comparable } = mine;
      const { scripts: _theirScripts, ...theirComparable } = theirs;
      assert.equal(normalize(newer ? { ...comparable, if_type: type, is_sriov: sriov } : comparable), normalize(theirComparable));
      assert.equal(scripts, { up: [], down: [] });
      const families = c.kind === 'lo' ? [] : interfaceFamilies(mine);
      const suffix = newer && sriov ? ' sriov' : '';
      const expected = (verb: string) => families.map((f) => `octavia-agent-lvs-masquerade ${verb} ipv${f} ${mine.name}${suffix}`).sort();
      assert.equal(theirs.scripts.up.map((s) => s.command).sort(), expected('add'), 'the families the agent masquerades');
      assert.equal(theirs.scripts.down.map((s) => s.command).sort(), expected('delete'));
    });
  });
}

test.run();
