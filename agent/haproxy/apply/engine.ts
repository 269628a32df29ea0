// The apply engine: the one path by which a load balancer's haproxy changes.
// Its verbs: accept a config (API 1.0's upload), run the accepted config
// (API 1.0's reload), apply a config text (API 2.0's spec) or a member edit
// of the accepted one (API 2.0's member calls), start, stop, restart a dead
// haproxy (the direct supervisor's watchdog) and delete. Each runs under one
// lock per load balancer, so validation, new-member protection, state
// carry-over and rollback exist once (pipeline.ts), and what is kept in
// memory per load balancer is one state (load-balancer-state.ts). Whatever
// changes whether and what haproxy runs is told to one subscriber
// (EngineOptions.onChange), so what follows it is wired once, not per verb.
import { resolve } from 'node:path';
import { exists, removeTree, writeFileAtomic, type FileContent } from '../../system/files.js';
import type { HaproxyCapabilities } from '../process/capabilities.js';
import type { EditedConfig } from '../config/edited-config.js';
import { KeyedLock } from '../../system/keyed-lock.js';
import { statsSocket } from '../../config/layout.js';
import type { LoadBalancerFiles } from '../layout.js';
import { LoadBalancerStates, type LoadBalancerState } from './load-balancer-state.js';
import type { HaproxyChange } from './haproxy-change.js';
import type { LoadReport } from './loader.js';
import { MemberWatch } from './member-watch.js';
import { PendingMembers } from './pending.js';
import { RetiredMembers } from './retired.js';
import { ApplyPipeline, type ChangeReport, type MemberEdit, type PipelineOptions } from './pipeline.js';
import type { Plan } from './plan.js';
import type { HaproxyStatus } from '../process/process.js';
import { recoverInterruptedReload } from '../process/recovery.js';
import type { RestartBackoff } from '../process/restart-backoff.js';
import { parseShowStat, showStat, type StatRow } from '../process/stats.js';
import { supervisionOf, type Supervision } from '../process/supervision.js';

export interface EngineOptions extends PipelineOptions {
  baseDir: string;
  /** How long a member call's config files wait to be written (deferred-config.ts). */
  memberConfigWriteDelayMs?: number;
  /**
   * The one subscriber to haproxy's changes (loadbalancer/announce.ts).
   * Called under the load balancer's lock, so it hears them in their order;
   * its failure fails the verb, except the watchdog's, which is logged.
   */
  onChange?: (change: HaproxyChange) => Promise<void>;
}

/** What the watchdog's check found: haproxy runs, was stopped on purpose, was started again, or is dead and waits for its restart. */
export type Supervised = 'running' | 'stopped' | 'started' | 'waiting';

export class HaproxyEngine {
  /** Outside the states: what queues behind a delete waits for it, then finds a new state. */
  private readonly lock = new KeyedLock();
  private readonly baseDir: string;
  private readonly states: LoadBalancerStates;
  private readonly pending: PendingMembers;
  private readonly pipeline: ApplyPipeline;
  /** Members in passage, for the agent's timers: pending ones made ready, retired ones deleted. */
  readonly members: MemberWatch;

  constructor(private readonly opts: EngineOptions) {
    this.baseDir = resolve(opts.baseDir);
    this.states = new LoadBalancerStates(this.baseDir, {
      heldConfigDue: (lbId) => {
        this.lock
          .run(lbId, () => this.states.get(lbId).writeHeld())
          .catch((err: Error) => opts.log.error({ lbId, err: err.message }, 'cannot write the config of member changes; retried at the next apply'));
      },
      heldConfigDelayMs: opts.memberConfigWriteDelayMs,
    });
    this.pending = new PendingMembers(this.states);
    const retired = new RetiredMembers(this.states);
    this.pipeline = new ApplyPipeline(opts, this.baseDir, this.pending, retired);
    this.members = new MemberWatch(this.lock, this.pending, retired, (lbId) => this.pipeline.runtimeApi(this.files(lbId)), opts.log);
  }

  /** Who runs haproxy (and, for consistency, keepalived): systemd units or the agent itself. */
  get processManager(): 'direct' | 'systemd' {
    return this.opts.supervisor.kind;
  }

  capabilities(): Promise<HaproxyCapabilities> {
    return this.pipeline.capabilities();
  }

  files(lbId: string): LoadBalancerFiles {
    return this.states.files(lbId);
  }

  /** The direct supervisor's restart delays for this load balancer (watchdog.ts). */
  restartBackoff(lbId: string): RestartBackoff {
    return this.states.get(lbId).restarts;
  }

