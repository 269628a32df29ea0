// The config files of an API 2.0 member call, written shortly after the call
// has answered rather than before. A member call changes haproxy through its
// runtime API; what must be on disk before it answers is the spec journal's
// line (a few hundred bytes, synced), the record it can be redone from. The
// config (350 kB at 5,000 members) follows DELAY_MS later, once for every
// member call made meanwhile, so a call's time does not grow with the load
// balancer and a burst of calls writes the config once.
//
// Every other engine operation writes what is held first (engine.ts), so a
// reload, a restart of a dead haproxy or an upload never sees an old file.
// While a config is held, a marker file says so: an agent killed before the
// write finds it at start and renders the config again from the spec
// (LoadBalancerService.catchUp). Under systemd, a haproxy that dies within
// those DELAY_MS restarts from the config before the call; the agent's next
// apply of any kind brings it up to date.
import { type FileContent, removeFile, writeFilesAtomic } from '../system/files.js';

/** How long a member call's config waits to be written. */
export const DELAY_MS = 200;

interface Held {
  /** The accepted config the files hold. */
  text: string;
  files: FileContent[];
  marker: string;
}

export class DeferredConfigs {
  private readonly held = new Map<string, Held>();
  private readonly timers = new Map<string, NodeJS.Timeout>();

  /** `due` is called when a load balancer's files should be written (it takes the lock and calls write). */
  constructor(private readonly due: (lbId: string) => void, private readonly delayMs = DELAY_MS) {}

  /** Hold `files` (replacing what was held) until the next write; the marker is already on disk. */
  hold(lbId: string, text: string, files: FileContent[], marker: string): void {
    this.held.set(lbId, { text, files, marker });
    if (!this.timers.has(lbId)) {
      this.timers.set(lbId, setTimeout(() => {
        this.timers.delete(lbId);
        this.due(lbId);
      }, this.delayMs).unref());
    }
  }

  /** The accepted config held for `lbId`, newer than the one on disk; null when none is held. */
  heldConfig(lbId: string): string | null {
    return this.held.get(lbId)?.text ?? null;
  }

  /** Write what is held (the caller holds the load balancer's lock). Kept held if the write fails. */
  async write(lbId: string): Promise<void> {
    const held = this.held.get(lbId);
    if (!held) return;
    clearTimeout(this.timers.get(lbId));
    this.timers.delete(lbId);
    await writeFilesAtomic(held.files);
    this.held.delete(lbId);
    await removeFile(held.marker);
  }

  /** Forget what is held (the load balancer is being deleted). */
  drop(lbId: string): void {
    clearTimeout(this.timers.get(lbId));
    this.timers.delete(lbId);
    this.held.delete(lbId);
  }

  /** Load balancers with files held. */
  ids(): string[] {
    return [...this.held.keys()];
  }
}
