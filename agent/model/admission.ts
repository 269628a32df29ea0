// How a member haproxy is not running yet is admitted to traffic: the rule
// this project exists for, decided here and nowhere else. A checked member
// gets no traffic before a health check passed; a member without checks is
// admitted at once, since nothing would ever bring it up. Pure. It sits
// outside agent/haproxy/ because the renderer decides with it too (which
// members it renders held down), and neither side should reach into the
// other's internals for the rule they share.
//
//   checked  init-state on  path     haproxy applies init-state  admitted by      ready
//            its line                at start-up
//   no       -              any      -                           none             at once
//   yes      yes            load     yes                         init-state       haproxy's checks
//   yes      -              load     no                          state-file (**)  haproxy's checks
//   yes      no             load     yes                         init-state (*)   haproxy's checks
//   yes      yes            runtime  -                           init-state       haproxy's checks
//   yes      no             added    -                           forced-down      haproxy's checks
//   yes      no             returns  -                           maintenance      the agent, after a passed check
//
//   (*) the agent writes `init-state fully-down` on the line it loads.
//   (**) also when the line carries init-state itself: a binary that takes the
//        keyword without applying it at start-up (3.2 without the backport)
//        would start such a member UP.
//
// The runtime path does not depend on the start-up capability: `enable
// server` leaves a dynamic server with init-state DOWN on every haproxy that
// takes the keyword, and one that does not refuses the `add server`, so the
// engine reloads. Without init-state on the line, leaving maintenance makes a
// server UP at once whatever its health (2.6, 3.0). An added member leaves it
// at weight 0, which takes no request (a new server has no persistent
// client), and is forced DOWN with health 0 at once, then given its weight:
// haproxy's own rise-th passing check makes it UP, with no poll in between
// (issue 32). A member put back in service may have persistent clients, so
// it stays out of traffic (drained, forced DOWN, checks running) until the
// agent sees its checks pass. Across a reload a member down part-way
// through its checks keeps the ones it passed (carried-checks.ts).

import { memberKey } from './names.js';

/** What holds a member down on its line; the agent writes it on the load path (and the renderer, macros.njk). */
export const HOLD_DOWN = ['init-state', 'fully-down'] as const;

export type AdmissionMethod =
  /** A member without checks: traffic at once. */
  | 'none'
  /** `init-state fully-down` on the server line: DOWN until its checks pass. */
  | 'init-state'
  /** Seeded stopped in the server-state file haproxy loads at the (re)load. */
  | 'state-file'
  /** Added at weight 0, out of maintenance, forced DOWN, then its weight: DOWN until its checks pass. */
  | 'forced-down'
  /** Put back in service drained and forced DOWN, checks running; made ready by the agent. */
  | 'maintenance';

export interface Admission {
  method: AdmissionMethod;
  /** Who lets traffic in: nobody waits, haproxy's own checks, or the agent once it saw a check pass (isReady). */
  ready: 'at-once' | 'haproxy' | 'agent';
}

export interface MemberFacts {
  /** Health checks run on the member (the config reader's answer: own `check`, default-server, not `track`). */
  checked: boolean;
  /** The server line carries `init-state` itself. */
  initStateOnLine: boolean;
}

export type AdmissionInput = MemberFacts &
  /** haproxy (re)loads a config; `initStateAtStartup`: the binary applies `init-state fully-down` then (probed). */
  (
    | { path: 'load'; initStateAtStartup: boolean }
    /** `add server` (added), or back from maintenance (returns), on the running worker. */
    | { path: 'runtime'; returns: boolean }
  );

const READY: Record<AdmissionMethod, Admission['ready']> = {
  none: 'at-once',
  'init-state': 'haproxy',
  'state-file': 'haproxy',
  'forced-down': 'haproxy',
  maintenance: 'agent',
};

export function admit(member: AdmissionInput): Admission {
  const method = methodOf(member);
  return { method, ready: READY[method] };
}

function methodOf(member: AdmissionInput): AdmissionMethod {
  if (!member.checked) return 'none';
  if (member.path === 'runtime') return member.initStateOnLine ? 'init-state' : member.returns ? 'maintenance' : 'forced-down';
  return member.initStateAtStartup ? 'init-state' : 'state-file';
}

/** A member the agent holds in maintenance is ready once its last check passed and its health reached `rise`. */
export function isReady(server: { checkResult: number; checkHealth: number }, rise: number): boolean {
  return server.checkResult === 3 && server.checkHealth >= rise;
}

/**
 * What the heartbeat says of a member that is not taking traffic and has not
 * failed a check since it came in. Octavia's health manager keeps a member's
 * last status when it reads RESTARTING (heartbeat_udp.py of 11, 16 and 19,
 * meant for keepalived's restarts), so such a member stays where Octavia put
 * it (OFFLINE, or ONLINE across a reload) instead of turning ERROR and the
 * pool and load balancer DEGRADED: a false alarm on every added node.
 */
export const AWAITING_CHECK = 'RESTARTING';

/** haproxy's check_status before the first check, and after a passed one (rising toward `rise`). */
const NOT_FAILED = new Set(['INI', 'L4OK', 'L6OK', 'L7OK', 'L7OKC']);

interface ReportedRow {
  pxname: string;
  svname: string;
  status: string;
  checkStatus: string;
}

/**
 * haproxy's rows as reports show them. A member still being admitted (DOWN
 * while held by init-state or a stopped seed, or in the agent's maintenance:
 * `pending`) is AWAITING_CHECK until a check fails, then DOWN; MAINT alone
 * stays MAINT (the operator's OFFLINE). A backend that serves nothing only
 * because its members are being admitted is AWAITING_CHECK too.
 */
export function withAdmissionReported<R extends ReportedRow>(rows: R[], pending: { backend: string; server: string }[]): R[] {
  const held = new Set(pending.map((p) => memberKey(p.backend, p.server)));
  const reported = rows.map((r) => {
    if (r.svname === 'FRONTEND' || r.svname === 'BACKEND') return r;
    const isHeld = held.has(memberKey(r.pxname, r.svname));
    // Held: drained by the agent, or down with checks carried over a reload (carried-checks.ts).
    const outOfTraffic = isHeld ? /^(MAINT|DRAIN|DOWN)/.test(r.status) : r.status.startsWith('DOWN');
    if (!outOfTraffic) return r;
    if (NOT_FAILED.has(r.checkStatus)) return { ...r, status: AWAITING_CHECK };
    return isHeld ? { ...r, status: 'DOWN' } : r;
  });
  const admitting = new Set<string>();
  const failed = new Set<string>();
  for (const r of reported) {
    if (r.status === AWAITING_CHECK) admitting.add(r.pxname);
    else if (r.status.startsWith('DOWN') && r.svname !== 'BACKEND') failed.add(r.pxname);
  }
  return reported.map((r) =>
    r.svname === 'BACKEND' && r.status.startsWith('DOWN') && admitting.has(r.pxname) && !failed.has(r.pxname) ? { ...r, status: AWAITING_CHECK } : r,
  );
}

/**
 * Without a binary to probe, the version is a guess: the start-up fix is in
 * 3.4 and was backported to some 3.2/3.3 releases only, so older versions
 * count as without it (the engine then seeds the state file instead).
 */
export function initStateAtStartupByVersion(major: number, minor: number): boolean {
  return major > 3 || (major === 3 && minor >= 4);
}
