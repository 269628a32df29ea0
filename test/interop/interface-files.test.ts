// Interface files at parity with Octavia 11's agent (python3-octavia's
// VIPInterfaceFile, PortInterfaceFile and plug_lo) for the same plug
// requests. Differences by design, and only these: our files carry Octavia
// master's if_type and is_sriov; IPv6 is written exploded everywhere; and the
// LVS masquerade is done by the agent (agent/net/masquerade.ts) instead of
// script lines, so Octavia's scripts must name exactly the IP families the
// agent masquerades.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  backendInterfaceFile, interfaceFamilies, loopbackInterfaceFile, vipInterfaceFile,
  type FixedIp, type InterfaceFile, type VipSubnet,
} from '../../agent/net/interface-file.js';
import { explode } from '../../agent/net/ip.js';

const OCTAVIA = fileURLToPath(new URL('../../../test/interop/octavia_interface_files.py', import.meta.url));

type Topology = 'SINGLE' | 'ACTIVE_STANDBY';
type Case =
  | { label: string; kind: 'vip'; name: string; topology: Topology; vips: VipSubnet[]; vrrp_ip: string | null; fixed_ips?: FixedIp[]; mtu: number | null }
  | { label: string; kind: 'port'; name: string; fixed_ips: FixedIp[]; mtu: number | null }
  | { label: string; kind: 'lo' };

const v4 = (ip: string, gateway: string | null = '10.0.0.1', host_routes = [{ destination: '192.0.2.0/24', nexthop: '10.0.0.254' }]): VipSubnet =>
  ({ ip_address: ip, subnet_cidr: '10.0.0.0/24', gateway, host_routes });
const v6 = (ip: string, gateway: string | null = '2001:db8:1::1'): VipSubnet =>
  ({ ip_address: ip, subnet_cidr: '2001:db8:1::/64', gateway, host_routes: [{ destination: '2001:db8:99::/48', nexthop: '2001:db8:1::fe' }] });

const CASES: Case[] = [
  { label: 'SINGLE IPv4 VIP with VRRP address, gateway, host route, MTU', kind: 'vip', name: 'eth1', topology: 'SINGLE', vips: [v4('10.0.0.10')], vrrp_ip: '10.0.0.5', mtu: 1450 },
  { label: 'ACTIVE_STANDBY IPv4 VIP (keepalived owns the VIP)', kind: 'vip', name: 'eth1', topology: 'ACTIVE_STANDBY', vips: [v4('10.0.0.10')], vrrp_ip: '10.0.0.5', mtu: null },
  { label: 'SINGLE dual-stack without VRRP address: DHCP and autoconfiguration', kind: 'vip', name: 'eth1', topology: 'SINGLE', vips: [v4('10.0.0.10', null, []), v6('2001:db8:1::10', null)], vrrp_ip: null, mtu: null },
  { label: 'ACTIVE_STANDBY IPv6 VIP with VRRP address', kind: 'vip', name: 'eth1', topology: 'ACTIVE_STANDBY', vips: [v6('2001:db8:1::10')], vrrp_ip: '2001:db8:1::5', mtu: 9000 },
  {
    label: 'SINGLE VIP port with a second subnet (vip_net_info): fixed IP with gateway and host route', kind: 'vip', name: 'eth1', topology: 'SINGLE',
    vips: [v4('10.0.0.10')], vrrp_ip: '10.0.0.5', mtu: null,
    fixed_ips: [{ ip_address: '10.1.0.7', subnet_cidr: '10.1.0.0/24', gateway: '10.1.0.1', host_routes: [{ destination: '198.51.100.0/24', nexthop: '10.1.0.254' }] }],
  },
  {
    label: 'member port with fixed IPs of both families', kind: 'port', name: 'eth2', mtu: 1500,
    fixed_ips: [
      { ip_address: '10.88.0.5', subnet_cidr: '10.88.0.0/24', host_routes: [{ destination: '203.0.113.0/24', nexthop: '10.88.0.254' }] },
      { ip_address: '2001:db8:88::5', subnet_cidr: '2001:db8:88::/64', host_routes: [] },
    ],
  },
  { label: 'member port without fixed IPs', kind: 'port', name: 'eth3', fixed_ips: [], mtu: null },
  { label: 'loopback', kind: 'lo' },
];

function ours(c: Case): InterfaceFile {
  if (c.kind === 'lo') return loopbackInterfaceFile();
  if (c.kind === 'port') return backendInterfaceFile({ name: c.name, fixedIps: c.fixed_ips, mtu: c.mtu, isSriov: null });
  return vipInterfaceFile({ name: c.name, vips: c.vips, vrrpIp: c.vrrp_ip, fixedIps: c.fixed_ips ?? [], topology: c.topology, mtu: c.mtu, isSriov: null });
}

/** Addresses written exploded, with the prefix kept. */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, ['address', 'gateway', 'prefsrc', 'src', 'dst'].includes(k) && typeof v === 'string'
      ? v.split('/').map((part, i) => (i === 0 ? explode(part) : part)).join('/') : normalize(v)]));
  }
  return value;
}

const octavia = JSON.parse(execFileSync('/usr/bin/python3', [OCTAVIA], { input: JSON.stringify(CASES), encoding: 'utf8' })) as
  (Omit<InterfaceFile, 'if_type' | 'is_sriov'> & { scripts: { up: { command: string }[]; down: { command: string }[] } })[];

CASES.forEach((c, i) => {
  test(`${c.label}: the file Octavia 11 writes`, () => {
    const mine = ours(c);
    const theirs = octavia[i]!;
    const { if_type: _type, is_sriov: _sriov, scripts, ...comparable } = mine;
    const { scripts: _theirScripts, ...theirComparable } = theirs;
    assert.equal(normalize(comparable), normalize(theirComparable));
    assert.equal(scripts, { up: [], down: [] });
    const families = c.kind === 'lo' ? [] : interfaceFamilies(mine);
    const expected = (verb: string) => families.map((f) => `octavia-agent-lvs-masquerade ${verb} ipv${f} ${mine.name}`).sort();
    assert.equal(theirs.scripts.up.map((s) => s.command).sort(), expected('add'), 'the families the agent masquerades');
    assert.equal(theirs.scripts.down.map((s) => s.command).sort(), expected('delete'));
  });
});

test.run();
