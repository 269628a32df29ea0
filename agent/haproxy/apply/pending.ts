// Members added or put back in service at runtime that wait in maintenance,
// with checks running, for their first passing check (admission.ts: the
// agent makes them ready). Kept per load balancer in pending-ready.json, so
// an agent restart goes on waiting; which load balancers have such members
// is kept in their states (load-balancer-state.ts), read once from disk.
import type { Logger } from '../../log.js';
import { exists, readTextIfExists, removeFile, writeFileAtomic } from '../../system/files.js';
import { withAdmissionReported } from '../../model/admission.js';
import { memberKey } from '../../model/names.js';
import type { LoadBalancerStates } from './load-balancer-state.js';
import type { PendingMember, RuntimeApi, RuntimeResult } from '../process/runtime-api.js';
import type { StatRow } from '../process/stats.js';

const keyOf = (p: { backend: string; server: string }) => memberKey(p.backend, p.server);

export class PendingMembers {
  /** The states' `pending` were read from disk (the first time after an agent start). */
  private read = false;

  constructor(private readonly states: LoadBalancerStates) {}

  async of(lbId: string): Promise<PendingMember[]> {
    const text = await readTextIfExists(this.states.files(lbId).pendingReady);
    return text ? (JSON.parse(text) as PendingMember[]) : [];
  }

  /** Member keys ("backend/server") of the pending members. */
  async keys(lbId: string): Promise<Set<string>> {
    return new Set((await this.of(lbId)).map(keyOf));
  }

  async set(lbId: string, pending: PendingMember[]): Promise<void> {
    const file = this.states.files(lbId).pendingReady;
    if (pending.length === 0) {
      await removeFile(file);
      this.states.get(lbId).pending = false;
    } else {
      await writeFileAtomic(file, JSON.stringify(pending), 0o600);
      this.states.get(lbId).pending = true;
    }
  }

  /** After runtime commands: members made ready or removed leave the list, newly held ones join it. */
  async afterRuntime(lbId: string, result: RuntimeResult): Promise<void> {
    const held = new Set(result.pending.map(keyOf));
    const kept = (await this.of(lbId)).filter((p) => !result.settled.includes(keyOf(p)) && !held.has(keyOf(p)));
    await this.set(lbId, [...kept, ...result.pending]);
  }

  /** Load balancers that have pending members (read from disk the first time: an agent restart). */
  async waiting(): Promise<string[]> {
    if (!this.read) {
      for (const lbId of await this.states.ids()) if (await exists(this.states.files(lbId).pendingReady)) this.states.get(lbId).pending = true;
      this.read = true;
    }
    return this.states.where((s) => s.pending);
  }

  /** Make ready those whose check passed; the caller holds the load balancer's lock. */
  async promote(lbId: string, runtime: RuntimeApi, log: Logger): Promise<void> {
    const pending = await this.of(lbId);
    if (pending.length === 0) {
      const state = this.states.peek(lbId);
      if (state) state.pending = false; // reloaded meanwhile (deleted: no state left)
      return;
    }
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
