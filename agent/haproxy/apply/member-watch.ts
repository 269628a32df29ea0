// Members in passage, watched by the agent's timers (cli/serve.ts): pending
// members made ready once a check passed (pending.ts), a few times a
// second, and retired members deleted once haproxy lets them go
// (retired.ts), every second, each load balancer under its lock. Reports
// show both as Octavia should see them.
import type { Logger } from '../../log.js';
import type { KeyedLock } from '../../system/keyed-lock.js';
import type { RuntimeApi } from '../process/runtime-api.js';
import type { StatRow } from '../process/stats.js';
import type { PendingMembers } from './pending.js';
import type { RetiredMembers } from './retired.js';

export class MemberWatch {
  constructor(
    private readonly lock: KeyedLock,
    private readonly pending: PendingMembers,
    private readonly retired: RetiredMembers,
    private readonly runtimeApi: (lbId: string) => RuntimeApi,
    private readonly log: Logger,
  ) {}

  /** Make ready the members that wait in maintenance for a passing check. */
  async promotePending(): Promise<void> {
    for (const lbId of await this.pending.waiting()) {
      await this.lock
        .run(lbId, () => this.pending.promote(lbId, this.runtimeApi(lbId), this.log))
        .catch((err: Error) => this.log.warn({ lbId, err: err.message }, 'cannot promote pending members'));
    }
  }

  /** Delete the retired members whose sessions have ended. */
  async sweepRetired(): Promise<void> {
    for (const lbId of await this.retired.waiting()) {
      await this.lock
        .run(lbId, () => this.retired.sweep(lbId, this.runtimeApi(lbId), this.log))
        .catch((err: Error) => this.log.warn({ lbId, err: err.message }, 'cannot delete retired members'));
    }
  }

  /** haproxy's stats rows as reports show them: retired members left out, members being admitted AWAITING_CHECK. */
  async reported(lbId: string, rows: StatRow[]): Promise<StatRow[]> {
    return this.pending.reported(lbId, await this.retired.hidden(lbId, rows));
  }
}
