// The heartbeat message, version 3, from haproxy's `show stat` rows. Pure:
// rows and the previous absolute counters in, message and new counters out.
// Listener stats are deltas since the last message (conns is absolute); a
// counter that went backwards (haproxy restarted) counts from zero.
import { AWAITING_CHECK } from '../model/admission.js';
import type { StatRow } from '../haproxy/process/stats.js';

export interface ListenerCounters {
  bin: number;
  bout: number;
  ereq: number;
  stot: number;
}

export type CounterStore = Record<string, ListenerCounters>;

export interface HeartbeatMessage {
  id: string;
  seq: number;
  ver: 3;
  listeners: Record<string, { status: string; stats: { tx: number; rx: number; conns: number; totconns: number; ereq: number } }>;
  pools: Record<string, { status: string; members: Record<string, string> }>;
}

const delta = (now: number, before: number | undefined) => (before === undefined || now < before ? now : now - before);

export type PoolStatuses = HeartbeatMessage['pools'];

export function buildHeartbeat(amphoraId: string, seq: number, rows: StatRow[], previous: CounterStore): { message: HeartbeatMessage; counters: CounterStore } {
  const message: HeartbeatMessage = { id: amphoraId, seq, ver: 3, listeners: {}, pools: {} };
  const counters: CounterStore = {};
  for (const row of rows) {
    if (row.svname !== 'FRONTEND' || isInternal(row)) continue;
    const before = previous[row.pxname];
    counters[row.pxname] = { bin: row.bin, bout: row.bout, ereq: row.ereq, stot: row.stot };
    message.listeners[row.pxname] = {
      status: row.status,
      stats: {
        tx: delta(row.bout, before?.bout),
        rx: delta(row.bin, before?.bin),
        conns: row.scur,
        totconns: delta(row.stot, before?.stot),
        ereq: delta(row.ereq, before?.ereq),
      },
    };
  }
  // A pool that serves nothing only because its members are being admitted is
  // left out: Octavia then shows it OFFLINE and leaves its members' statuses
  // (and the load balancer's) as they are, instead of ERROR.
  for (const [key, pool] of Object.entries(poolStatuses(rows))) if (pool.status !== AWAITING_CHECK) message.pools[key] = pool;
  return { message, counters };
}

/** Pools ("<pool>:<listener>") with their members' statuses as the heartbeat spells them. */
export function poolStatuses(rows: StatRow[]): PoolStatuses {
  const pools: PoolStatuses = {};
  for (const row of rows) {
    if (row.svname === 'FRONTEND' || isInternal(row)) continue;
    const pool = (pools[row.pxname] ??= { status: 'UP', members: {} });
    if (row.svname === 'BACKEND') pool.status = row.status;
    // A member with weight 0 takes no new connections: Octavia reports it DRAIN.
    else pool.members[row.svname] = row.status === 'UP' && row.weight === '0' ? 'DRAIN' : row.status;
  }
  return pools;
}

/** The Prometheus listener's internal proxies are not Octavia objects. */
const isInternal = (row: StatRow) => row.pxname.includes('prometheus');

/**
 * An LVS (UDP/SCTP) listener whose keepalived runs: reported OPEN with zero
 * stats unless its config says it is disabled, so the health manager counts
 * it among the amphora's listeners (a missing listener ends in failover).
 * Pool and member statuses from IPVS are not reported yet.
 */
export function addLvsListener(message: HeartbeatMessage, listenerId: string, configText: string): void {
  if (configText.includes(`# Listener ${listenerId} is disabled`)) return;
  message.listeners[listenerId] = { status: 'OPEN', stats: { tx: 0, rx: 0, conns: 0, totconns: 0, ereq: 0 } };
}
