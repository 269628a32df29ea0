// Neutron's half of the box's cloud (test/octavia-box/PROTOCOL.md, Objects):
// the two fixed networks and subnets, ports with Neutron-like MACs and
// addresses allocated from each subnet's pool, and the errors the protocol
// answers with. No links here: cloud.ts plugs ports into amphorae.
import { randomBytes, randomUUID } from 'node:crypto';
import { MGMT_PREFIX, TENANT_PREFIX } from './box-network.js';

export type ErrorType = 'NotFound' | 'Conflict' | 'BadRequest' | 'Internal';

/** An error the protocol answers with ({"error": {type, message}}). */
export class CloudError extends Error {
  constructor(
    readonly type: ErrorType,
    message: string,
  ) {
    super(message);
  }
}

export const bad = (message: string) => new CloudError('BadRequest', message);
export const notFound = (message: string) => new CloudError('NotFound', message);
export const conflict = (message: string) => new CloudError('Conflict', message);

export interface Network {
  id: string;
  name: string;
  subnets: string[];
  mtu: number;
  provider_network_type: 'flat';
}

export interface Subnet {
  id: string;
  network_id: string;
  name: string;
  cidr: string;
  gateway_ip: string | null;
  ip_version: 4;
  host_routes: { destination: string; nexthop: string }[];
  dns_nameservers: string[];
}

export interface FixedIp {
  subnet_id: string;
  ip_address: string;
}

export interface AddressPair {
  ip_address: string;
  mac_address: string;
}

export interface Port {
  id: string;
  name: string;
  network_id: string;
  mac_address: string;
  fixed_ips: FixedIp[];
  device_id: string;
  device_owner: string;
  admin_state_up: boolean;
  status: 'ACTIVE' | 'DOWN';
  allowed_address_pairs: AddressPair[];
  security_group_ids: string[];
  qos_policy_id: string | null;
  vnic_type: string;
}

/**
 * Fixed ids (UUIDs: Octavia's API takes vip_subnet_id and vip_network_id only
 * as UUIDs); every method also takes a network's or subnet's name as its id.
 */
export const MGMT_NETWORK_ID = 'aa7b0000-0000-4000-8000-000000000001';
export const TENANT_NETWORK_ID = 'aa7b0000-0000-4000-8000-000000000002';
export const MGMT_SUBNET_ID = 'aa7b0000-0000-4000-8000-000000000011';
export const TENANT_SUBNET_ID = 'aa7b0000-0000-4000-8000-000000000012';

/** Per subnet: its /24 prefix and the first host number the pool hands out (PROTOCOL.md). */
const POOLS: Record<string, { prefix: string; first: number }> = {
  [MGMT_SUBNET_ID]: { prefix: MGMT_PREFIX, first: 10 },
  [TENANT_SUBNET_ID]: { prefix: TENANT_PREFIX, first: 100 },
};

const clone = <T>(v: T): T => structuredClone(v);

function isUuidLike(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0;
}

export class NetworkState {
  readonly networks = new Map<string, Network>();
  readonly subnets = new Map<string, Subnet>();
  readonly ports = new Map<string, Port>();
  private readonly macs = new Set<string>();

  /** `reserved`: addresses in use outside Neutron's knowledge (the box's bridges and members). */
  constructor(private readonly reserved: () => string[]) {
    const add = (net: Network, sub: Subnet) => {
      this.networks.set(net.id, net);
      this.subnets.set(sub.id, sub);
    };
    add(
      { id: MGMT_NETWORK_ID, name: 'mgmt', subnets: [MGMT_SUBNET_ID], mtu: 1500, provider_network_type: 'flat' },
      {
        id: MGMT_SUBNET_ID,
        network_id: MGMT_NETWORK_ID,
        name: 'mgmt-subnet',
        cidr: `${MGMT_PREFIX}.0/24`,
        gateway_ip: null,
        ip_version: 4,
        host_routes: [],
        dns_nameservers: [],
      },
    );
    add(
      { id: TENANT_NETWORK_ID, name: 'tenant', subnets: [TENANT_SUBNET_ID], mtu: 1500, provider_network_type: 'flat' },
      {
        id: TENANT_SUBNET_ID,
        network_id: TENANT_NETWORK_ID,
        name: 'tenant-subnet',
        cidr: `${TENANT_PREFIX}.0/24`,
        gateway_ip: `${TENANT_PREFIX}.1`,
        ip_version: 4,
        host_routes: [],
        dns_nameservers: [],
      },
    );
  }

