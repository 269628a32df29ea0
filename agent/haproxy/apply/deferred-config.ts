// The config files of an API 2.0 member call, written shortly after the call
// has answered rather than before. A member call changes haproxy through its
// runtime API; what must be on disk before it answers is the spec journal's
// line (a few hundred bytes, synced), the record it can be redone from. The
// config (350 kB at 5,000 members) follows DELAY_MS later, once for every
// member call made meanwhile, so a call's time does not grow with the load
// balancer and a burst of calls writes the config once. What is held is the
// edited config, folded into one text when it is written (edited-config.ts).
//
// Every other engine operation writes what is held first (engine.ts), so a
// reload, a restart of a dead haproxy or an upload never sees an old file.
// While a config is held, a marker file says so: an agent killed before the
// write finds it at start and renders the config again from the spec
// (V2Service.catchUp). Under systemd, a haproxy that dies within
// those DELAY_MS restarts from the config before the call; the agent's next
// apply of any kind brings it up to date.
import { removeFile, writeFileAtomic } from '../../system/files.js';
import type { EditedConfig } from '../config/edited-config.js';

/** How long a member call's config waits to be written. */
export const DELAY_MS = 200;

interface Held {
  /** The accepted config, which haproxy runs as it is. */
  config: EditedConfig;
  /** Where it goes: the accepted and the live config (one file, two names). */
  paths: string[];
  marker: string;
}

/** One load balancer's held config (load-balancer-state.ts keeps one per load balancer). */
export class DeferredConfig {
  private held: Held | null = null;
  private timer: NodeJS.Timeout | null = null;

  /** `due` is called when the files should be written (it takes the load balancer's lock and calls write). */
  constructor(
    private readonly due: () => void,
    private readonly delayMs = DELAY_MS,
  ) {}

  /** Hold `config` for `paths` (replacing what was held) until the next write; the marker is already on disk. */
  hold(config: EditedConfig, paths: string[], marker: string): void {
    this.held = { config, paths, marker };
    this.timer ??= setTimeout(() => {
      this.timer = null;
      this.due();
    }, this.delayMs).unref();
  }

  /** The accepted config held, newer than the one on disk; null when none is held. */
  get config(): EditedConfig | null {
    return this.held?.config ?? null;
  }

  /** Write what is held (the caller holds the load balancer's lock): the text written, null when none was held. Kept held if the write fails. */
  async write(): Promise<string | null> {
    const held = this.held;
    if (!held) return null;
    this.stopTimer();
    const { text } = held.config;
    await writeFileAtomic(held.paths, text, 0o600);
    this.held = null;
    await removeFile(held.marker);
    return text;
  }

  /** Forget what is held (the load balancer is being deleted). */
  drop(): void {
    this.stopTimer();
    this.held = null;
  }

  private stopTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