  /** Validate `text`, then make it the accepted config (API 1.0's upload). Does not touch the running haproxy. */
  accept(lbId: string, amphoraId: string, text: string): Promise<void> {
    return this.writing(lbId, (state) => this.pipeline.accept(state, amphoraId, text));
  }

  /**
   * Make the accepted config run (API 1.0's reload). Members added,
   * re-weighted or put in or out of maintenance go through the runtime API
   * when nothing else changed, no certificate changed since the last load and
   * runtime member changes are on; anything else reloads (plan.ts).
   */
  runAccepted(lbId: string): Promise<ChangeReport> {
    return this.writing(lbId, async (state) => this.told(lbId, await this.pipeline.runAccepted(state)));
  }

  /**
   * Make `text` the accepted and running config (API 2.0), by the plan for
   * it: through the runtime API when only members changed (the files follow),
   * a validated load otherwise or when `forceReload` gives a reason (changed
   * certificate files). `companions` are written before it answers.
   */
  apply(lbId: string, amphoraId: string, text: string, opts: { forceReload?: string; companions?: FileContent[] } = {}): Promise<ChangeReport> {
    return this.writing(lbId, async (state) =>
      this.told(lbId, await this.pipeline.apply(state, amphoraId, text, opts.forceReload ?? null, opts.companions ?? [])),
    );
  }

  /**
   * apply for a member call's edit of the accepted config. Planned from its
   * lines when haproxy runs its base, and its config files are written after
   * it answered (deferred-config.ts), so its cost does not grow with the
   * load balancer.
   */
  applyMemberEdit(lbId: string, amphoraId: string, edit: MemberEdit, companions: FileContent[] = []): Promise<ChangeReport> {
    return this.writing(lbId, async (state) => this.told(lbId, await this.pipeline.applyMemberEdit(state, amphoraId, edit, companions)), false);
  }

  /** What apply would do with `text` (a dry run). */
  plan(lbId: string, text: string, forceReload: string | null = null): Promise<Plan> {
    return this.locked(lbId, (state) => this.pipeline.plan(state, text, forceReload));
  }

  /** What applyMemberEdit would do with `edit` (a dry run). */
  planMemberEdit(lbId: string, edit: MemberEdit): Promise<Plan> {
    return this.lock.run(lbId, () => this.pipeline.planMemberEdit(this.states.get(lbId), edit));
  }

  /** API 1.0's start: load the accepted config unless haproxy runs (null then). */
  start(lbId: string): Promise<LoadReport | null> {
    return this.locked(lbId, async (state) => {
      const { text, amphoraId } = await state.accepted();
      const inst = state.instance(amphoraId);
      if ((await this.opts.supervisor.status(inst)).running) {
        await this.tell({ kind: 'ran', lbId, bindAddresses: await state.bindAddresses() });
        return null;
      }
      const load = await this.pipeline.loadAccepted(state, inst, text);
      await this.tell({ kind: 'loaded', lbId, load });
      return load;
    });
  }

  stop(lbId: string): Promise<void> {
    return this.locked(lbId, async (state) => {
      await writeFileAtomic(state.files.stopped, '', 0o600);
      state.stopped();
      await this.opts.supervisor.stop(await state.storedInstance());
      await this.tell({ kind: 'stopped', lbId });
    });
  }

  /**
   * The direct supervisor's check (watchdog.ts): start haproxy again if it
   * died although it was not stopped on purpose, when `mayRestart` (asked
   * only then) allows it.
   */
  restartIfDead(lbId: string, mayRestart: () => boolean = () => true): Promise<Supervised> {
    return this.locked(lbId, async (state) => {
      let load: LoadReport;
      try {
        // Checked under the lock: a delete or stop may just have run.
        const { files } = state;
        if ((await exists(files.stopped)) || !(await exists(files.live)) || !(await exists(files.config))) return 'stopped';
        const { text, amphoraId } = await state.accepted();
        const inst = state.instance(amphoraId);
        if ((await this.opts.supervisor.status(inst)).running) return 'running';
        if (!mayRestart()) return 'waiting';
        this.opts.log.warn({ lbId }, 'haproxy is not running; starting it again');
        load = await this.pipeline.loadAccepted(state, inst, text);
      } catch (err) {
        await this.tellQuietly({ kind: 'dead', lbId });
        throw err;
      }
      await this.tellQuietly({ kind: 'restarted', lbId, load });
      return 'started';
    });
  }

  /** supervision() of every load balancer. */
  async supervisionOfAll(): Promise<{ lbId: string; supervision: Supervision }[]> {
    return Promise.all((await this.loadBalancerIds()).map(async (lbId) => ({ lbId, supervision: await this.supervision(lbId) })));
  }