  network(ref: unknown): Network {
    if (!isUuidLike(ref)) throw bad('network id: a non-empty string');
    const n = this.networks.get(ref) ?? [...this.networks.values()].find((x) => x.name === ref);
    if (!n) throw notFound(`network ${ref} not found`);
    return n;
  }

  subnet(ref: unknown): Subnet {
    if (!isUuidLike(ref)) throw bad('subnet id: a non-empty string');
    const s = this.subnets.get(ref) ?? [...this.subnets.values()].find((x) => x.name === ref);
    if (!s) throw notFound(`subnet ${ref} not found`);
    return s;
  }

  port(id: unknown): Port {
    if (!isUuidLike(id)) throw bad('port id: a non-empty string');
    const p = this.ports.get(id);
    if (!p) throw notFound(`port ${id} not found`);
    return p;
  }

  getNetwork(ref: unknown): Network {
    return clone(this.network(ref));
  }

  getSubnet(ref: unknown): Subnet {
    return clone(this.subnet(ref));
  }

  /** The network's bridge in the box. */
  bridgeOf(port: Port): 'br-mgmt' | 'br-tenant' {
    return port.network_id === MGMT_NETWORK_ID ? 'br-mgmt' : 'br-tenant';
  }

  private inUse(): Set<string> {
    const used = new Set(this.reserved());
    for (const p of this.ports.values()) for (const f of p.fixed_ips) used.add(f.ip_address);
    return used;
  }

  /** One address on a subnet: the one asked for (Conflict if taken), else the pool's first free one. */
  private allocate(subnet: Subnet, wanted: string | undefined, taken: Set<string>): string {
    const pool = POOLS[subnet.id]!;
    if (wanted !== undefined) {
      const m = /^(\d+\.\d+\.\d+)\.(\d+)$/.exec(wanted);
      const host = m ? Number(m[2]) : -1;
      if (!m || m[1] !== pool.prefix || host < 1 || host > 254)
        throw bad(`ip_address ${wanted} is not a host address of subnet ${subnet.name} (${subnet.cidr})`);
      if (taken.has(wanted)) throw conflict(`IP address ${wanted} already allocated in subnet ${subnet.id}`);
      return wanted;
    }
    for (let h = pool.first; h <= 254; h++) {
      const a = `${pool.prefix}.${h}`;
      if (!taken.has(a)) return a;
    }
    throw conflict(`no more IP addresses available on subnet ${subnet.id}`);
  }

  private newMac(): string {
    for (;;) {
      const mac = `fa:16:3e:${[...randomBytes(3)].map((b) => b.toString(16).padStart(2, '0')).join(':')}`;
      if (!this.macs.has(mac)) {
        this.macs.add(mac);
        return mac;
      }
    }
  }

  /**
   * Addresses for fixed_ips entries ({subnet_id?, ip_address?}). An empty
   * list: one address from the network's first subnet for a new port
   * (`atLeastOne`), none for an update, as in Neutron.
   */
  private fixedIps(net: Network, asked: unknown, taken: Set<string>, atLeastOne: boolean): FixedIp[] {
    if (!Array.isArray(asked)) throw bad('fixed_ips: a list');
    const fixed: FixedIp[] = [];
    for (const f of asked.length || !atLeastOne ? asked : [{}]) {
      if (typeof f !== 'object' || f === null || Array.isArray(f)) throw bad('fixed_ips: a list of {subnet_id?, ip_address?}');
      const { subnet_id: sid, ip_address: want } = f as Record<string, unknown>;
      if (want !== undefined && typeof want !== 'string') throw bad('fixed_ips[].ip_address: a string');
      const subnet =
        sid !== undefined
          ? this.subnet(sid)
          : want !== undefined
            ? net.subnets.map((s) => this.subnet(s)).find((s) => want.startsWith(`${POOLS[s.id]!.prefix}.`))
            : this.subnet(net.subnets[0]);
      if (!subnet) throw bad(`ip_address ${String(want)} is on no subnet of network ${net.name}`);
      if (subnet.network_id !== net.id) throw bad(`subnet ${subnet.id} is not on network ${net.id}`);
      const address = this.allocate(subnet, want, taken);
      taken.add(address);
      fixed.push({ subnet_id: subnet.id, ip_address: address });
    }
    return fixed;
  }

