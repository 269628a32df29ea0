// The apply engine: the one path by which a load balancer's haproxy changes.
// Every caller (API 1.0 upload, reload and start, API 2.0 spec, the direct
// supervisor's watchdog) goes through it, under one lock per load balancer,
// so validation, new-member protection, state carry-over and rollback exist
// once. A change is planned first (plan.ts) and the plan is executed by one
// pipeline:
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
import { readConfig, type ConfigInfo } from './config-reader.js';
import { loadConfig, type LoadReport } from './loader.js';
import { PendingMembers } from './pending.js';
import { planMemberLines, type MemberLines, type Plan } from './plan.js';
import { Planner } from './planner.js';
import type { HaproxyInstance, HaproxyStatus, HaproxySupervisor } from './process.js';
import { recoverInterruptedReload } from './recovery.js';
import { RestartBackoff } from './restart-backoff.js';
import type { UnitState } from './systemd-unit.js';
import { StoredLoadBalancers } from './stored.js';
import { runnableConfig } from './runnable.js';
import { DeferredConfigs } from './deferred-config.js';
import { EditedConfig } from './edited-config.js';
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

/** The config an API 2.0 request brings: a whole text, or a member call's edit of the accepted one. */
export type NewConfig = string | MemberEdit;

const textOf = (config: NewConfig) => (typeof config === 'string' ? config : config.edited.text);

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

/** GET /2.0/loadbalancers/<id>/status's `haproxy`: systemd's unit state, or the direct supervisor's restarts. */
export type Supervision = { running: boolean; stopped_by_signal: boolean } & (
  | { process_manager: 'systemd'; unit: UnitState }
  | { process_manager: 'direct'; restart: { state: 'running' | 'stopped' | 'waiting' | 'dead'; restarts_in_a_row: number; next_restart_in_s: number; last_error: string | null } }
);

export class HaproxyEngine {
  private readonly lock = new KeyedLock();
  /** The direct supervisor's restart delays (watchdog.ts); kept here so status and metrics read them. */
  readonly restartBackoff: RestartBackoff;
  private readonly baseDir: string;
  private readonly pending: PendingMembers;
  private readonly planner: Planner;
  private readonly stored: StoredLoadBalancers;
  /** Per load balancer, the last API 2.0 config found to load as it is (runnableOf). */
  private readonly asIs = new Map<string, string>();
  /** Member calls' config files, written after they answered. */
  private readonly deferred: DeferredConfigs;
  /**
   * Per load balancer, the last accepted config as read while haproxy -c
   * checked it, for the load that follows (1.0's upload, then reload): the
   * load then reads no config of its own.
   */
  private readonly readings = new Map<string, { runnable: string; config: ConfigInfo }>();
  /** Per load balancer, the bind addresses of the config this process last loaded. */
  private readonly binds = new Map<string, string[]>();