  /** Who keeps this load balancer's haproxy running, and how that goes (API 2.0's status, metrics). */
  supervision(lbId: string): Promise<Supervision> {
    return supervisionOf(this.opts.supervisor, this.states.get(lbId));
  }

  /** Stop haproxy and remove everything the agent keeps for this load balancer. */
  delete(lbId: string): Promise<void> {
    return this.writing(lbId, async (state) => {
      // Told even when there was nothing: API 2.0's LVS-only load balancer goes this way too.
      if (!(await exists(state.files.dir))) return this.tell({ kind: 'deleted', lbId });
      this.states.delete(lbId);
      await this.opts.supervisor.stop(await state.storedInstance());
      await removeTree(state.files.dir);
      // Again: a reader may have read the config into a new state before it was removed.
      this.states.delete(lbId);
      await this.tell({ kind: 'deleted', lbId });
    });
  }

  async status(lbId: string): Promise<HaproxyStatus> {
    return this.opts.supervisor.status(await this.states.get(lbId).storedInstance());
  }

  async exists(lbId: string): Promise<boolean> {
    return exists(this.files(lbId).config);
  }

  /** Load balancers with an accepted config, sorted by id. */
  loadBalancerIds(): Promise<string[]> {
    return this.states.ids();
  }

  /**
   * haproxy's `show stat` rows for this load balancer, as the heartbeat and
   * API 2.0's status report them: members still being admitted are
   * AWAITING_CHECK until a check fails (admission.ts).
   */
  async stats(lbId: string): Promise<StatRow[]> {
    return this.members.reported(lbId, parseShowStat(await showStat(statsSocket(this.baseDir, lbId))));
  }

  /** The accepted config (held by a member call, or as stored), or null. */
  acceptedConfig(lbId: string): Promise<string | null> {
    return this.states.get(lbId).acceptedConfig();
  }

  /** The accepted config for a member call to edit (member-edit.ts): what earlier calls hold, or as stored; null when none. */
  memberBase(lbId: string): Promise<EditedConfig | null> {
    return this.states.get(lbId).memberBase();
  }

  /** Write the config files member calls hold (at shutdown). */
  async writeHeldConfigs(): Promise<void> {
    for (const lbId of this.states.where((s) => s.deferred.config !== null)) await this.lock.run(lbId, () => this.states.get(lbId).writeHeld());
  }

  /** Load balancers whose config an earlier agent held and never wrote (it was killed): their spec must be applied again. */
  async configsBehind(): Promise<string[]> {
    const behind: string[] = [];
    for (const lbId of await this.states.directories()) if (await exists(this.files(lbId).configBehind)) behind.push(lbId);
    return behind;
  }

  /** At agent start: finish reloads a crash interrupted (recovery.ts). Returns the load balancers it mended. */
  async recover(): Promise<string[]> {
    const recovered: string[] = [];
    for (const lbId of await this.states.directories()) {
      await this.locked(lbId, async (state) => {
        if (await recoverInterruptedReload(await state.storedInstance(), this.opts.supervisor, this.opts.log)) recovered.push(lbId);
      });
    }
    return recovered;
  }

  // --- internals (callers hold the lock) ---

  private async tell(change: HaproxyChange): Promise<void> {
    await this.opts.onChange?.(change);
  }

  /** The watchdog's changes: nobody waits for them, so a failure to follow one is logged. */
  private async tellQuietly(change: HaproxyChange): Promise<void> {
    await this.tell(change).catch((err: Error) => this.opts.log.warn({ lbId: change.lbId, err: err.message }, "cannot record haproxy's state for keepalived"));
  }

  /** A verb's report, after its load (if it loaded) was told: runtime changes and no change bind nothing new. */
  private async told(lbId: string, report: ChangeReport): Promise<ChangeReport> {
    if (report.load !== null) await this.tell({ kind: 'loaded', lbId, load: report.load });
    return report;
  }

  /**
   * Under the lock, after writing the config files member calls hold: every
   * operation but a member call's runtime change reads or replaces them.
   */
  private locked<T>(lbId: string, fn: (state: LoadBalancerState) => Promise<T>): Promise<T> {
    return this.lock.run(lbId, async () => {
      const state = this.states.get(lbId);
      await state.writeHeld();
      return fn(state);
    });
  }

  /** As locked (`writeHeld` false: `fn` writes them itself); after a failure the accepted config is read from disk again. */
  private writing<T>(lbId: string, fn: (state: LoadBalancerState) => Promise<T>, writeHeld = true): Promise<T> {
    return this.lock.run(lbId, async () => {
      const state = this.states.get(lbId);
      try {
        if (writeHeld) await state.writeHeld();
        return await fn(state);
      } catch (err) {
        this.states.peek(lbId)?.invalidate();
        throw err;
      }
    });
  }
}
