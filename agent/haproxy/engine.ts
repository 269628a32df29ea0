// The apply engine: the one path by which a load balancer's haproxy changes.
// Its verbs: accept a config (API 1.0's upload), run the accepted config
// (API 1.0's reload; start), apply a config text (API 2.0's spec) or a member
// edit of the accepted one (API 2.0's member calls), and restart a dead
// haproxy (the direct supervisor's watchdog). Each runs under one lock per
// load balancer, so validation, new-member protection, state carry-over and
// rollback exist once; what it keeps in memory per load balancer is one
// state (load-balancer-state.ts). A change is planned first (plan.ts) and
// the plan is executed by one pipeline:
//
//   unchanged: nothing (companion files written)
//   runtime:   stage files -> runtime commands -> commit files   (runtime-change.ts)
//   reload:    validate (haproxy -c) -> accept -> load            (acceptance.ts, loader.ts)
//
// A runtime plan that haproxy refuses falls back to a reload. On any failure
// haproxy keeps serving what it ran, whose config stays the accepted one on
// disk, and the caller gets a typed error with haproxy's message.
import { join, resolve } from 'node:path';
import type { Logger } from '../log.js';
import type { ApplyOutcome } from '../outcome.js';
import {
  exists, readTextIfExists, removeFile, removeTree, writeFileAtomic, writeFilesAtomic, type FileContent,
} from '../system/files.js';
import { acceptConfig } from './acceptance.js';
import { haproxyCapabilities, type HaproxyCapabilities } from './capabilities.js';
import { KeyedLock } from './keyed-lock.js';
import { statsSocket, type LoadBalancerFiles } from './layout.js';
import { LoadBalancerStates, type LoadBalancerState } from './load-balancer-state.js';
import { readConfig, type ConfigInfo } from './config-reader.js';
import { loadConfig, type LoadReport } from './loader.js';
import { PendingMembers } from './pending.js';
import { planMemberLines, type MemberLines, type Plan } from './plan.js';
import { Planner, type Planned } from './planner.js';
import type { HaproxyInstance, HaproxyStatus, HaproxySupervisor } from './process.js';
import { recoverInterruptedReload } from './recovery.js';
import type { RestartBackoff, RestartState } from './restart-backoff.js';
import type { UnitState } from './systemd-unit.js';
import { runnableConfig } from './runnable.js';
import type { EditedConfig } from './edited-config.js';
import type { RuntimeStep } from './runtime-plan.js';
import { RuntimeApi } from './runtime.js';
import { configFiles, changeAtRuntime } from './runtime-change.js';
import { parseShowStat, showStat, type StatRow } from './stats.js';

export interface EngineOptions {
  baseDir: string;
  haproxyCommand: string[];
  /** haproxy's group comes from this file (Octavia's haproxy-default-user-group.conf). */
  userGroupFile: string;
  supervisor: HaproxySupervisor;
  log: Logger;
  /** Hold new members down until their checks pass (default true; off only to prove tests can fail). */
  protectNewMembers?: boolean;
  /** How long a member removed at runtime may keep its sessions before they are closed (default 30 s). */
  drainTimeoutMs?: number;
  /** How long a member call's config files wait to be written (deferred-config.ts). */
  memberConfigWriteDelayMs?: number;
  /**
   * API 1.0 reloads whose config differs only in members go through the
   * runtime API (default true). Needs `certDir`: a changed certificate always
   * reloads.
   */
  runtimeMemberChanges?: boolean;
  /** Where a load balancer's certificates are (Octavia: <base_cert_dir>/<lb_id>). */
  certDir?: (lbId: string) => string;
  /** Called with a config's bind addresses before haproxy loads it (loader.ts). */
  beforeBind?: (addresses: string[]) => Promise<void>;
}

/** An API 2.0 member call's config: `base` (the accepted config, memberBase) with the member's server lines changed. */
export interface MemberEdit {
  base: EditedConfig;
  edited: EditedConfig;
  lines: MemberLines[];
}

/** What applying a config did. */
export interface ChangeReport {
  outcome: ApplyOutcome;
  /** The member changes, when they went through the runtime API. */
  steps: RuntimeStep[];
  /** Why a reload was needed (null for runtime changes and no change). */
  reloadReason: string | null;
  /** Members waiting in maintenance for their first passing check ("backend/server"). */
  pending: string[];
  /** The load, when there was one. */
  load: LoadReport | null;
}

