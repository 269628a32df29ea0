// The apply engine: the one path by which a load balancer's haproxy changes.
// Every caller (API 1.0 upload + reload, API 2.0 spec, tests) goes through it,
// so validation, new-member protection, state carry-over and rollback exist once.
// A change is planned first: member-only changes go through the runtime API
// (no reload), anything else takes the reload path:
//
//   validate (haproxy -c)  ->  commit (haproxy.cfg)  ->  dump running state
//   -> plan protection  ->  write state file + live config  ->  reload  ->  verify
//
// On any failure haproxy keeps serving the previous config, which stays the
// live one on disk, and the caller gets a typed error with haproxy's message.
import { readdir } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type { Logger } from '../log.js';
import { run } from '../system/exec.js';
import {
  ensureDir, exists, modifiedAt, newestModification, readTextIfExists, removeFile, removeTree, renameDurable, stageFiles,
  writeFileAtomic, writeFilesAtomic,
} from '../system/files.js';
import { haproxyCapabilities, type HaproxyCapabilities } from './capabilities.js';
import { readConfig } from './config-reader.js';
import { HaproxyFailedError, InvalidConfigError, LoadBalancerNotFoundError } from './errors.js';
import { KeyedLock } from './keyed-lock.js';
import { runnableConfig } from './runnable.js';
import { loadBalancerFiles, memberKey, peerName as peerNameOf, statsSocket, type LoadBalancerFiles } from './layout.js';
import { withPendingDown, type AdmissionMethod } from './admission.js';
import { parseShowStat, showStat, type StatRow } from './stats.js';
import { MasterCliError, workerCommand } from './master-cli.js';
import { interruptedReloadOutcome, LOAD_TIMEOUT_MS, type HaproxyInstance, type HaproxyStatus, type HaproxySupervisor } from './process.js';
import { planProtection } from './protection.js';
import { planRuntime, type RuntimePlan, type RuntimeStep } from './runtime-plan.js';
import { RuntimeApi, RuntimeCommandError, type PendingMember, type RuntimeResult } from './runtime.js';
import { parseServerState, type ServerStateDump } from './server-state.js';

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
  /**
   * API 1.0 reloads whose config differs only in members go through the
   * runtime API (default true). Needs `certDir`: a changed certificate always
   * reloads.
   */
  runtimeMemberChanges?: boolean;
  /** Where a load balancer's certificates are (Octavia: <base_cert_dir>/<lb_id>). */
  certDir?: (lbId: string) => string;
}

/** A file of the load balancer's directory that belongs with a config (the spec it was rendered from): written once the config is applied. */
export interface Companion {
  path: string;
  data: string;
}

/** What applying a config did: nothing, runtime commands only, or a (re)load. */
export interface ChangeReport {
  result: 'unchanged' | 'runtime' | 'reloaded' | 'started';
  /** The member changes, when they went through the runtime API. */
  steps: RuntimeStep[];
  /** Why a reload was needed (null for runtime changes and no change). */
  reloadReason: string | null;
  /** Members waiting in maintenance for their first passing check ("backend/server"). */
  pending: string[];
}

export interface ReloadReport {
  action: 'started' | 'reloaded';
  /** Members held down until their first successful checks ("backend/server"). */
  newMembers: string[];
  method: AdmissionMethod | null;
  warnings: string[];
  workerPid: number | null;
  durationMs: number;
}

interface AppliedRecord {
  workerPid: number | null;
  /** The master's reload counter after this load. */
  masterReloads: number;
}


export class HaproxyEngine {
  private readonly lock = new KeyedLock();
  private readonly baseDir: string;
  /** Load balancers with members waiting for a first passing check; null until read from disk. */
  private pendingLbs: Set<string> | null = null;

  constructor(private readonly opts: EngineOptions) {
    this.baseDir = resolve(opts.baseDir);
  }

  /** Who runs haproxy (and, for consistency, keepalived): systemd units or the agent itself. */
  get processManager(): 'direct' | 'systemd' {
    return this.opts.supervisor.kind;
  }

  capabilities(): Promise<HaproxyCapabilities> {
    return haproxyCapabilities(this.opts.haproxyCommand, join(this.baseDir, '.probe'));
  }

  files(lbId: string): LoadBalancerFiles {
    return loadBalancerFiles(this.baseDir, lbId);
  }

