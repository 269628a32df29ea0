// Members an API 1.0 reload removed at runtime (plan.ts: retire steps). A
// reload would let their sessions finish on the old worker; here they stay
// in haproxy in maintenance, taking no new traffic, until their sessions and
// pooled connections are gone and haproxy lets them be deleted, which the
// agent tries every second (sweep). Kept per load balancer in retired.json
// (member-list.ts), so an agent restart goes on deleting them; a (re)load
// ends the list, as the new worker never had them. Octavia no longer knows
// them, so reports leave them out.
import type { Logger } from '../../log.js';
import type { LoadBalancerStates } from './load-balancer-state.js';
import { keyOf, MemberList } from './member-list.js';
import type { RetiredMember, RuntimeApi } from '../process/runtime-api.js';
import type { StatRow } from '../process/stats.js';
import { memberKey } from '../../model/names.js';

export class RetiredMembers {
  private readonly list: MemberList<RetiredMember>;

  constructor(states: LoadBalancerStates) {
    this.list = new MemberList(states, 'retired');
  }

  /** After runtime commands: newly retired members join the list (a member retired again replaces its entry). */
  add(lbId: string, retired: RetiredMember[]): Promise<void> {
    return retired.length === 0 ? Promise.resolve() : this.list.update(lbId, new Set(), retired);
  }

  /** haproxy was (re)loaded: its new worker has none of them. */
  clear(lbId: string): Promise<void> {
    return this.list.set(lbId, []);
  }

  /** Load balancers with retired members still in haproxy. */
  waiting(): Promise<string[]> {
    return this.list.waiting();
  }

  /** Delete those haproxy lets go; the caller holds the load balancer's lock. */
  async sweep(lbId: string, runtime: RuntimeApi, log: Logger): Promise<void> {
    const retired = await this.list.of(lbId);
    if (retired.length === 0) return this.list.cleared(lbId);
    const held = await runtime.deleteRetired(retired);
    if (held.length === retired.length) return;
    log.info({ lbId, deleted: retired.filter((r) => !held.includes(r)).map(keyOf) }, 'retired members deleted');
    await this.list.set(lbId, held);
  }

  /** haproxy's stats rows without the retired members. */
  async hidden(lbId: string, rows: StatRow[]): Promise<StatRow[]> {
    const retired = new Set((await this.list.of(lbId)).map(keyOf));
    return retired.size === 0 ? rows : rows.filter((r) => !retired.has(memberKey(r.pxname, r.svname)));
  }
}
