// The apply pipeline: how a change reaches one load balancer's haproxy, for
// the engine's verbs (engine.ts), which hold the load balancer's lock. A
// change is planned first (plan.ts, from the facts plan-facts.ts gathers) and
// the plan is executed:
//
//   unchanged: nothing (companion files written)
//   runtime:   stage files -> runtime commands -> commit files   (apply-runtime.ts)
//   reload:    validate (haproxy -c) -> accept -> load            (acceptance.ts, loader.ts)
//
// A runtime plan that haproxy refuses falls back to a reload. On any failure
// haproxy keeps serving what it ran, whose config stays the accepted one on
// disk, and the caller gets a typed error with haproxy's message. What a
// step learns (what haproxy runs, what it binds) goes into the load
// balancer's state (load-balancer-state.ts).
import { join } from 'node:path';
import type { Logger } from '../../log.js';
import type { ApplyOutcome } from '../../outcome.js';
import { readTextIfExists, removeFile, writeFileAtomic, writeFilesAtomic, type FileContent } from '../../system/files.js';
import { acceptConfig } from './acceptance.js';
import { haproxyCapabilities, type HaproxyCapabilities } from '../process/capabilities.js';
import { readConfig, type ConfigInfo } from '../config/config-reader.js';
import type { EditedConfig } from '../config/edited-config.js';
import type { LoadBalancerFiles } from '../layout.js';
import type { LoadBalancerState } from './load-balancer-state.js';
import { loadConfig, type LoadReport } from './loader.js';
import type { PendingMembers } from './pending.js';
import type { RetiredMembers } from './retired.js';
import { planMemberLines, type MemberLines, type Plan } from './plan.js';
import { Planner, type Planned } from './plan-facts.js';
import type { HaproxyInstance, HaproxySupervisor } from '../process/process.js';
import { runnableConfig } from '../config/runnable.js';
import { configFiles, changeAtRuntime } from './apply-runtime.js';
import type { RuntimeStep } from './runtime-plan.js';
import { RuntimeApi } from '../process/runtime-api.js';

export interface PipelineOptions {
  haproxyCommand: string[];
  /** haproxy's group comes from this file (Octavia's haproxy-default-user-group.conf). */
  userGroupFile: string;
  supervisor: HaproxySupervisor;
  log: Logger;
  /** Hold new members down until their checks pass (default true; off only to prove tests can fail). */
  protectNewMembers?: boolean;
  /** How long a member removed at runtime may keep its sessions before they are closed (default 30 s). */
  drainTimeoutMs?: number;
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

export class ApplyPipeline {
  private readonly planner: Planner;

  /** `baseDir`: the agent's base directory (haproxy -c and server-state files work only there). */
  constructor(
    private readonly opts: PipelineOptions,
    private readonly baseDir: string,
    private readonly pending: PendingMembers,
    private readonly retired: RetiredMembers,
  ) {
    this.planner = new Planner({
      running: async (state) => (await opts.supervisor.status(await state.storedInstance())).running,
      ...(opts.runtimeMemberChanges !== undefined ? { runtimeMemberChanges: opts.runtimeMemberChanges } : {}),
      ...(opts.certDir ? { certDir: opts.certDir } : {}),
    });
  }

  capabilities(): Promise<HaproxyCapabilities> {
    return haproxyCapabilities(this.opts.haproxyCommand, join(this.baseDir, '.probe'));
  }

  runtimeApi(files: LoadBalancerFiles): RuntimeApi {
    return new RuntimeApi(files.masterSocket, this.opts.drainTimeoutMs ?? 30_000);
  }

  /** engine.accept. */
  async accept(state: LoadBalancerState, amphoraId: string, text: string): Promise<void> {
    await this.validateAndAccept(state, amphoraId, text, await this.runnable(text));
  }

  /** engine.runAccepted. */
  async runAccepted(state: LoadBalancerState): Promise<ChangeReport> {
    const { text, amphoraId } = await state.accepted();
    const runnable = await this.runnable(text);
    const { plan, live } = await this.planner.runAccepted(state, text, runnable);
    return this.execute(state, plan, { text, runnable, amphoraId, candidate: false, companions: [], live });
  }

  /** engine.apply (the caller wrote the held config). */
  async apply(state: LoadBalancerState, amphoraId: string, text: string, forceReload: string | null, companions: FileContent[]): Promise<ChangeReport> {
    return this.executeNew(state, amphoraId, text, await this.planned(state, text, forceReload), companions);
  }