  /** Validate a configuration the way Octavia does: haproxy -c with the peer name and the user/group file. */
  private async validate(lbId: string, amphoraId: string, text: string): Promise<void> {
    const files = this.files(lbId);
    await ensureDir(files.dir, 0o755);
    await writeFileAtomic(files.candidate, text, 0o600);
    // haproxy judges what it would load; the candidate keeps the text as sent.
    const runnable = await this.runnable(text);
    if (runnable !== text) await writeFileAtomic(files.candidateLive, runnable, 0o600);
    const res = await run([
      ...this.opts.haproxyCommand, '-c', '-L', peerNameOf(amphoraId),
      '-f', runnable !== text ? files.candidateLive : files.candidate, '-f', this.opts.userGroupFile,
    ]);
    if (runnable !== text) await removeFile(files.candidateLive);
    if (res.exitCode !== 0) {
      await renameDurable(files.candidate, files.rejected);
      throw new InvalidConfigError(res.output.trim());
    }
  }

  /** The config as this haproxy binary can load it (runnable.ts); the accepted text stays as uploaded. */
  private async runnable(text: string): Promise<string> {
    return runnableConfig(text, await this.capabilities());
  }

  /** API 1.0 upload: validate, then make it the accepted config. Does not touch the running haproxy. */
  upload(lbId: string, amphoraId: string, text: string): Promise<void> {
    return this.lock.run(lbId, async () => {
      await this.ensureUserGroupFile();
      await this.validate(lbId, amphoraId, text);
      await this.commitCandidate(lbId, amphoraId);
    });
  }

  /** Validate, commit and load in one step; on a failed load the previously accepted config is restored. */
  apply(lbId: string, amphoraId: string, text: string): Promise<ReloadReport> {
    return this.lock.run(lbId, async () => {
      await this.ensureUserGroupFile();
      const files = this.files(lbId);
      const previous = await readTextIfExists(files.config);
      await this.validate(lbId, amphoraId, text);
      await this.commitCandidate(lbId, amphoraId);
      try {
        return await this.load(lbId);
      } catch (err) {
        if (previous !== null) await writeFileAtomic(files.config, previous, 0o600);
        else await removeFile(files.config);
        throw err;
      }
    });
  }

  /**
   * API 2.0: make `text` the running config. When only members changed and
   * haproxy runs the accepted config, the change goes through the runtime API
   * and the files are updated to match, with no reload; otherwise (or when a
   * runtime command is refused, or `forceReload` gives a reason such as
   * changed certificate files) it is validated and loaded like apply().
   */
  applyChange(lbId: string, amphoraId: string, text: string, opts: { forceReload?: string; companions?: Companion[] } = {}): Promise<ChangeReport> {
    return this.lock.run(lbId, async () => {
      const files = this.files(lbId);
      const companions = opts.companions ?? [];
      const plan = opts.forceReload ? { steps: [], reloadReason: opts.forceReload } : await this.planChange(lbId, text);
      if (plan.reloadReason === null && plan.steps.length === 0 && (await readTextIfExists(files.config)) === text
        && (await this.opts.supervisor.status(await this.instance(lbId))).running) {
        if (companions.length > 0) await writeFilesAtomic(companions);
        return { result: 'unchanged', steps: [], reloadReason: null, pending: [] };
      }
      if (plan.reloadReason === null) {
        const runtime = await this.tryRuntimeChange(lbId, text, plan.steps, companions);
        if (typeof runtime !== 'string') return runtime;
        plan.reloadReason = runtime;
      }
      await this.ensureUserGroupFile();
      const previous = await readTextIfExists(files.config);
      await this.validate(lbId, amphoraId, text);
      await this.commitCandidate(lbId, amphoraId);
      try {
        const reload = await this.load(lbId);
        if (companions.length > 0) await writeFilesAtomic(companions);
        return { result: reload.action, steps: [], reloadReason: plan.reloadReason, pending: [] };
      } catch (err) {
        if (previous !== null) await writeFileAtomic(files.config, previous, 0o600);
        else await removeFile(files.config);
        throw err;
      }
    });
  }

  /** What applyChange would do with `text`, without doing it. */
  previewChange(lbId: string, text: string): Promise<RuntimePlan> {
    return this.lock.run(lbId, () => this.planChange(lbId, text));
  }

