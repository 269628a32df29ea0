// Interface files (<agent_server_network_dir>/<ifname>.json) in Octavia's
// format: what addresses, routes and rules an interface of the amphora
// namespace must have. Built here (pure); applied by amphora-interface.ts.
import { explode, parseCidr } from './ip.js';

export interface InterfaceAddress {
  address?: string;
  prefixlen?: number;
  /** false: keepalived owns this address (ACTIVE_STANDBY VIPs); never added by the agent. */
  octavia_owned?: boolean;
  dhcp?: boolean;
  ipv6auto?: boolean;
}

export interface InterfaceRoute {
  dst: string;
  gateway?: string;
  prefsrc?: string;
  scope?: 'link';
  table?: number;
  flags?: ['onlink'];
}

export interface InterfaceRule {
  src: string;
  src_len: number;
  table: number;
}

export interface InterfaceFile {
  name: string;
  if_type: 'lo' | 'vip' | 'backend';
  addresses: InterfaceAddress[];
  routes: InterfaceRoute[];
  rules: InterfaceRule[];
  scripts: { up: { command: string }[]; down: { command: string }[] };
  is_sriov?: boolean | null;
  mtu?: number;
}

export interface HostRoute {
  destination: string;
  nexthop: string;
}

export interface VipSubnet {
  ip_address: string;
  subnet_cidr: string;
  gateway: string | null;
  host_routes: HostRoute[];
}

export interface FixedIp {
  ip_address: string;
  subnet_cidr: string;
  gateway?: string | null;
  host_routes?: HostRoute[];
}

/** Policy routing table for traffic sourced from a VIP (SINGLE topology). */
const VIP_TABLE = 1;

const defaultDst = (family: 4 | 6) => (family === 4 ? '0.0.0.0/0' : '::/0');

function subnetDst(cidr: string): string {
  const c = parseCidr(cidr);
  return `${explode(c.address)}/${c.prefix}`;
}

export function vipInterfaceFile(opts: {
  name: string; vips: VipSubnet[]; vrrpIp: string | null; fixedIps: FixedIp[];
  topology: 'SINGLE' | 'ACTIVE_STANDBY'; mtu: number | null; isSriov: boolean | null;
}): InterfaceFile {
  const single = opts.topology === 'SINGLE';
  const addresses: InterfaceAddress[] = [];
  const routes: InterfaceRoute[] = [];
  const rules: InterfaceRule[] = [];
  const first = opts.vips[0];
  if (opts.vrrpIp && first) {
    addresses.push({ address: explode(opts.vrrpIp), prefixlen: parseCidr(first.subnet_cidr).prefix });
  } else if (first) {
    addresses.push(parseCidr(first.subnet_cidr).family === 4 ? { dhcp: true } : { ipv6auto: true });
  }
  for (const vip of opts.vips) {
    const family = parseCidr(vip.subnet_cidr).family;
    const address = explode(vip.ip_address);
    addresses.push({ address, prefixlen: family === 4 ? 32 : 128, octavia_owned: single });
    const table = (r: InterfaceRoute): InterfaceRoute[] => (single ? [r, { ...r, table: VIP_TABLE }] : [r]);
    if (vip.gateway) routes.push(...table({ dst: defaultDst(family), gateway: explode(vip.gateway), flags: ['onlink'] }));
    routes.push({ dst: subnetDst(vip.subnet_cidr), scope: 'link' });
    if (single) routes.push({ dst: subnetDst(vip.subnet_cidr), prefsrc: address, scope: 'link', table: VIP_TABLE });
    for (const hr of vip.host_routes ?? []) routes.push(...table({ dst: subnetDst(hr.destination), gateway: explode(hr.nexthop) }));
    if (single) rules.push({ src: address, src_len: family === 4 ? 32 : 128, table: VIP_TABLE });
  }
  for (const ip of opts.fixedIps) {
    const c = parseCidr(ip.subnet_cidr);
    addresses.push({ address: explode(ip.ip_address), prefixlen: c.prefix });
    for (const hr of ip.host_routes ?? []) routes.push({ dst: subnetDst(hr.destination), gateway: explode(hr.nexthop) });
  }
  return {
    name: opts.name, if_type: 'vip', addresses, routes, rules, scripts: { up: [], down: [] },
    is_sriov: opts.isSriov, ...(opts.mtu ? { mtu: opts.mtu } : {}),
  };
}

export function backendInterfaceFile(opts: { name: string; fixedIps: FixedIp[]; mtu: number | null; isSriov: boolean | null }): InterfaceFile {
  const addresses: InterfaceAddress[] = [];
  const routes: InterfaceRoute[] = [];
  for (const ip of opts.fixedIps) {
    addresses.push({ address: explode(ip.ip_address), prefixlen: parseCidr(ip.subnet_cidr).prefix });
    for (const hr of ip.host_routes ?? []) routes.push({ dst: subnetDst(hr.destination), gateway: explode(hr.nexthop) });
  }
  if (opts.fixedIps.length === 0) addresses.push({ dhcp: true, ipv6auto: true });
  return {
    name: opts.name, if_type: 'backend', addresses, routes, rules: [], scripts: { up: [], down: [] },
    is_sriov: opts.isSriov, ...(opts.mtu ? { mtu: opts.mtu } : {}),
  };
}