/** A config on its way to haproxy, as one request carries it: text, runnable text and companions, and for whom. */
interface Change {
  text: string;
  /** `text` as this haproxy binary loads it. */
  runnable: string;
  companions: FileContent[];
  amphoraId: string;
  /** True: a new config, validated and accepted before it loads (API 2.0); false: the accepted one (API 1.0 reload). */
  candidate: boolean;
  /** The live config it was planned from (undefined: not read yet). */
  live?: string | null;
}

/** What the watchdog's check found: haproxy runs, was stopped on purpose, was started again, or is dead and waits for its restart. */
export type Supervised = 'running' | 'stopped' | 'started' | 'waiting';

/** Who keeps a load balancer's haproxy running, and how that goes: systemd's unit state, or the direct supervisor's restarts. */
export type Supervision = { running: boolean; stoppedBySignal: boolean } & (
  | { processManager: 'systemd'; unit: UnitState }
  | { processManager: 'direct'; stoppedOnPurpose: boolean; restarts: RestartState }
);

export class HaproxyEngine {
  private readonly lock = new KeyedLock();
  private readonly baseDir: string;
  /** Everything kept in memory per load balancer (load-balancer-state.ts). */
  private readonly states: LoadBalancerStates;
  private readonly pending: PendingMembers;
  private readonly planner: Planner;

  constructor(private readonly opts: EngineOptions) {
    this.baseDir = resolve(opts.baseDir);
    this.states = new LoadBalancerStates(this.baseDir, {
      heldConfigDue: (lbId) => {
        this.lock.run(lbId, () => this.states.get(lbId).writeHeld())
          .catch((err: Error) => opts.log.error({ lbId, err: err.message }, 'cannot write the config of member changes; retried at the next apply'));
      },
      heldConfigDelayMs: opts.memberConfigWriteDelayMs,
    });
    this.pending = new PendingMembers(this.states);
    this.planner = new Planner({
      running: async (state) => (await this.opts.supervisor.status(await state.storedInstance())).running,
      ...(opts.runtimeMemberChanges !== undefined ? { runtimeMemberChanges: opts.runtimeMemberChanges } : {}),
      ...(opts.certDir ? { certDir: opts.certDir } : {}),
    });
  }

  /** Who runs haproxy (and, for consistency, keepalived): systemd units or the agent itself. */
  get processManager(): 'direct' | 'systemd' {
    return this.opts.supervisor.kind;
  }

  capabilities(): Promise<HaproxyCapabilities> {
    return haproxyCapabilities(this.opts.haproxyCommand, join(this.baseDir, '.probe'));
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
    return this.writing(lbId, async (state) => this.validateAndAccept(state, amphoraId, text, await this.runnable(text)));
  }

  /**
   * Make the accepted config run (API 1.0's reload). Members added,
   * re-weighted or put in or out of maintenance go through the runtime API
   * when nothing else changed, no certificate changed since the last load and
   * runtime member changes are on; anything else reloads (plan.ts).
   */
  runAccepted(lbId: string): Promise<ChangeReport> {
    return this.writing(lbId, async (state) => {
      const { text, amphoraId } = await state.accepted();
      const runnable = await this.runnable(text);
      const { plan, live } = await this.planner.runAccepted(state, text, runnable);
      return this.execute(state, plan, { text, runnable, amphoraId, candidate: false, companions: [], live });
    });
  }

  /**
   * Make `text` the accepted and running config (API 2.0), by the plan for
   * it: through the runtime API when only members changed (the files follow),
   * a validated load otherwise or when `forceReload` gives a reason (changed
   * certificate files). `companions` are written before it answers.
   */
  apply(lbId: string, amphoraId: string, text: string, opts: { forceReload?: string; companions?: FileContent[] } = {}): Promise<ChangeReport> {
    return this.writing(lbId, async (state) => this.executeNew(state, amphoraId, text, await this.planned(state, text, opts.forceReload ?? null), opts.companions ?? []));
  }