  /**
   * Make ready the members that wait in maintenance for a passing check (see
   * runtime.ts). The agent calls this a few times a second.
   */
  async promotePending(): Promise<void> {
    if (this.pendingLbs === null) {
      // Once, from disk (an agent restart); from then on writePending keeps it.
      const found = new Set<string>();
      for (const lbId of await this.loadBalancerIds()) if (await exists(this.files(lbId).pendingReady)) found.add(lbId);
      this.pendingLbs = found;
    }
    for (const lbId of [...this.pendingLbs]) {
      const files = this.files(lbId);
      await this.lock.run(lbId, async () => {
        const pending = await this.readPending(files);
        if (pending.length === 0) {
          this.pendingLbs?.delete(lbId); // deleted or reloaded meanwhile
          return;
        }
        const waiting = await new RuntimeApi(files.masterSocket, this.drainTimeoutMs).promote(pending);
        if (waiting.length !== pending.length) {
          this.opts.log.info({ lbId, ready: pending.filter((p) => !waiting.includes(p)).map((p) => memberKey(p.backend, p.server)) }, 'members passed their first check');
          await this.writePending(files, waiting);
        }
      }).catch((err: Error) => this.opts.log.warn({ lbId, err: err.message }, 'cannot promote pending members'));
    }
  }

  /**
   * API 1.0's reload: make the accepted (uploaded) config run. When it differs
   * from what haproxy runs only in members added, re-weighted or put in or out
   * of maintenance, and no certificate changed since the last load, that goes
   * through the runtime API with no reload, under the same protection for new
   * members. Removed members still reload, as Octavia's agent does: their
   * sessions finish on the old worker instead of waiting for a drain.
   */
  reloadAccepted(lbId: string): Promise<ChangeReport> {
    return this.lock.run(lbId, async () => {
      const text = await readTextIfExists(this.files(lbId).config);
      if (text === null) throw new LoadBalancerNotFoundError(lbId);
      const plan = await this.planReload(lbId, text);
      if (plan.reloadReason === null) {
        const runtime = await this.tryRuntimeChange(lbId, text, plan.steps, []);
        if (typeof runtime !== 'string') return runtime;
        plan.reloadReason = runtime;
      }
      const reload = await this.load(lbId);
      return { result: reload.action, steps: [], reloadReason: plan.reloadReason, pending: [] };
    });
  }

  /** The runtime steps an API 1.0 reload of `text` can be, or why it must reload. */
  private async planReload(lbId: string, text: string): Promise<RuntimePlan> {
    const reload = (reloadReason: string) => ({ steps: [], reloadReason });
    if (this.opts.runtimeMemberChanges === false || !this.opts.certDir) return reload('runtime member changes are off');
    const plan = await this.planChange(lbId, text);
    if (plan.reloadReason !== null) return plan;
    if (plan.steps.length === 0) return reload('nothing changed that the runtime API could apply');
    if (plan.steps.some((s) => s.kind === 'remove')) return reload('members removed');
    const loadedAt = await modifiedAt(this.files(lbId).applied);
    const certsAt = await newestModification(this.opts.certDir(lbId));
    if (loadedAt === null || (certsAt !== null && certsAt >= loadedAt)) return reload('certificates changed since the last load');
    return plan;
  }

  start(lbId: string): Promise<ReloadReport | null> {
    return this.lock.run(lbId, async () => {
      const inst = await this.instance(lbId);
      const status = await this.opts.supervisor.status(inst);
      return status.running ? null : this.load(lbId);
    });
  }

  stop(lbId: string): Promise<void> {
    return this.lock.run(lbId, async () => {
      await writeFileAtomic(this.files(lbId).stopped, '', 0o600);
      await this.opts.supervisor.stop(await this.instance(lbId));
    });
  }

  /**
   * Direct supervision's answer to systemd's Restart=always: start again every
   * load balancer whose haproxy died although it was not stopped on purpose.
   * Returns the load balancers it restarted.
   */
  async restartDead(): Promise<string[]> {
    const restarted: string[] = [];
    for (const lbId of await this.loadBalancerIds()) {
      await this.lock.run(lbId, async () => {
        // Checked under the lock: a delete or stop may just have run.
        const files = this.files(lbId);
        if ((await exists(files.stopped)) || !(await exists(files.live)) || !(await exists(files.config))) return;
        if ((await this.opts.supervisor.status(await this.instance(lbId))).running) return;
        this.opts.log.warn({ lbId }, 'haproxy is not running; starting it again');
        await this.load(lbId);
        restarted.push(lbId);
      }).catch((err: Error) => this.opts.log.error({ lbId, err: err.message }, 'restarting haproxy failed'));
    }
    return restarted;
  }

