// Pool and member statuses of an LVS (UDP/SCTP) listener for the heartbeat,
// from its keepalived config and the kernel's IPVS table (/proc/net/ip_vs),
// by Octavia's rules. Pure.

export interface LvsConfig {
  poolId: string | null;
  /** Virtual addresses "ip port" of the listener. */
  vips: string[];
  members: { id: string; address: string; port: number; disabled: boolean }[];
  /** A health monitor is configured (MISC_CHECK, HTTP_GET or TCP_CHECK). */
  monitored: boolean;
}

export function parseLvsConfig(text: string): LvsConfig {
  const cfg: LvsConfig = { poolId: null, vips: [], members: [], monitored: /\b(MISC_CHECK|HTTP_GET|TCP_CHECK)\b/.test(text) };
  const lines = text.split('\n');
  let inGroup = false;
  let pending: string | null = null;
  for (const raw of lines) {
    const line = raw.trim();
    let m: RegExpExecArray | null;
    if ((m = /^# Configuration for Pool (\S+)/.exec(line))) cfg.poolId = m[1]!;
    else if ((m = /^# Configuration for Member (\S+)/.exec(line))) pending = m[1]!;
    else if ((m = /^# Member (\S+) is disabled/.exec(line))) cfg.members.push({ id: m[1]!, address: '', port: 0, disabled: true });
    else if (/^virtual_server_group \S+ \{/.test(line)) inGroup = true;
    else if (inGroup && line === '}') inGroup = false;
    else if (inGroup && (m = /^(\S+)\s+(\d+)$/.exec(line))) cfg.vips.push(`${m[1]} ${m[2]}`);
    else if (pending && (m = /^real_server\s+(\S+)\s+(\d+)/.exec(line))) {
      cfg.members.push({ id: pending, address: m[1]!, port: Number(m[2]), disabled: false });
      pending = null;
    }
  }
  return cfg;
}

export interface IpvsRealServer {
  address: string;
  port: number;
  weight: number;
}

function hexAddress(hex: string): string {
  if (/^[0-9A-Fa-f]{8}$/.test(hex)) return [0, 2, 4, 6].map((i) => parseInt(hex.slice(i, i + 2), 16)).join('.');
  return hex.replace(/^\[|\]$/g, '').toLowerCase();
}

function endpoint(text: string): { address: string; port: number } {
  const i = text.lastIndexOf(':');
  return { address: hexAddress(text.slice(0, i)), port: parseInt(text.slice(i + 1), 16) };
}

/** /proc/net/ip_vs -> real servers per virtual service ("ip port"). */
export function parseIpVs(text: string): Map<string, IpvsRealServer[]> {
  const services = new Map<string, IpvsRealServer[]>();
  let current: IpvsRealServer[] | null = null;
  for (const line of text.split('\n')) {
    const svc = /^(TCP|UDP|SCTP)\s+(\S+)\s/.exec(line);
    if (svc) {
      const { address, port } = endpoint(svc[2]!);
      current = [];
      services.set(`${address} ${port}`, current);
      continue;
    }
    const rs = /^\s+->\s+(\S+)\s+\S+\s+(\d+)/.exec(line);
    if (rs && current && !rs[1]!.startsWith('RemoteAddress')) {
      const { address, port } = endpoint(rs[1]!);
      current.push({ address, port, weight: Number(rs[2]) });
    }
  }
  return services;
}

/**
 * The pool entry Octavia's health manager expects (keyed by the bare pool id).
 * `restarting`: the config is newer than the checker's pid file, so members
 * missing from IPVS are still being brought up.
 */
export function lvsPoolStatus(
  cfg: LvsConfig,
  ipvs: Map<string, IpvsRealServer[]>,
  restarting: boolean,
): { status: string; members: Record<string, string> } | null {
  if (!cfg.poolId) return null;
  const real = cfg.vips.flatMap((v) => ipvs.get(v) ?? []);
  const members: Record<string, string> = {};
  const missing = cfg.monitored ? (restarting ? 'RESTARTING' : 'DOWN') : 'no check';
  for (const m of cfg.members) {
    if (m.disabled) {
      members[m.id] = 'MAINT';
      continue;
    }
    const inIpvs = real.find((r) => r.address === m.address && r.port === m.port);
    if (!inIpvs) members[m.id] = restarting ? 'RESTARTING' : 'DOWN';
    else if (inIpvs.weight === 0) members[m.id] = 'DRAIN';
    else members[m.id] = cfg.monitored ? 'UP' : 'no check';
  }
  // No real server at all: without a monitor keepalived simply has none configured yet.
  if (real.length === 0) for (const m of cfg.members) if (!m.disabled) members[m.id] = missing;
  return { status: cfg.monitored && real.length === 0 ? 'DOWN' : 'UP', members };
}