  /**
   * apply for a member call's edit of the accepted config. Planned from its
   * lines when haproxy runs its base, and its config files are written after
   * it answered (deferred-config.ts), so its cost does not grow with the
   * load balancer.
   */
  applyMemberEdit(lbId: string, amphoraId: string, edit: MemberEdit, companions: FileContent[] = []): Promise<ChangeReport> {
    return this.writing(lbId, async (state) => {
      // Planned from its lines, a member call reads no file: what earlier calls hold can wait.
      if (await this.runsAsIs(state, edit.base)) {
        const plan = planMemberLines(edit.lines);
        if (plan.kind === 'runtime') return this.editAtRuntime(state, amphoraId, edit, plan.steps, companions);
        if (plan.kind === 'unchanged') {
          await writeFilesAtomic(companions);
          return { outcome: 'unchanged', steps: [], reloadReason: null, pending: [], load: null };
        }
      }
      await state.writeHeld();
      const text = edit.edited.text;
      const planned = await this.planned(state, text, null);
      // Planned as a whole (the first member call after a start), it still leaves its files for later.
      if (planned.plan.kind === 'runtime' && planned.runnable === text) return this.editAtRuntime(state, amphoraId, edit, planned.plan.steps, companions);
      return this.executeNew(state, amphoraId, text, planned, companions);
    }, false);
  }

  /** What apply would do with `text` (a dry run). */
  plan(lbId: string, text: string, forceReload: string | null = null): Promise<Plan> {
    return this.locked(lbId, async (state) => (await this.planned(state, text, forceReload)).plan);
  }

  /** What applyMemberEdit would do with `edit` (a dry run). */
  planMemberEdit(lbId: string, edit: MemberEdit): Promise<Plan> {
    return this.lock.run(lbId, async () => {
      const state = this.states.get(lbId);
      if (await this.runsAsIs(state, edit.base)) return planMemberLines(edit.lines);
      await state.writeHeld();
      return (await this.planned(state, edit.edited.text, null)).plan;
    });
  }

  /** API 1.0's start: load the accepted config unless haproxy runs (null then). */
  start(lbId: string): Promise<LoadReport | null> {
    return this.locked(lbId, async (state) => {
      const { text, amphoraId } = await state.accepted();
      const inst = state.instance(amphoraId);
      if ((await this.opts.supervisor.status(inst)).running) return null;
      return this.load(state, inst, text, await this.runnable(text));
    });
  }

  stop(lbId: string): Promise<void> {
    return this.locked(lbId, async (state) => {
      await writeFileAtomic(state.files.stopped, '', 0o600);
      state.stopped();
      await this.opts.supervisor.stop(await state.storedInstance());
    });
  }

  /**
   * The direct supervisor's check (watchdog.ts): start haproxy again if it
   * died although it was not stopped on purpose, when `mayRestart` (asked
   * only then) allows it.
   */
  restartIfDead(lbId: string, mayRestart: () => boolean = () => true): Promise<Supervised> {
    return this.locked(lbId, async (state) => {
      // Checked under the lock: a delete or stop may just have run.
      const { files } = state;
      if ((await exists(files.stopped)) || !(await exists(files.live)) || !(await exists(files.config))) return 'stopped';
      const { text, amphoraId } = await state.accepted();
      const inst = state.instance(amphoraId);
      if ((await this.opts.supervisor.status(inst)).running) return 'running';
      if (!mayRestart()) return 'waiting';
      this.opts.log.warn({ lbId }, 'haproxy is not running; starting it again');
      await this.load(state, inst, text, await this.runnable(text));
      return 'started';
    });
  }

  /** supervision() of every load balancer. */
  async supervisionOfAll(): Promise<{ lbId: string; supervision: Supervision }[]> {
    return Promise.all((await this.loadBalancerIds()).map(async (lbId) => ({ lbId, supervision: await this.supervision(lbId) })));
  }

