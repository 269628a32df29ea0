// When the direct supervisor (watchdog.ts) may start a dead haproxy again.
// The first restart is immediate, as systemd's Restart=always would do it.
// A haproxy that dies again soon after a restart (a crash at start, an OOM
// kill loop) is restarted after a delay that doubles each time, up to a cap,
// so a broken load balancer costs a start a minute instead of one every tick.
// Once haproxy has stayed up long enough, the next death counts as the first
// again. Pure: the caller passes the time.

export interface RestartPolicy {
  /** The delay before the second restart in a row. */
  firstDelayMs: number;
  /** No delay grows beyond this. */
  maxDelayMs: number;
  /** A haproxy that ran this long after a restart died of something new: no delay. */
  stableAfterMs: number;
}

/** 5 s, 10 s, 20 s, 40 s, then every 60 s; forgotten after 60 s up. */
export const DEFAULT_RESTART_POLICY: RestartPolicy = { firstDelayMs: 5_000, maxDelayMs: 60_000, stableAfterMs: 60_000 };

/** What a tick decided for a dead haproxy. */
export interface DeadVerdict {
  /** Start it now. */
  restart: boolean;
  /** This tick found it dead (it ran, or was started, before): the decision to log. */
  newlyDead: boolean;
  /** Restarts in a row so far, without a stable run between them. */
  restartsInARow: number;
  /** When the next attempt is due (epoch ms). */
  nextAttemptAt: number;
}

/** One load balancer's supervision, as /status and the metrics show it. */
export interface RestartState {
  /** running: not in trouble (or never seen dead); waiting: dead, the next restart is due at nextAttemptAt. */
  state: 'running' | 'waiting';
  restartsInARow: number;
  /** Seconds until the next restart (0 when none is waiting). */
  nextRestartInS: number;
  /** Why the last restart failed, if it did. */
  lastError: string | null;
}

interface Entry {
  restartsInARow: number;
  /** When the last restart succeeded (null: never by this supervisor). */
  startedAt: number | null;
  /** Dead and not yet restarted. */
  dead: boolean;
  nextAttemptAt: number;
  lastError: string | null;
}

/** One load balancer's restart delays (load-balancer-state.ts keeps one per load balancer). */
export class RestartBackoff {
  /** Null: not in trouble, or its troubles are forgotten. */
  private record: Entry | null = null;

  constructor(readonly policy: RestartPolicy = DEFAULT_RESTART_POLICY) {}

  /** The delay before restart number `n + 1` in a row: none for the first. */
  delayAfter(n: number): number {
    if (n <= 0) return 0;
    return Math.min(this.policy.firstDelayMs * 2 ** (n - 1), this.policy.maxDelayMs);
  }

  /** haproxy is dead and not stopped on purpose: may it be started now? */
  dead(now: number): DeadVerdict {
    let r = this.record;
    let newlyDead = false;
    if (!r?.dead) {
      newlyDead = true;
      const stable = !r || r.startedAt === null || now - r.startedAt >= this.policy.stableAfterMs;
      r = { restartsInARow: stable ? 0 : r!.restartsInARow, startedAt: r?.startedAt ?? null, dead: true, nextAttemptAt: 0, lastError: null };
      r.nextAttemptAt = now + this.delayAfter(r.restartsInARow);
      this.record = r;
    }
    return { restart: now >= r.nextAttemptAt, newlyDead, restartsInARow: r.restartsInARow, nextAttemptAt: r.nextAttemptAt };
  }

  /** The restart worked. */
  started(now: number): void {
    this.record = { restartsInARow: (this.record?.restartsInARow ?? 0) + 1, startedAt: now, dead: false, nextAttemptAt: 0, lastError: null };
  }

  /** The restart failed: the next one waits. Returns when it is due. */
  failed(now: number, error: string): number {
    const r = this.record ?? { restartsInARow: 0, startedAt: null, dead: true, nextAttemptAt: 0, lastError: null };
    r.restartsInARow++;
    r.dead = true;
    r.lastError = error;
    r.nextAttemptAt = now + this.delayAfter(r.restartsInARow);
    this.record = r;
    return r.nextAttemptAt;
  }

  /**
   * haproxy runs (or was stopped on purpose). Someone else started it (an API
   * start or reload), or it has stayed up long enough: its troubles are
   * forgotten. True when they were.
   */
  fine(now: number): boolean {
    const r = this.record;
    if (!r) return false;
    if (r.dead || r.startedAt === null || now - r.startedAt >= this.policy.stableAfterMs) {
      this.record = null;
      return true;
    }
    return false;
  }

  forget(): void {
    this.record = null;
  }

  state(now: number): RestartState {
    const r = this.record;
    if (!r) return { state: 'running', restartsInARow: 0, nextRestartInS: 0, lastError: null };
    return {
      state: r.dead ? 'waiting' : 'running',
      restartsInARow: r.restartsInARow,
      nextRestartInS: r.dead ? Math.max(0, Math.ceil((r.nextAttemptAt - now) / 1000)) : 0,
      lastError: r.lastError,
    };
  }
}
