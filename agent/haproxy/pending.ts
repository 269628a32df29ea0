// Members added or put back in service at runtime that wait in maintenance,
// with checks running, for their first passing check (admission.ts: the
// agent makes them ready). Kept per load balancer in pending-ready.json, so
// an agent restart goes on waiting; the set of load balancers with such
// members is kept in memory, read once from disk.
import type { Logger } from '../log.js';
import { exists, readTextIfExists, removeFile, writeFileAtomic } from '../system/files.js';
import { withAdmissionReported } from './admission.js';
import { memberKey, type LoadBalancerFiles } from './layout.js';
import type { PendingMember, RuntimeApi, RuntimeResult } from './runtime.js';
import type { StatRow } from './stats.js';

const keyOf = (p: { backend: string; server: string }) => memberKey(p.backend, p.server);

export class PendingMembers {
  /** Load balancers with pending members; null until read from disk. */
  private lbs: Set<string> | null = null;

  constructor(private readonly filesOf: (lbId: string) => LoadBalancerFiles) {}

  async of(lbId: string): Promise<PendingMember[]> {
    const text = await readTextIfExists(this.filesOf(lbId).pendingReady);
    return text ? (JSON.parse(text) as PendingMember[]) : [];
  }

  /** Member keys ("backend/server") of the pending members. */
  async keys(lbId: string): Promise<Set<string>> {
    return new Set((await this.of(lbId)).map(keyOf));
  }

  async set(lbId: string, pending: PendingMember[]): Promise<void> {
    const file = this.filesOf(lbId).pendingReady;
    if (pending.length === 0) {
      await removeFile(file);
      this.lbs?.delete(lbId);
    } else {
      await writeFileAtomic(file, JSON.stringify(pending), 0o600);
      this.lbs?.add(lbId);
    }
  }

  /** After runtime commands: members made ready or removed leave the list, newly held ones join it. */
  async afterRuntime(lbId: string, result: RuntimeResult): Promise<void> {
    const held = new Set(result.pending.map(keyOf));
    const kept = (await this.of(lbId)).filter((p) => !result.settled.includes(keyOf(p)) && !held.has(keyOf(p)));
    await this.set(lbId, [...kept, ...result.pending]);
  }

  /** Load balancers that have pending members (read from disk the first time: an agent restart). */
  async waiting(loadBalancerIds: () => Promise<string[]>): Promise<string[]> {
    if (this.lbs === null) {
      const found = new Set<string>();
      for (const lbId of await loadBalancerIds()) if (await exists(this.filesOf(lbId).pendingReady)) found.add(lbId);
      this.lbs = found;
    }
    return [...this.lbs];
  }

  /** Make ready those whose check passed; the caller holds the load balancer's lock. */
  async promote(lbId: string, runtime: RuntimeApi, log: Logger): Promise<void> {
    const pending = await this.of(lbId);
    if (pending.length === 0) {
      this.lbs?.delete(lbId); // deleted or reloaded meanwhile
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