  /** Stop haproxy and remove everything the agent keeps for this load balancer. */
  delete(lbId: string): Promise<void> {
    return this.lock.run(lbId, async () => {
      const files = this.files(lbId);
      if (!(await exists(files.dir))) return;
      const inst = await this.instance(lbId);
      await this.opts.supervisor.stop(inst);
      await removeTree(files.dir);
    });
  }

  async status(lbId: string): Promise<HaproxyStatus> {
    return this.opts.supervisor.status(await this.instance(lbId));
  }

  async exists(lbId: string): Promise<boolean> {
    return exists(this.files(lbId).config);
  }

  /** Load balancers with an accepted config, sorted by id. */
  async loadBalancerIds(): Promise<string[]> {
    const entries = await readdir(this.baseDir, { withFileTypes: true }).catch(() => []);
    const ids: string[] = [];
    for (const e of entries) {
      if (e.isDirectory() && !e.name.startsWith('.') && (await exists(this.files(e.name).config))) ids.push(e.name);
    }
    return ids.sort();
  }

  /**
   * haproxy's `show stat` rows for this load balancer, as the heartbeat and
   * API 2.0's status report them: members waiting for their first passing
   * check are DOWN.
   */
  async stats(lbId: string): Promise<StatRow[]> {
    const rows = parseShowStat(await showStat(statsSocket(this.baseDir, lbId)));
    const pending = await this.readPending(this.files(lbId));
    return pending.length > 0 ? withPendingDown(rows, pending) : rows;
  }

  /** The accepted config as stored, or null. */
  acceptedConfig(lbId: string): Promise<string | null> {
    return readTextIfExists(this.files(lbId).config);
  }

  /**
   * At agent start: finish what a crash interrupted. A `.prev` beside the live
   * config means a reload was in flight. The master's reload counter tells
   * whether it was triggered: if it moved past the recorded value and the new
   * worker comes up, haproxy runs the new live config and that is recorded;
   * otherwise (not triggered, or the load failed) the previous live config is
   * put back, because that is what still runs.
   */
  async recover(): Promise<string[]> {
    const recovered: string[] = [];
    const entries = await readdir(this.baseDir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
      const lbId = entry.name;
      await this.lock.run(lbId, async () => {
        const files = this.files(lbId);
        const previous = await readTextIfExists(files.livePrevious);
        if (previous === null) return;
        const status = await this.settledStatus(await this.instance(lbId));
        const applied = await this.readApplied(files);
        const live = await readTextIfExists(files.live);
        const triggered = status.table !== null && applied !== null && status.table.reloads > applied.masterReloads;
        // A counted reload may still be loading its new worker: wait for its end.
        const loaded = triggered && live !== null ? await interruptedReloadOutcome(files, applied!.workerPid) : null;
        if (loaded) {
          await this.writeApplied(files, { workerPid: loaded.workerPid, masterReloads: loaded.table!.reloads });
          this.opts.log.warn({ lbId, workerPid: loaded.workerPid }, 'interrupted reload had completed; keeping the new live config');
        } else {
          await writeFileAtomic(files.live, previous, 0o600);
          this.opts.log.warn({ lbId }, 'interrupted reload had not happened; restored the previous live config');
        }
        await removeFile(files.livePrevious);
        recovered.push(lbId);
      });
    }
    return recovered;
  }