  createPort(p: Record<string, unknown>): Port {
    allowOnly(
      p,
      [
        'network_id',
        'name',
        'fixed_ips',
        'device_id',
        'device_owner',
        'admin_state_up',
        'security_group_ids',
        'allowed_address_pairs',
        'qos_policy_id',
        'vnic_type',
      ],
      'port.create',
    );
    const net = this.network(p.network_id);
    const fixed = this.fixedIps(net, p.fixed_ips ?? [], this.inUse(), true);
    const mac = this.newMac();
    const port: Port = {
      id: randomUUID(),
      name: optString(p.name, 'name') ?? '',
      network_id: net.id,
      mac_address: mac,
      fixed_ips: fixed,
      device_id: optString(p.device_id, 'device_id') ?? '',
      device_owner: optString(p.device_owner, 'device_owner') ?? '',
      admin_state_up: optBool(p.admin_state_up, 'admin_state_up') ?? true,
      status: 'DOWN',
      allowed_address_pairs: withMac(addressPairs(p.allowed_address_pairs) ?? [], mac),
      security_group_ids: stringList(p.security_group_ids, 'security_group_ids') ?? [],
      qos_policy_id: optString(p.qos_policy_id, 'qos_policy_id') ?? null,
      vnic_type: optString(p.vnic_type, 'vnic_type') ?? 'normal',
    };
    this.ports.set(port.id, port);
    return port;
  }

  /** The fields port.update may change, checked; applied by the caller (which may have links to change too). */
  portUpdate(port: Port, p: Record<string, unknown>): Partial<Port> {
    allowOnly(p, ['id', 'allowed_address_pairs', 'admin_state_up', 'security_group_ids', 'name', 'qos_policy_id', 'fixed_ips'], 'port.update');
    const out: Partial<Port> = {};
    if (p.fixed_ips !== undefined) {
      // The port's own addresses are free to keep.
      const taken = this.inUse();
      for (const f of port.fixed_ips) taken.delete(f.ip_address);
      out.fixed_ips = this.fixedIps(this.network(port.network_id), p.fixed_ips, taken, false);
    }
    const pairs = addressPairs(p.allowed_address_pairs);
    if (pairs) out.allowed_address_pairs = withMac(pairs, port.mac_address);
    const up = optBool(p.admin_state_up, 'admin_state_up');
    if (up !== undefined) out.admin_state_up = up;
    const sgs = stringList(p.security_group_ids, 'security_group_ids');
    if (sgs) out.security_group_ids = sgs;
    const name = optString(p.name, 'name');
    if (name !== undefined) out.name = name;
    if ('qos_policy_id' in p) out.qos_policy_id = p.qos_policy_id === null ? null : optString(p.qos_policy_id, 'qos_policy_id')!;
    return out;
  }

  deletePort(id: string): void {
    const p = this.ports.get(id);
    if (!p) return;
    this.ports.delete(id);
    this.macs.delete(p.mac_address);
  }

  listPorts(p: Record<string, unknown>): Port[] {
    allowOnly(p, ['network_id', 'device_id', 'name'], 'port.list');
    const net = p.network_id === undefined ? undefined : this.network(p.network_id).id;
    const device = optString(p.device_id, 'device_id');
    const name = optString(p.name, 'name');
    return [...this.ports.values()]
      .filter((x) => (net === undefined || x.network_id === net) && (device === undefined || x.device_id === device) && (name === undefined || x.name === name))
      .map(clone);
  }
}

export function allowOnly(p: Record<string, unknown>, keys: string[], method: string): void {
  const extra = Object.keys(p).filter((k) => !keys.includes(k));
  if (extra.length) throw bad(`${method}: unknown parameter(s) ${extra.join(', ')} (known: ${keys.join(', ')})`);
}

export function optString(v: unknown, what: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw bad(`${what}: a string`);
  return v;
}

function optBool(v: unknown, what: string): boolean | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw bad(`${what}: true or false`);
  return v;
}

export function stringList(v: unknown, what: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw bad(`${what}: a list of strings`);
  return [...v] as string[];
}

/** Neutron's default for a pair without a MAC: the port's own. */
function withMac(pairs: AddressPair[], mac: string): AddressPair[] {
  return pairs.map((x) => ({ ip_address: x.ip_address, mac_address: x.mac_address || mac }));
}

function addressPairs(v: unknown): AddressPair[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw bad('allowed_address_pairs: a list of {ip_address, mac_address?}');
  return v.map((x) => {
    const o = x as Record<string, unknown>;
    if (typeof o !== 'object' || o === null || typeof o.ip_address !== 'string') throw bad('allowed_address_pairs: a list of {ip_address, mac_address?}');
    return { ip_address: o.ip_address, mac_address: typeof o.mac_address === 'string' ? o.mac_address : '' };
  });
}
