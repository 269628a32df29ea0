// Members the agent makes ready once their checks passed: those put back in
// service at runtime, drained with checks running (admission.ts), and those
// whose passed checks a reload carried over, down until the new worker
// counted the rest (carried-checks.ts). Kept per load balancer in
// pending-ready.json (member-list.ts), so an agent restart goes on waiting.
import type { Logger } from '../../log.js';
import { withAdmissionReported } from '../../model/admission.js';
import type { LoadBalancerStates } from './load-balancer-state.js';
import { keyOf, MemberList } from './member-list.js';
import type { PendingMember, RuntimeApi, RuntimeResult } from '../process/runtime-api.js';
import type { StatRow } from '../process/stats.js';

export class PendingMembers {
  private readonly list: MemberList<PendingMember>;
  /** When the agent last read each load balancer's checks (promote) or a load reset them (set). */
  private readonly lookedAt = new Map<string, number>();

  constructor(states: LoadBalancerStates) {
    this.list = new MemberList(states, 'pending');
  }

  of(lbId: string): Promise<PendingMember[]> {
    return this.list.of(lbId);
  }

  /** A load's list: what it carried over (carried-checks.ts), looked at as the new worker starts. */
  set(lbId: string, pending: PendingMember[]): Promise<void> {
    this.lookedAt.set(lbId, Date.now());
    return this.list.set(lbId, pending);
  }

  /** The time since the agent last looked at this load balancer's pending members (never, after an agent start: Infinity). */
  lookedAgoMs(lbId: string): number {
    const at = this.lookedAt.get(lbId);
    return at === undefined ? Number.POSITIVE_INFINITY : Date.now() - at;
  }

  /** After runtime commands: members made ready or removed leave the list, newly held ones join it. */
  afterRuntime(lbId: string, result: RuntimeResult): Promise<void> {
    return this.list.update(lbId, new Set(result.settled), result.pending);
  }

  /** Load balancers that have pending members (read from disk the first time: an agent restart). */
  waiting(): Promise<string[]> {
    return this.list.waiting();
  }

  /** Make ready those whose check passed; the caller holds the load balancer's lock. */
  async promote(lbId: string, runtime: RuntimeApi, log: Logger): Promise<void> {
    const pending = await this.of(lbId);
    if (pending.length === 0) return this.list.cleared(lbId);
    const now = Date.now();
    const { waiting, voided } = await runtime.promote(pending, this.lookedAgoMs(lbId));
    this.lookedAt.set(lbId, now);
    if (waiting.length === pending.length) return;
    const ready = pending.filter((p) => !waiting.includes(p) && !voided.includes(p));
    if (ready.length > 0) log.info({ lbId, ready: ready.map(keyOf) }, 'members passed their checks');
    if (voided.length > 0)
      log.info({ lbId, members: voided.map(keyOf) }, 'checks carried over a reload no longer count: a check failed, or one may have gone unseen');
    await this.list.set(lbId, waiting);
  }

  /** haproxy's stats rows as reports show them: members still being admitted are AWAITING_CHECK (admission.ts). */
  async reported(lbId: string, rows: StatRow[]): Promise<StatRow[]> {
    return withAdmissionReported(rows, await this.of(lbId));
  }
}