  /** Status once the master answers: right after a reload it is briefly unreachable while it re-executes. */
  private async settledStatus(inst: HaproxyInstance): Promise<HaproxyStatus> {
    const deadline = Date.now() + LOAD_TIMEOUT_MS;
    for (;;) {
      const status = await this.opts.supervisor.status(inst);
      if (!status.running || (status.table && status.workerPid) || Date.now() > deadline) return status;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  // --- internals (callers hold the lock) ---

  private get drainTimeoutMs(): number {
    return this.opts.drainTimeoutMs ?? 30_000;
  }

  /**
   * Runtime changes are planned against the live config: what haproxy loaded,
   * with the agent's own protection edits, which the plan sees through.
   * Whether haproxy runs is not asked here (it costs a master CLI round trip):
   * a runtime command to a stopped haproxy fails and falls back to a load.
   */
  private async planChange(lbId: string, text: string): Promise<RuntimePlan> {
    const live = await readTextIfExists(this.files(lbId).live);
    if (live === null) return { steps: [], reloadReason: 'haproxy has not loaded this load balancer' };
    return planRuntime(live, await this.runnable(text));
  }

  /** A runtime change, or why it fell back (haproxy refused a command or did not answer). */
  private async tryRuntimeChange(lbId: string, text: string, steps: RuntimeStep[], companions: Companion[]): Promise<ChangeReport | string> {
    try {
      return await this.runtimeChange(lbId, text, steps, companions);
    } catch (err) {
      if (err instanceof MasterCliError) {
        this.opts.log.warn({ lbId, err: err.message }, 'runtime API unreachable; loading instead');
        return `haproxy's runtime API did not answer: ${err.message}`;
      }
      if (!(err instanceof RuntimeCommandError)) throw err;
      this.opts.log.warn({ lbId, err: err.message }, 'runtime change refused by haproxy; reloading instead');
      return `haproxy refused a runtime command: ${err.message}`;
    }
  }

  private async runtimeChange(lbId: string, text: string, steps: RuntimeStep[], companions: Companion[]): Promise<ChangeReport> {
    const files = this.files(lbId);
    // The files follow, so the next reload (state dump included) keeps the
    // members: accepted and live config are the same text here, one write
    // with the spec beside it. Their data syncs while haproxy takes the
    // commands; they are renamed into place once haproxy took them all.
    // (The live one in this haproxy's syntax, when that differs.)
    const runnable = await this.runnable(text);
    const configs = runnable === text
      ? [{ path: [files.config, files.live], data: text }]
      : [{ path: files.config, data: text }, { path: files.live, data: runnable }];
    const staging = stageFiles([...configs, ...companions]);
    staging.catch(() => undefined); // its failure is handled below, not an unhandled rejection meanwhile
    let result: RuntimeResult;
    try {
      result = await new RuntimeApi(files.masterSocket, this.drainTimeoutMs).apply(steps);
    } catch (err) {
      (await staging.catch(() => null))?.discard();
      throw err;
    }
    (await staging).commit();
    const key = (p: { backend: string; server: string }) => memberKey(p.backend, p.server);
    const pending = [
      ...(await this.readPending(files)).filter((p) => !result.settled.includes(key(p)) && !result.pending.some((q) => key(q) === key(p))),
      ...result.pending,
    ];
    await this.writePending(files, pending);
    this.opts.log.info({ lbId, steps: steps.map((s) => `${s.kind} ${memberKey(s.backend, s.server)}`), pending: result.pending.map(key) }, 'members changed at runtime');
    return { result: 'runtime', steps, reloadReason: null, pending: result.pending.map(key) };
  }

  private async readPending(files: LoadBalancerFiles): Promise<PendingMember[]> {
    const text = await readTextIfExists(files.pendingReady);
    return text ? (JSON.parse(text) as PendingMember[]) : [];
  }

  private async writePending(files: LoadBalancerFiles, pending: PendingMember[]): Promise<void> {
    const lbId = basename(files.dir);
    if (pending.length === 0) {
      await removeFile(files.pendingReady);
      this.pendingLbs?.delete(lbId);
    } else {
      await writeFileAtomic(files.pendingReady, JSON.stringify(pending), 0o600);
      this.pendingLbs?.add(lbId);
    }
  }

  private async commitCandidate(lbId: string, amphoraId: string): Promise<void> {
    const files = this.files(lbId);
    await renameDurable(files.candidate, files.config);
    await writeFileAtomic(files.meta, JSON.stringify({ amphoraId }), 0o600);
  }

  private async instance(lbId: string): Promise<HaproxyInstance> {
    const files = this.files(lbId);
    const meta = await readTextIfExists(files.meta);
    const amphoraId = meta ? (JSON.parse(meta) as { amphoraId: string }).amphoraId : lbId;
    return { lbId, files, peerName: peerNameOf(amphoraId) };
  }

  private async load(lbId: string): Promise<ReloadReport> {
    const started = Date.now();
    const inst = await this.instance(lbId);
    const { files } = inst;
    const configText = await readTextIfExists(files.config);
    if (configText === null) throw new LoadBalancerNotFoundError(lbId);

    const caps = await this.capabilities();
    const before = await this.opts.supervisor.status(inst);
    // Protection edits the text haproxy loads: line numbers are those of the runnable text.
    const runnableText = await this.runnable(configText);
    const config = readConfig(runnableText);
    const running = before.running ? await this.runningState(inst, config.serverStateFile) : null;
    // Members waiting in (CLI) maintenance for a first passing check would keep
    // that maintenance through the state file: they start again as new members.
    const pending = new Set((await this.readPending(files)).map((p) => memberKey(p.backend, p.server)));
    if (running && pending.size > 0) running.entries = running.entries.filter((e) => !pending.has(memberKey(e.backend, e.server)));
    const plan = planProtection({
      configText: runnableText, config, running, initStateAtStartup: caps.initStateAtStartup, protect: this.opts.protectNewMembers !== false,
    });
    for (const w of plan.warnings) this.opts.log.warn({ lbId }, w);

    if (config.serverStateFile) {
      if (this.isOwnPath(config.serverStateFile)) await writeFileAtomic(config.serverStateFile, plan.stateFile, 0o600);
      else this.opts.log.warn({ lbId, path: config.serverStateFile }, 'server-state file outside the agent directories; not written');
    }

    await removeFile(files.stopped);
    const previousLive = await readTextIfExists(files.live);
    if (previousLive !== null) await writeFileAtomic(files.livePrevious, previousLive, 0o600);
    await writeFileAtomic(files.live, plan.effectiveConfig, 0o600);

    let after: HaproxyStatus;
    try {
      after = before.running
        ? await this.opts.supervisor.reload(inst, before)
        : await this.opts.supervisor.start(inst);
    } catch (err) {
      const failure = err instanceof HaproxyFailedError ? err : new HaproxyFailedError(before.running ? 'reload' : 'start', String(err));
      if (previousLive !== null) await writeFileAtomic(files.live, previousLive, 0o600);
      else await removeFile(files.live);
      await removeFile(files.livePrevious);
      if (before.running) await this.reloadPrevious(inst, failure);
      throw failure;
    }
    await this.writeApplied(files, { workerPid: after.workerPid, masterReloads: after.table?.reloads ?? 0 });
    await removeFile(files.livePrevious);
    await this.writePending(files, []);

    const report: ReloadReport = {
      action: before.running ? 'reloaded' : 'started',
      newMembers: plan.newMembers.map((s) => memberKey(s.backend, s.name)),
      method: plan.method,
      warnings: plan.warnings,
      workerPid: after.workerPid,
      durationMs: Date.now() - started,
    };
    this.opts.log.info({ lbId, ...report }, `haproxy ${report.action}`);
    return report;
  }

  /**
   * After a failed load haproxy's old workers may have paused their listeners
   * for the socket hand-over and not resumed them (seen on 2.6 and 3.2 when a
   * bind address is missing): reload once more with the previous live config,
   * which loaded before, so the listeners serve again.
   */
  private async reloadPrevious(inst: HaproxyInstance, failure: HaproxyFailedError): Promise<void> {
    try {
      const status = await this.opts.supervisor.status(inst);
      await this.opts.supervisor.reload(inst, status);
      this.opts.log.warn({ lbId: inst.lbId, err: failure.output }, 'reload failed; haproxy reloaded with the previous config');
    } catch (err) {
      this.opts.log.error({ lbId: inst.lbId, err: String(err) }, 'reload failed and the previous config did not reload either');
    }
  }

  /**
   * What haproxy runs now, from `show servers state` right before the reload.
   * If the dump fails, fall back to the last state file so running members are
   * not mistaken for new ones (which would take them out of service).
   */
  private async runningState(inst: HaproxyInstance, stateFile: string | null): Promise<ServerStateDump | null> {
    try {
      const text = await workerCommand(inst.files.masterSocket, 'show servers state', 10_000);
      if (/^1\s*$/m.test(text)) return parseServerState(text);
      throw new Error(text.trim() || 'empty answer');
    } catch (err) {
      this.opts.log.warn({ lbId: inst.lbId, err: String(err) }, 'cannot dump server state; using the last state file');
      const saved = stateFile ? await readTextIfExists(stateFile) : null;
      return saved ? parseServerState(saved) : { header: [], entries: [] };
    }
  }

  private isOwnPath(path: string): boolean {
    return resolve(path).startsWith(`${this.baseDir}/`);
  }

  private async ensureUserGroupFile(): Promise<void> {
    if (!(await exists(this.opts.userGroupFile)) && this.isOwnPath(this.opts.userGroupFile)) {
      await writeFileAtomic(this.opts.userGroupFile, 'global\n    group nogroup\n', 0o644);
    }
  }

  private async readApplied(files: LoadBalancerFiles): Promise<AppliedRecord | null> {
    const text = await readTextIfExists(files.applied);
    return text ? (JSON.parse(text) as AppliedRecord) : null;
  }

  private async writeApplied(files: LoadBalancerFiles, record: AppliedRecord): Promise<void> {
    await writeFileAtomic(files.applied, JSON.stringify(record), 0o600);
  }
}
