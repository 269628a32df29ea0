// A per-load-balancer list of members in passage, kept in a JSON file of the
// load balancer's directory so that an agent restart goes on with it, and a
// flag in its state (load-balancer-state.ts) that says the list is not empty,
// read from disk once after an agent start. Members coming in (pending.ts)
// and going out (retired.ts) are each such a list.
import { exists, readTextIfExists, removeFile, writeFileAtomic } from '../../system/files.js';
import { memberKey } from '../../model/names.js';
import type { LoadBalancerStates } from './load-balancer-state.js';

export const keyOf = (m: { backend: string; server: string }): string => memberKey(m.backend, m.server);

export class MemberList<T extends { backend: string; server: string }> {
  /** The states' flags were read from disk (the first time after an agent start). */
  private read = false;

  constructor(
    private readonly states: LoadBalancerStates,
    private readonly kind: 'pending' | 'retired',
  ) {}

  private file(lbId: string): string {
    const files = this.states.files(lbId);
    return this.kind === 'pending' ? files.pendingReady : files.retired;
  }

  async of(lbId: string): Promise<T[]> {
    // Most load balancers have no such list, and the reports (every
    // heartbeat) ask for it: the state's flag spares them a read.
    if (!this.read) await this.waiting();
    if (!this.states.get(lbId)[this.kind]) return [];
    const text = await readTextIfExists(this.file(lbId));
    return text ? (JSON.parse(text) as T[]) : [];
  }

  async set(lbId: string, members: T[]): Promise<void> {
    if (members.length === 0) await removeFile(this.file(lbId));
    else await writeFileAtomic(this.file(lbId), JSON.stringify(members), 0o600);
    this.states.get(lbId)[this.kind] = members.length > 0;
  }

  /** The list less `gone` (member keys), with `added` appended. */
  async update(lbId: string, gone: Set<string>, added: T[]): Promise<void> {
    const replaced = new Set(added.map(keyOf));
    const kept = (await this.of(lbId)).filter((m) => !gone.has(keyOf(m)) && !replaced.has(keyOf(m)));
    await this.set(lbId, [...kept, ...added]);
  }

  /** Load balancers whose list is not empty. */
  async waiting(): Promise<string[]> {
    if (!this.read) {
      for (const lbId of await this.states.ids()) if (await exists(this.file(lbId))) this.states.get(lbId)[this.kind] = true;
      this.read = true;
    }
    return this.states.where((s) => s[this.kind]);
  }

  /** The list was found empty: the flag follows (a reload meanwhile; a deleted load balancer has no state left). */
  cleared(lbId: string): void {
    const state = this.states.peek(lbId);
    if (state) state[this.kind] = false;
  }
}