  /** Who keeps this load balancer's haproxy running, and how that goes (API 2.0's status, metrics). */
  async supervision(lbId: string): Promise<Supervision> {
    const state = this.states.get(lbId);
    const inst = await state.storedInstance();
    const status = await this.opts.supervisor.status(inst);
    const base = { running: status.running, stoppedBySignal: status.stopped === true };
    const stoppedOnPurpose = await exists(state.files.stopped);
    const unit = await this.opts.supervisor.unitState?.(inst);
    if (unit) return { processManager: 'systemd', ...base, unit };
    return { processManager: 'direct', ...base, stoppedOnPurpose, restarts: state.restarts.state(Date.now()) };
  }

  /** Stop haproxy and remove everything the agent keeps for this load balancer. */
  delete(lbId: string): Promise<void> {
    return this.writing(lbId, async (state) => {
      if (!(await exists(state.files.dir))) return;
      this.states.delete(lbId);
      await this.opts.supervisor.stop(await state.storedInstance());
      await removeTree(state.files.dir);
      // Again: a reader may have read the config into a new state before it was removed.
      this.states.delete(lbId);
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
    return this.pending.reported(lbId, parseShowStat(await showStat(statsSocket(this.baseDir, lbId))));
  }

  /**
   * The addresses haproxy binds for this load balancer: those of the config
   * this process last loaded (a member change binds nothing new), else read
   * from the accepted config.
   */
  async bindAddresses(lbId: string): Promise<string[]> {
    const state = this.states.get(lbId);
    return state.binds ?? readConfig((await state.acceptedConfig()) ?? '').frontends.flatMap((f) => f.bindAddresses);
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

  /** Make ready the members that wait in maintenance for a passing check (pending.ts). The agent calls this a few times a second. */
  async promotePending(): Promise<void> {
    for (const lbId of await this.pending.waiting()) {
      await this.lock.run(lbId, () => this.pending.promote(lbId, this.runtimeApi(lbId), this.opts.log))
        .catch((err: Error) => this.opts.log.warn({ lbId, err: err.message }, 'cannot promote pending members'));
    }
  }

  // --- internals (callers hold the lock) ---

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

  /**
   * A member call through the runtime API; its config files are written
   * later (deferred-config.ts), its companions and the marker that says the
   * files are behind now. Refused by haproxy, it reloads instead.
   */
  private async editAtRuntime(state: LoadBalancerState, amphoraId: string, edit: MemberEdit, steps: RuntimeStep[], companions: FileContent[]): Promise<ChangeReport> {
    const { files } = state;
    const done = await changeAtRuntime(this.runtimeDeps(state.lbId), [{ path: files.configBehind, data: '' }, ...companions], steps);
    if (typeof done !== 'string') {
      state.deferred.hold(edit.edited, [files.config, files.live], files.configBehind);
      return { outcome: 'runtime', steps, reloadReason: null, pending: done.pending, load: null };
    }
    await state.writeHeld();
    const text = edit.edited.text;
    const load = await this.reload(state, { text, runnable: await this.runnableOf(state, text), amphoraId, candidate: true, companions });
    await removeFile(files.configBehind);
    return { outcome: load.outcome, steps: [], reloadReason: done, pending: [], load };
  }

  /** The plan for making `text` run, and its runnable form (the caller wrote the held config). */
  private async planned(state: LoadBalancerState, text: string, forceReload: string | null): Promise<Planned & { runnable: string }> {
    const runnable = await this.runnableOf(state, text);
    return { ...(await this.planner.apply(state, text, runnable, forceReload)), runnable };
  }

  /** Execute a new config's plan. Written now, the config no longer lags the spec (a catch-up after an agent restart ends here). */
  private async executeNew(state: LoadBalancerState, amphoraId: string, text: string, { plan, live, runnable }: Planned & { runnable: string }, companions: FileContent[]): Promise<ChangeReport> {
    const report = await this.execute(state, plan, { text, runnable, amphoraId, candidate: true, companions, live });
    await removeFile(state.files.configBehind);
    return report;
  }

  private async execute(state: LoadBalancerState, plan: Plan, change: Change): Promise<ChangeReport> {
    if (plan.kind === 'unchanged') {
      await writeFilesAtomic(change.companions);
      state.ran(change.text);
      return { outcome: 'unchanged', steps: [], reloadReason: null, pending: [], load: null };
    }
    let reason: string;
    if (plan.kind === 'runtime') {
      const done = await changeAtRuntime(this.runtimeDeps(state.lbId), [...configFiles(state.files, change), ...change.companions], plan.steps);
      if (typeof done !== 'string') {
        state.remember(change.text);
        state.ran(change.text);
        return { outcome: 'runtime', steps: plan.steps, reloadReason: null, pending: done.pending, load: null };
      }
      reason = done;
    } else {
      reason = plan.reason;
    }
    // Refused part of the way, runtime steps may have changed what the live config holds: it is read again.
    const load = await this.reload(state, plan.kind === 'runtime' ? { ...change, live: undefined } : change);
    return { outcome: load.outcome, steps: [], reloadReason: reason, pending: [], load };
  }

  /** Validate and accept a new config (not for the accepted one), then load it; a failed load puts the previously accepted config back. */
  private async reload(state: LoadBalancerState, change: Change): Promise<LoadReport> {
    const previous = change.candidate ? await state.acceptedConfig() : null;
    if (change.candidate) await this.validateAndAccept(state, change.amphoraId, change.text, change.runnable);
    try {
      const report = await this.load(state, state.instance(change.amphoraId), change.text, change.runnable, change.live);
      await writeFilesAtomic(change.companions);
      return report;
    } catch (err) {
      if (change.candidate) {
        if (previous !== null) await writeFileAtomic(state.files.config, previous, 0o600);
        else await removeFile(state.files.config);
        state.remember(previous);
      }
      throw err;
    }
  }

  /** Load `text` (the accepted config; `runnable` its form for this binary; `live`: the live config, when read under this lock). */
  private async load(state: LoadBalancerState, inst: HaproxyInstance, text: string, runnable: string, live?: string | null): Promise<LoadReport> {
    const caps = await this.capabilities();
    const reading = state.takeReading();
    const report = await loadConfig({
      supervisor: this.opts.supervisor, log: this.opts.log, baseDir: this.baseDir, pending: this.pending,
      initStateAtStartup: caps.initStateAtStartup, protect: this.opts.protectNewMembers !== false,
      ...(this.opts.beforeBind ? { beforeBind: this.opts.beforeBind } : {}),
    }, inst, runnable, reading?.runnable === runnable ? reading.config : readConfig(runnable), live === undefined ? await readTextIfExists(inst.files.live) : live);
    state.loaded(text, report.bindAddresses);
    return report;
  }

  private async validateAndAccept(state: LoadBalancerState, amphoraId: string, text: string, runnable: string): Promise<void> {
    const { haproxyCommand, userGroupFile } = this.opts;
    let config: ConfigInfo | undefined;
    state.takeReading();
    await acceptConfig({ haproxyCommand, userGroupFile, ownDir: this.baseDir }, state.files, amphoraId, text, runnable, () => {
      config = readConfig(runnable);
    });
    state.validated(text, config ? { runnable, config } : null);
  }

  /** An API 2.0 config as this binary loads it, remembered when that is the config as it is (runsAsIs). */
  private async runnableOf(state: LoadBalancerState, text: string): Promise<string> {
    const runnable = await this.runnable(text);
    state.asIs = runnable === text ? text : null;
    return runnable;
  }

  /**
   * Whether haproxy runs `base` and loads it as it is. An edit of it then
   * loads as it is too (runnable.ts changes no server line) and is planned
   * from its lines: a member call makes no pass over the whole config.
   */
  private async runsAsIs(state: LoadBalancerState, base: EditedConfig): Promise<boolean> {
    if (state.deferred.config === base) return true;
    if (!state.runs(base.text)) return false;
    // Scanned once per config (the first member call after a start or a whole PUT).
    if (state.asIs !== base.text) await this.runnableOf(state, base.text);
    return state.asIs === base.text;
  }

  /** The config as this haproxy binary can load it (runnable.ts); the accepted text stays as uploaded. */
  private async runnable(text: string): Promise<string> {
    return runnableConfig(text, await this.capabilities());
  }

  private runtimeApi(lbId: string): RuntimeApi {
    return new RuntimeApi(this.files(lbId).masterSocket, this.opts.drainTimeoutMs ?? 30_000);
  }

  private runtimeDeps(lbId: string) {
    return { lbId, runtime: this.runtimeApi(lbId), pending: this.pending, log: this.opts.log };
  }
}