  /** engine.applyMemberEdit. */
  async applyMemberEdit(state: LoadBalancerState, amphoraId: string, edit: MemberEdit, companions: FileContent[]): Promise<ChangeReport> {
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
  }

  /** engine.plan (the caller wrote the held config). */
  async plan(state: LoadBalancerState, text: string, forceReload: string | null): Promise<Plan> {
    return (await this.planned(state, text, forceReload)).plan;
  }

  /** engine.planMemberEdit. */
  async planMemberEdit(state: LoadBalancerState, edit: MemberEdit): Promise<Plan> {
    if (await this.runsAsIs(state, edit.base)) return planMemberLines(edit.lines);
    await state.writeHeld();
    return this.plan(state, edit.edited.text, null);
  }

  /** Load the accepted config `text` (a start, or a restart of a dead haproxy). */
  async loadAccepted(state: LoadBalancerState, inst: HaproxyInstance, text: string): Promise<LoadReport> {
    return this.load(state, inst, text, await this.runnable(text));
  }

  /**
   * A member call through the runtime API; its config files are written
   * later (deferred-config.ts), its companions and the marker that says the
   * files are behind now. Refused by haproxy, it reloads instead.
   */
  private async editAtRuntime(
    state: LoadBalancerState,
    amphoraId: string,
    edit: MemberEdit,
    steps: RuntimeStep[],
    companions: FileContent[],
  ): Promise<ChangeReport> {
    const { files } = state;
    const done = await changeAtRuntime(this.runtimeDeps(state), [{ path: files.configBehind, data: '' }, ...companions], steps);
    if (done.kind === 'applied') {
      state.deferred.hold(edit.edited, [files.config, files.live], files.configBehind);
      return { outcome: 'runtime', steps, reloadReason: null, pending: done.pending, load: null };
    }
    await state.writeHeld();
    const text = edit.edited.text;
    const load = await this.reload(state, { text, runnable: await this.runnableOf(state, text), amphoraId, candidate: true, companions });
    await removeFile(files.configBehind);
    return { outcome: load.outcome, steps: [], reloadReason: done.reason, pending: [], load };
  }

  /** The plan for making `text` run, and its runnable form (the caller wrote the held config). */
  private async planned(state: LoadBalancerState, text: string, forceReload: string | null): Promise<Planned & { runnable: string }> {
    const runnable = await this.runnableOf(state, text);
    return { ...(await this.planner.apply(state, text, runnable, forceReload)), runnable };
  }

  /** Execute a new config's plan. Written now, the config no longer lags the spec (a catch-up after an agent restart ends here). */
  private async executeNew(
    state: LoadBalancerState,
    amphoraId: string,
    text: string,
    { plan, live, runnable }: Planned & { runnable: string },
    companions: FileContent[],
  ): Promise<ChangeReport> {
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
      const done = await changeAtRuntime(this.runtimeDeps(state), [...configFiles(state.files, change), ...change.companions], plan.steps);
      if (done.kind === 'applied') {
        state.remember(change.text);
        state.ran(change.text);
        return { outcome: 'runtime', steps: plan.steps, reloadReason: null, pending: done.pending, load: null };
      }
      reason = done.reason;
    } else {
      reason = plan.reason;
    }
    // An operator asks first why haproxy reloaded: the log line says it before the load's own.
    this.opts.log.info({ lbId: state.lbId, reason }, 'reloading haproxy');
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
    const report = await loadConfig(
      {
        supervisor: this.opts.supervisor,
        log: this.opts.log,
        baseDir: this.baseDir,
        pending: this.pending,
        retired: this.retired,
        initStateAtStartup: caps.initStateAtStartup,
        protect: this.opts.protectNewMembers !== false,
        ...(this.opts.beforeBind ? { beforeBind: this.opts.beforeBind } : {}),
      },
      inst,
      runnable,
      reading?.runnable === runnable ? reading.config : readConfig(runnable),
      live === undefined ? await readTextIfExists(inst.files.live) : live,
    );
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

  private runtimeDeps(state: LoadBalancerState) {
    return { lbId: state.lbId, runtime: this.runtimeApi(state.files), pending: this.pending, retired: this.retired, log: this.opts.log };
  }
}
