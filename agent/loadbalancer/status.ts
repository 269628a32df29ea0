// Operating status of a load balancer's listeners, pools and members, read
// from haproxy the way the heartbeat reads it and mapped to Octavia's
// operating statuses the way the health manager maps heartbeat values, and
// haproxy's supervision as GET /2.0/loadbalancers/<id>/status shows it. Pure.
import { AWAITING_CHECK } from '../model/admission.js';
import type { Supervision } from '../haproxy/process/supervision.js';
import type { UnitState } from '../haproxy/process/systemd-unit.js';
import { buildHeartbeat, poolStatuses } from '../health/message.js';
import type { StatRow } from '../haproxy/process/stats.js';
import type { LoadBalancerSpec } from '../model/spec/types.js';

export interface LoadBalancerStatus {
  id: string;
  listeners: { id: string; operating_status: string; haproxy_status: string }[];
  pools: {
    id: string;
    listener_id: string;
    operating_status: string;
    haproxy_status: string;
    members: { id: string; operating_status: string; haproxy_status: string }[];
  }[];
}

const LISTENER: Record<string, string> = { OPEN: 'ONLINE', FULL: 'DEGRADED' };
const POOL: Record<string, string> = { UP: 'ONLINE', DOWN: 'ERROR' };
// A member or pool still being admitted (admission.ts) is OFFLINE: not serving, nothing failed.
const MEMBER: Record<string, string> = {
  UP: 'ONLINE',
  DOWN: 'ERROR',
  DRAIN: 'DRAINING',
  MAINT: 'OFFLINE',
  'no check': 'NO_MONITOR',
  [AWAITING_CHECK]: 'OFFLINE',
};

/** haproxy prints transitions ("UP 1/2", "DOWN 1/2"): the first word is the state the heartbeat reports. */
const settled = (status: string) => (status.startsWith('no check') ? 'no check' : status.split(' ')[0]!);

const LVS: Record<string, string> = { ACTIVE: 'ONLINE', OFFLINE: 'OFFLINE', ERROR: 'ERROR' };

/** `lvs`: the keepalived state of each UDP/SCTP listener (ACTIVE, OFFLINE, ERROR). */
export function loadBalancerStatus(spec: LoadBalancerSpec, rows: StatRow[], lvs: Record<string, string> = {}): LoadBalancerStatus {
  const { message } = buildHeartbeat(spec.id, 0, rows, {});
  const out: LoadBalancerStatus = { id: spec.id, listeners: [], pools: [] };
  for (const l of spec.listeners) {
    const state = lvs[l.id];
    if (state !== undefined) {
      out.listeners.push({ id: l.id, haproxy_status: `keepalived ${state}`, operating_status: LVS[state] ?? 'OFFLINE' });
      continue;
    }
    const seen = message.listeners[l.id]?.status;
    out.listeners.push({ id: l.id, haproxy_status: seen ?? 'absent', operating_status: seen ? (LISTENER[seen] ?? 'OFFLINE') : 'OFFLINE' });
  }
  for (const [key, pool] of Object.entries(poolStatuses(rows))) {
    const [poolId, listenerId] = key.split(':') as [string, string];
    out.pools.push({
      id: poolId,
      listener_id: listenerId,
      haproxy_status: pool.status,
      operating_status: POOL[settled(pool.status)] ?? 'OFFLINE',
      members: Object.entries(pool.members).map(([id, s]) => ({ id, haproxy_status: s, operating_status: MEMBER[settled(s)] ?? 'OFFLINE' })),
    });
  }
  return out;
}

/** The status's `haproxy`: systemd's unit state, or the direct supervisor's restarts. */
export type SupervisionStatus = { running: boolean; stopped_by_signal: boolean } & (
  | { process_manager: 'systemd'; unit: UnitState }
  | {
      process_manager: 'direct';
      restart: { state: 'running' | 'stopped' | 'waiting' | 'dead'; restarts_in_a_row: number; next_restart_in_s: number; last_error: string | null };
    }
);

export function supervisionStatus(s: Supervision): SupervisionStatus {
  const base = { running: s.running, stopped_by_signal: s.stoppedBySignal };
  if (s.processManager === 'systemd') return { process_manager: 'systemd', ...base, unit: s.unit };
  const r = s.restarts;
  return {
    process_manager: 'direct',
    ...base,
    restart: {
      state: s.running ? 'running' : s.stoppedOnPurpose ? 'stopped' : r.state === 'waiting' ? 'waiting' : 'dead',
      restarts_in_a_row: r.restartsInARow,
      next_restart_in_s: r.nextRestartInS,
      last_error: r.lastError,
    },
  };
}
