// Members added or put back in service at runtime that wait in maintenance,
// with checks running, for their first passing check (admission.ts: the
// agent makes them ready). Kept per load balancer in pending-ready.json
// (member-list.ts), so an agent restart goes on waiting.
import type { Logger } from '../../log.js';
import { withAdmissionReported } from '../../model/admission.js';
import type { LoadBalancerStates } from './load-balancer-state.js';
import { keyOf, MemberList } from './member-list.js';
import type { PendingMember, RuntimeApi, RuntimeResult } from '../process/runtime-api.js';
import type { StatRow } from '../process/stats.js';

export class PendingMembers {
  private readonly list: MemberList<PendingMember>;

  constructor(states: LoadBalancerStates) {
    this.list = new MemberList(states, 'pending');
  }

  of(lbId: string): Promise<PendingMember[]> {
    return this.list.of(lbId);
  }

  /** Member keys ("backend/server") of the pending members. */
  async keys(lbId: string): Promise<Set<string>> {
    return new Set((await this.of(lbId)).map(keyOf));
  }

  set(lbId: string, pending: PendingMember[]): Promise<void> {
    return this.list.set(lbId, pending);
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
    const waiting = await runtime.promote(pending);
    if (waiting.length === pending.length) return;
    log.info({ lbId, ready: pending.filter((p) => !waiting.includes(p)).map(keyOf) }, 'members passed their first check');
    await this.set(lbId, waiting);
  }

  /** haproxy's stats rows as reports show them: members still being admitted are AWAITING_CHECK (admission.ts). */
  async reported(lbId: string, rows: StatRow[]): Promise<StatRow[]> {
    return withAdmissionReported(rows, await this.of(lbId));
  }
}
