// Spec -> the data keepalived/lvs.cfg.njk lays out: one keepalived LVS config
// per UDP or SCTP listener, as Octavia's LVS templater makes them. Pure.
import { isIPv6 } from 'node:net';
import { udpCheckScript } from '../config/layout.js';
import { LVS_PROTOCOLS, type ListenerSpec, type LoadBalancerSpec, type PoolSpec } from '../model/spec/types.js';
import { expectedCodes } from './haproxy-words.js';
import { defaultPoolOf, poolsById } from '../model/spec/pools.js';
import { granularityFor } from '../model/spec/netmask.js';
import type { RenderSettings } from './settings.js';

export interface RealServerView {
  id: string;
  enabled: boolean;
  address: string;
  port: number;
  weight: number;
  /** The address and port the check probes (monitor_* when given). */
  checkAddress: string;
  checkPort: number;
}

export interface VirtualServerView {
  ipVersion: 4 | 6;
  vips: string[];
  persistenceGranularity: string;
  members: RealServerView[];
  /**
   * The virtual server is written only when it has a real server to send to
   * (pool enabled, an enabled member of its family). keepalived ignores one
   * without, and `keepalived -t` calls the whole config invalid; left out,
   * only its comments remain (status reads them).
   */
  hasRealServers: boolean;
}

export interface LvsView {
  lbId: string;
  listenerId: string;
  /** Virtual servers are written only when this is set (LB and listener enabled, a default pool). */
  active: boolean;
  listenerEnabled: boolean;
  namespace: string | null;
  port: number;
  protocol: string;
  algorithm: string;
  connectionLimit: number;
  persistence: { timeout: number } | null;
  poolId: string;
  poolEnabled: boolean;
  monitor: {
    id: string;
    type: string;
    delay: number;
    timeout: number;
    fall: number;
    udpCheckScript: string;
    urlPath: string;
    codes: number[];
  } | null;
  groups: VirtualServerView[];
}

const ALGORITHM: Record<string, string> = { ROUND_ROBIN: 'wrr', LEAST_CONNECTIONS: 'lc', SOURCE_IP: 'sh' };

export function lvsViews(spec: LoadBalancerSpec, settings: RenderSettings): LvsView[] {
  const pools = poolsById(spec);
  return spec.listeners.filter((l) => LVS_PROTOCOLS.includes(l.protocol)).map((l) => lvsView(spec, settings, l, defaultPoolOf(l, pools)));
}

function lvsView(spec: LoadBalancerSpec, settings: RenderSettings, l: ListenerSpec, pool: PoolSpec | undefined): LvsView {
  const vips = [spec.vip_address, ...spec.additional_vips.map((v) => v.ip_address)];
  const hm = pool?.healthmonitor && pool.healthmonitor.admin_state_up !== false ? pool.healthmonitor : undefined;
  const sp = pool?.session_persistence?.type === 'SOURCE_IP' ? pool.session_persistence : undefined;
  const groups: VirtualServerView[] = [];
  for (const ipVersion of [4, 6] as const) {
    const inFamily = (ip: string) => (isIPv6(ip) ? 6 : 4) === ipVersion;
    const groupVips = vips.filter(inFamily);
    if (groupVips.length === 0) continue;
    const members = (pool?.members ?? [])
      .filter((m) => inFamily(m.address))
      .map((m) => ({
        id: m.id,
        enabled: m.admin_state_up !== false,
        address: m.address,
        port: m.protocol_port,
        weight: m.weight,
        checkAddress: m.monitor_address ?? m.address,
        checkPort: m.monitor_port ?? m.protocol_port,
      }));
    groups.push({
      ipVersion,
      vips: groupVips,
      persistenceGranularity: granularityFor(sp?.persistence_granularity, ipVersion),
      members,
      hasRealServers: pool?.admin_state_up !== false && members.some((m) => m.enabled),
    });
  }
  return {
    lbId: spec.id,
    listenerId: l.id,
    active: spec.admin_state_up !== false && l.admin_state_up !== false && pool !== undefined,
    listenerEnabled: l.admin_state_up !== false,
    namespace: settings.networkNamespace,
    port: l.protocol_port,
    protocol: l.protocol,
    algorithm: ALGORITHM[pool?.lb_algorithm ?? 'ROUND_ROBIN']!,
    connectionLimit: l.connection_limit !== undefined && l.connection_limit > 0 ? l.connection_limit : 0,
    persistence: sp ? { timeout: sp.persistence_timeout ?? 360 } : null,
    poolId: pool?.id ?? '',
    poolEnabled: pool?.admin_state_up !== false,
    monitor: hm
      ? {
          id: hm.id ?? '',
          type: hm.type,
          delay: hm.delay,
          timeout: hm.timeout,
          fall: hm.max_retries_down,
          udpCheckScript: udpCheckScript(settings.basePath),
          urlPath: hm.url_path ?? '/',
          codes: expectedCodes(hm.expected_codes ?? '200'),
        }
      : null,
    groups,
  };
}
