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

/** Host routes as Octavia writes them: the next hop is on the link (onlink), optionally in another table. */
function hostRoutes(routes: HostRoute[] | undefined, table?: number): InterfaceRoute[] {
  return (routes ?? []).map((hr) => ({
    dst: subnetDst(hr.destination),
    gateway: explode(hr.nexthop),
    flags: ['onlink'],
    ...(table ? { table } : {}),
  }));
}

/** lo.json, written at every agent start as Octavia's agent does (16 and later record is_sriov false there too). */
export function loopbackInterfaceFile(): InterfaceFile {
  return {
    name: 'lo',
    if_type: 'lo',
    addresses: [{ address: '127.0.0.1', prefixlen: 8 }],
    routes: [],
    rules: [],
    scripts: { up: [], down: [] },
    is_sriov: false,
  };
}

export function vipInterfaceFile(opts: {
  name: string;
  vips: VipSubnet[];
  vrrpIp: string | null;
  fixedIps: FixedIp[];
  topology: 'SINGLE' | 'ACTIVE_STANDBY';
  mtu: number | null;
  isSriov: boolean | null;
}): InterfaceFile {
  const single = opts.topology === 'SINGLE';
  const addresses: InterfaceAddress[] = [];
  const routes: InterfaceRoute[] = [];
  const rules: InterfaceRule[] = [];
  const families = new Set(opts.vips.map((v) => parseCidr(v.subnet_cidr).family));
  const first = opts.vips[0];
  if (opts.vrrpIp && first) {
    addresses.push({ address: explode(opts.vrrpIp), prefixlen: parseCidr(first.subnet_cidr).prefix });
  } else {
    // Without a VRRP address the interface configures itself, per family present.
    if (families.has(4)) addresses.push({ dhcp: true });
    if (families.has(6)) addresses.push({ ipv6auto: true });
  }
  // SINGLE topology: traffic sourced from a VIP (or fixed IP) leaves through
  // table 1 too, so replies go out of the interface they came in on.
  const withTable = (r: InterfaceRoute): InterfaceRoute[] => (single ? [r, { ...r, table: VIP_TABLE }] : [r]);
  for (const vip of opts.vips) {
    const family = parseCidr(vip.subnet_cidr).family;
    const address = explode(vip.ip_address);
    addresses.push({ address, prefixlen: family === 4 ? 32 : 128, octavia_owned: single });
    if (vip.gateway) routes.push(...withTable({ dst: defaultDst(family), gateway: explode(vip.gateway), flags: ['onlink'] }));
    routes.push({ dst: subnetDst(vip.subnet_cidr), scope: 'link' });
    if (single) routes.push({ dst: subnetDst(vip.subnet_cidr), prefsrc: address, scope: 'link', table: VIP_TABLE });
    if (single) rules.push({ src: address, src_len: family === 4 ? 32 : 128, table: VIP_TABLE });
    routes.push(...hostRoutes(vip.host_routes), ...hostRoutes(vip.host_routes, VIP_TABLE));
  }
  for (const ip of opts.fixedIps) {
    const c = parseCidr(ip.subnet_cidr);
    addresses.push({ address: explode(ip.ip_address), prefixlen: c.prefix });
    if (ip.gateway) routes.push(...withTable({ dst: defaultDst(c.family), gateway: explode(ip.gateway), flags: ['onlink'] }));
    routes.push(...hostRoutes(ip.host_routes));
  }
  return {
    name: opts.name,
    if_type: 'vip',
    addresses,
    routes,
    rules,
    scripts: { up: [], down: [] },
    is_sriov: opts.isSriov,
    ...(opts.mtu ? { mtu: opts.mtu } : {}),
  };
}

export function backendInterfaceFile(opts: { name: string; fixedIps: FixedIp[]; mtu: number | null; isSriov: boolean | null }): InterfaceFile {
  const addresses: InterfaceAddress[] = [];
  const routes: InterfaceRoute[] = [];
  for (const ip of opts.fixedIps) {
    addresses.push({ address: explode(ip.ip_address), prefixlen: parseCidr(ip.subnet_cidr).prefix });
    routes.push(...hostRoutes(ip.host_routes));
  }
  if (opts.fixedIps.length === 0) addresses.push({ dhcp: true, ipv6auto: true });
  return {
    name: opts.name,
    if_type: 'backend',
    addresses,
    routes,
    rules: [],
    scripts: { up: [], down: [] },
    is_sriov: opts.isSriov,
    ...(opts.mtu ? { mtu: opts.mtu } : {}),
  };
}

/**
 * The IP families an interface carries traffic for (its addresses, DHCP for
 * IPv4, autoconfiguration for IPv6): the families its LVS masquerade covers.
 */
export function interfaceFamilies(file: InterfaceFile): (4 | 6)[] {
  const out = new Set<4 | 6>();
  for (const a of file.addresses) {
    if (a.address) out.add(parseCidr(`${a.address}/${a.prefixlen ?? 0}`).family);
    if (a.dhcp) out.add(4);
    if (a.ipv6auto) out.add(6);
  }
  return [...out].sort();
}