  constructor(private readonly opts: EngineOptions) {
    this.baseDir = resolve(opts.baseDir);
    this.restartBackoff = new RestartBackoff();
    this.stored = new StoredLoadBalancers(this.baseDir);
    this.pending = new PendingMembers((lbId) => this.files(lbId));
    this.deferred = new DeferredConfigs((lbId) => {
      this.lock.run(lbId, () => this.writeHeld(lbId))
        .catch((err: Error) => opts.log.error({ lbId, err: err.message }, 'cannot write the config of member changes; retried at the next apply'));
    }, opts.memberConfigWriteDelayMs);
    this.planner = new Planner({
      files: (lbId) => this.files(lbId), acceptedConfig: (lbId) => this.acceptedConfig(lbId),
      running: async (lbId) => (await this.status(lbId)).running,
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
    return this.stored.files(lbId);
  }

  /** API 1.0 upload: validate, then make it the accepted config. Does not touch the running haproxy. */
  upload(lbId: string, amphoraId: string, text: string): Promise<void> {
    return this.writing(lbId, async () => {
      await this.accept(lbId, amphoraId, text, await this.runnable(text));
    });
  }

  /** What applyChange would do with `config` (a dry run). `forceReload`: as in applyChange. */
  plan(lbId: string, config: NewConfig, forceReload: string | null = null): Promise<Plan> {
    return this.lock.run(lbId, async () => {
      if (typeof config !== 'string' && forceReload === null && (await this.runsAsIs(lbId, config.base))) return planMemberLines(config.lines);
      await this.writeHeld(lbId);
      const text = textOf(config);
      return (await this.planner.put(lbId, text, await this.runnableOf(lbId, text), forceReload)).plan;
    });
  }

  /**
   * API 2.0: make `config` the running config, by the plan for it: through
   * the runtime API when only members changed (the files follow), a
   * validated load otherwise or when `forceReload` gives a reason (changed
   * certificate files). A member edit is planned from its lines when haproxy
   * runs its base, and its config files are written after it answered
   * (deferred-config.ts), so its cost does not grow with the load balancer.
   * `companions` are written before it answers.
   */
  applyChange(lbId: string, amphoraId: string, config: NewConfig, opts: { forceReload?: string; companions?: FileContent[] } = {}): Promise<ChangeReport> {
    return this.writing(lbId, async () => {
      const companions = opts.companions ?? [];
      // Planned from its lines, a member call reads no file: what earlier calls hold can wait.
      if (typeof config !== 'string' && opts.forceReload === undefined && (await this.runsAsIs(lbId, config.base))) {
        const plan = planMemberLines(config.lines);
        if (plan.kind === 'runtime') return this.editAtRuntime(lbId, amphoraId, config, plan.steps, companions);
        if (plan.kind === 'unchanged') {
          await writeFilesAtomic(companions);
          return { outcome: 'unchanged', steps: [], reloadReason: null, pending: [], load: null };
        }
      }
      await this.writeHeld(lbId);
      const text = textOf(config);
      const runnable = await this.runnableOf(lbId, text);
      const { plan, live } = await this.planner.put(lbId, text, runnable, opts.forceReload ?? null);
      // A member call planned as a whole (the first after a start) still leaves its files for later.
      if (typeof config !== 'string' && plan.kind === 'runtime' && runnable === text) return this.editAtRuntime(lbId, amphoraId, config, plan.steps, companions);
      const report = await this.execute(lbId, plan, { text, runnable, amphoraId, candidate: true, companions, live });
      // Written now, the config no longer lags the spec (a catch-up after an agent restart ends here).
      await removeFile(this.files(lbId).configBehind);
      return report;
    }, false);
  }

  /**
   * A member call through the runtime API; its config files are written
   * later (deferred-config.ts), its companions and the marker that says the
   * files are behind now. Refused by haproxy, it reloads instead.
   */
  private async editAtRuntime(lbId: string, amphoraId: string, edit: MemberEdit, steps: RuntimeStep[], companions: FileContent[]): Promise<ChangeReport> {
    const files = this.files(lbId);
    const done = await changeAtRuntime(this.runtimeDeps(lbId), [{ path: files.configBehind, data: '' }, ...companions], steps);
    if (typeof done !== 'string') {
      this.deferred.hold(lbId, edit.edited, [files.config, files.live], files.configBehind);
      return { outcome: 'runtime', steps, reloadReason: null, pending: done.pending, load: null };
    }
    await this.writeHeld(lbId);
    const text = edit.edited.text;
    const load = await this.reload(lbId, { text, runnable: await this.runnableOf(lbId, text), amphoraId, candidate: true, companions });
    await removeFile(files.configBehind);
    return { outcome: load.outcome, steps: [], reloadReason: done, pending: [], load };
  }

  /**
   * API 1.0's reload: make the accepted (uploaded) config run. Members added,
   * re-weighted or put in or out of maintenance go through the runtime API
   * when nothing else changed, no certificate changed since the last load and
   * runtime member changes are on; anything else reloads (plan.ts).
   */
  reloadAccepted(lbId: string): Promise<ChangeReport> {
    return this.writing(lbId, async () => {
      const { text, amphoraId } = await this.stored.accepted(lbId);
      const runnable = await this.runnable(text);
      const { plan, live } = await this.planner.reload(lbId, text, runnable);
      return this.execute(lbId, plan, { text, runnable, amphoraId, candidate: false, companions: [], live });
    });
  }

  /** API 1.0's start: load the accepted config unless haproxy runs (null then). */
  start(lbId: string): Promise<LoadReport | null> {
    return this.locked(lbId, () => this.loadUnlessRunning(lbId));
  }

  stop(lbId: string): Promise<void> {
    return this.locked(lbId, async () => {
      await writeFileAtomic(this.files(lbId).stopped, '', 0o600);
      this.planner.forget(lbId);
      this.restartBackoff.forget(lbId);
      await this.opts.supervisor.stop(await this.stored.storedInstance(lbId));
    });
  }

  /**
   * The direct supervisor's check (watchdog.ts): start haproxy again if it
   * died although it was not stopped on purpose, when `mayRestart` (asked
   * only then) allows it.
   */
  restartIfDead(lbId: string, mayRestart: () => boolean = () => true): Promise<Supervised> {
    return this.locked(lbId, async () => {
      // Checked under the lock: a delete or stop may just have run.
      const files = this.files(lbId);
      if ((await exists(files.stopped)) || !(await exists(files.live)) || !(await exists(files.config))) return 'stopped';
      const { text, amphoraId } = await this.stored.accepted(lbId);
      const inst = this.stored.instance(lbId, amphoraId);
      if ((await this.opts.supervisor.status(inst)).running) return 'running';
      if (!mayRestart()) return 'waiting';
      this.opts.log.warn({ lbId }, 'haproxy is not running; starting it again');
      await this.load(inst, text, await this.runnable(text));
      return 'started';
    });
  }

  /** supervision() of every load balancer. */
  async supervisionOfAll(): Promise<{ lbId: string; supervision: Supervision }[]> {
    return Promise.all((await this.loadBalancerIds()).map(async (lbId) => ({ lbId, supervision: await this.supervision(lbId) })));
  }

  /** Who keeps this load balancer's haproxy running, and how that goes (GET /2.0/.../status, metrics). */
  async supervision(lbId: string): Promise<Supervision> {
    const inst = await this.stored.storedInstance(lbId);
    const status = await this.opts.supervisor.status(inst);
    const base = { running: status.running, stopped_by_signal: status.stopped === true };
    const stoppedOnPurpose = await exists(this.files(lbId).stopped);
    const unit = await this.opts.supervisor.unitState?.(inst);
    if (unit) return { process_manager: 'systemd', ...base, unit };
    const r = this.restartBackoff.state(lbId, Date.now());
    return {
      process_manager: 'direct', ...base,
      restart: { state: status.running ? 'running' : stoppedOnPurpose ? 'stopped' : r.state === 'waiting' ? 'waiting' : 'dead', restarts_in_a_row: r.restartsInARow, next_restart_in_s: r.nextRestartInS, last_error: r.lastError },
    };
  }

  /** Stop haproxy and remove everything the agent keeps for this load balancer. */
  delete(lbId: string): Promise<void> {
    return this.writing(lbId, async () => {
      const files = this.files(lbId);
      if (!(await exists(files.dir))) return;
      this.deferred.drop(lbId);
      this.planner.forget(lbId);
      this.asIs.delete(lbId);
      this.readings.delete(lbId);
      this.binds.delete(lbId);
      this.restartBackoff.forget(lbId);
      await this.opts.supervisor.stop(await this.stored.storedInstance(lbId));
      await removeTree(files.dir);
      this.stored.remember(lbId, null);
    });
  }

  async status(lbId: string): Promise<HaproxyStatus> {
    return this.opts.supervisor.status(await this.stored.storedInstance(lbId));
  }

  async exists(lbId: string): Promise<boolean> {
    return exists(this.files(lbId).config);
  }

  /** Load balancers with an accepted config, sorted by id. */
  loadBalancerIds(): Promise<string[]> {
    return this.stored.ids();
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
    return this.binds.get(lbId) ?? readConfig((await this.acceptedConfig(lbId)) ?? '').frontends.flatMap((f) => f.bindAddresses);
  }

  /** The accepted config (held by a member call, or as stored), or null. */
  async acceptedConfig(lbId: string): Promise<string | null> {
    return this.deferred.heldConfig(lbId)?.text ?? this.stored.acceptedConfig(lbId);
  }

  /** The accepted config for a member call to edit (member-edit.ts): what earlier calls hold, or as stored; null when none. */
  async memberBase(lbId: string): Promise<EditedConfig | null> {
    const held = this.deferred.heldConfig(lbId);
    if (held) return held;
    const text = await this.stored.acceptedConfig(lbId);
    return text === null ? null : EditedConfig.of(text);
  }

  /** Write the config files member calls hold (at shutdown). */
  async writeHeldConfigs(): Promise<void> {
    for (const lbId of this.deferred.ids()) await this.lock.run(lbId, () => this.writeHeld(lbId));
  }

  /** Load balancers whose config an earlier agent held and never wrote (it was killed): their spec must be applied again. */
  async configsBehind(): Promise<string[]> {
    const behind: string[] = [];
    for (const lbId of await this.stored.directories()) if (await exists(this.files(lbId).configBehind)) behind.push(lbId);
    return behind;
  }

  /** At agent start: finish reloads a crash interrupted (recovery.ts). Returns the load balancers it mended. */
  async recover(): Promise<string[]> {
    const recovered: string[] = [];
    for (const lbId of await this.stored.directories()) {
      await this.locked(lbId, async () => {
        if (await recoverInterruptedReload(await this.stored.storedInstance(lbId), this.opts.supervisor, this.opts.log)) recovered.push(lbId);
      });
    }
    return recovered;
  }

  /** Make ready the members that wait in maintenance for a passing check (pending.ts). The agent calls this a few times a second. */
  async promotePending(): Promise<void> {
    for (const lbId of await this.pending.waiting(() => this.loadBalancerIds())) {
      await this.lock.run(lbId, () => this.pending.promote(lbId, this.runtimeApi(lbId), this.opts.log))
        .catch((err: Error) => this.opts.log.warn({ lbId, err: err.message }, 'cannot promote pending members'));
    }
  }

  // --- internals (callers hold the lock) ---

  /**
   * Under the lock, after writing the config files member calls hold: every
   * operation but a member call's runtime change reads or replaces them.
   */
  private locked<T>(lbId: string, fn: () => Promise<T>): Promise<T> {
    return this.lock.run(lbId, async () => {
      await this.writeHeld(lbId);
      return fn();
    });
  }

  /** As locked (`writeHeld` false: `fn` writes them itself); after a failure the accepted config is read from disk again (stored.ts). */
  private writing<T>(lbId: string, fn: () => Promise<T>, writeHeld = true): Promise<T> {
    return this.lock.run(lbId, async () => {
      if (writeHeld) await this.writeHeld(lbId);
      return fn();
    }).catch((err: unknown) => {
      this.stored.forget(lbId);
      throw err;
    });
  }

  /**
   * Write the config files member calls hold (the caller holds the lock).
   * haproxy runs what they held, as it is: the text written is now the
   * accepted, applied and as-is config.
   */
  private async writeHeld(lbId: string): Promise<void> {
    const text = await this.deferred.write(lbId);
    if (text === null) return;
    this.stored.remember(lbId, text);
    this.planner.ran(lbId, text);
    this.asIs.set(lbId, text);
  }

  private async execute(lbId: string, plan: Plan, change: Change): Promise<ChangeReport> {
    if (plan.kind === 'unchanged') {
      await writeFilesAtomic(change.companions);
      this.planner.ran(lbId, change.text);
      return { outcome: 'unchanged', steps: [], reloadReason: null, pending: [], load: null };
    }
    let reason: string;
    if (plan.kind === 'runtime') {
      const done = await changeAtRuntime(this.runtimeDeps(lbId), [...configFiles(this.files(lbId), change), ...change.companions], plan.steps);
      if (typeof done !== 'string') {
        this.stored.remember(lbId, change.text);
        this.planner.ran(lbId, change.text);
        return { outcome: 'runtime', steps: plan.steps, reloadReason: null, pending: done.pending, load: null };
      }
      reason = done;
    } else {
      reason = plan.reason;
    }
    // Refused part of the way, runtime steps may have changed what the live config holds: it is read again.
    const load = await this.reload(lbId, plan.kind === 'runtime' ? { ...change, live: undefined } : change);
    return { outcome: load.outcome, steps: [], reloadReason: reason, pending: [], load };
  }

  /** Validate and accept a new config (not for the accepted one), then load it; a failed load puts the previously accepted config back. */
  private async reload(lbId: string, change: Change): Promise<LoadReport> {
    const files = this.files(lbId);
    const previous = change.candidate ? await this.acceptedConfig(lbId) : null;
    if (change.candidate) await this.accept(lbId, change.amphoraId, change.text, change.runnable);
    try {
      const report = await this.load(this.stored.instance(lbId, change.amphoraId), change.text, change.runnable, change.live);
      await writeFilesAtomic(change.companions);
      return report;
    } catch (err) {
      if (change.candidate) {
        if (previous !== null) await writeFileAtomic(files.config, previous, 0o600);
        else await removeFile(files.config);
        this.stored.remember(lbId, previous);
      }
      throw err;
    }
  }

  private async loadUnlessRunning(lbId: string): Promise<LoadReport | null> {
    const { text, amphoraId } = await this.stored.accepted(lbId);
    const inst = this.stored.instance(lbId, amphoraId);
    if ((await this.opts.supervisor.status(inst)).running) return null;
    return this.load(inst, text, await this.runnable(text));
  }

  /** Load `text` (the accepted config; `runnable` its form for this binary; `live`: the live config, when read under this lock). */
  private async load(inst: HaproxyInstance, text: string, runnable: string, live?: string | null): Promise<LoadReport> {
    const caps = await this.capabilities();
    const reading = this.readings.get(inst.lbId);
    this.readings.delete(inst.lbId);
    const report = await loadConfig({
      supervisor: this.opts.supervisor, log: this.opts.log, baseDir: this.baseDir, pending: this.pending,
      initStateAtStartup: caps.initStateAtStartup, protect: this.opts.protectNewMembers !== false,
      ...(this.opts.beforeBind ? { beforeBind: this.opts.beforeBind } : {}),
    }, inst, runnable, reading?.runnable === runnable ? reading.config : readConfig(runnable), live === undefined ? await readTextIfExists(inst.files.live) : live);
    this.planner.ran(inst.lbId, text);
    this.binds.set(inst.lbId, report.bindAddresses);
    return report;
  }

  private async accept(lbId: string, amphoraId: string, text: string, runnable: string): Promise<void> {
    const { haproxyCommand, userGroupFile } = this.opts;
    let config: ConfigInfo | undefined;
    this.readings.delete(lbId);
    await acceptConfig({ haproxyCommand, userGroupFile, ownDir: this.baseDir }, this.files(lbId), amphoraId, text, runnable, () => {
      config = readConfig(runnable);
    });
    if (config) this.readings.set(lbId, { runnable, config });
    this.stored.remember(lbId, text);
  }

  /** An API 2.0 config as this binary loads it, remembered when that is the config as it is (runsAsIs). */
  private async runnableOf(lbId: string, text: string): Promise<string> {
    const runnable = await this.runnable(text);
    if (runnable === text) this.asIs.set(lbId, text);
    else this.asIs.delete(lbId);
    return runnable;
  }

  /**
   * Whether haproxy runs `base` and loads it as it is. An edit of it then
   * loads as it is too (runnable.ts changes no server line) and is planned
   * from its lines: a member call makes no pass over the whole config.
   */
  private async runsAsIs(lbId: string, base: EditedConfig): Promise<boolean> {
    if (this.deferred.heldConfig(lbId) === base) return true;
    if (!this.planner.runs(lbId, base.text)) return false;
    // Scanned once per config (the first member call after a start or a whole PUT).
    if (this.asIs.get(lbId) !== base.text) await this.runnableOf(lbId, base.text);
    return this.asIs.get(lbId) === base.text;
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
