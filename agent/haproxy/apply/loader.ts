// The load step: make haproxy run a config, starting it or reloading it,
// with the member-protection rule applied (protection.ts, admission.ts):
//
//   (peers: wait for the running worker's stick tables, peers-resync.ts)
//   -> dump running state -> plan protection -> write state file + live config
//   -> start or reload -> verify a new worker answers
//
// On failure the previous live config is put back (haproxy still runs it)
// and the caller gets HaproxyFailedError with haproxy's message.
import { resolve } from 'node:path';
import type { Logger } from '../../log.js';
import { linkDurable, readTextIfExists, removeFile, renameDurable, stageFiles, type FileContent } from '../../system/files.js';
import type { AdmissionMethod } from '../../model/admission.js';
import { writeApplied } from '../process/applied.js';
import type { ConfigInfo } from '../config/config-reader.js';
import { HaproxyFailedError } from '../errors.js';
import { memberKey } from '../../model/names.js';
import { workerCommand } from '../process/master-cli.js';
import type { PendingMembers } from './pending.js';
import { keyOf } from './member-list.js';
import { carriedChecks } from '../config/carried-checks.js';
import type { RetiredMembers } from './retired.js';
import { hasPeers, waitForPeersLesson } from '../process/peers-resync.js';
import type { HaproxyInstance, HaproxyStatus, HaproxySupervisor } from '../process/process.js';
import { planProtection } from '../config/protection.js';

export interface LoadDeps {
  supervisor: HaproxySupervisor;
  log: Logger;
  /** The agent's base directory: the only place a server-state file is written. */
  baseDir: string;
  pending: PendingMembers;
  retired: RetiredMembers;
  /** The haproxy binary applies `init-state` at start-up (capabilities.ts). */
  initStateAtStartup: boolean;
  /** False switches protection off (only to prove that tests can fail). */
  protect: boolean;
  /** Called with the config's bind addresses before haproxy loads it (the development default makes them local). */
  beforeBind?: (addresses: string[]) => Promise<void>;
}

export interface LoadReport {
  outcome: 'started' | 'reloaded';
  /** Members held down until their first successful checks ("backend/server"). */
  newMembers: string[];
  method: AdmissionMethod | null;
  warnings: string[];
  workerPid: number | null;
  /** The addresses of the config's bind lines (for address announcements). */
  bindAddresses: string[];
  durationMs: number;
}

/**
 * Load `runnableText` (the accepted config in this binary's syntax) for
 * `inst`. `config` is read from that text: protection edits it by the line
 * numbers found there. `previousLive`: the live config on disk now.
 */
export async function loadConfig(
  deps: LoadDeps,
  inst: HaproxyInstance,
  runnableText: string,
  config: ConfigInfo,
  previousLive: string | null,
): Promise<LoadReport> {
  const started = Date.now();
  const { files, lbId } = inst;
  const before = await deps.supervisor.status(inst);
  // Nothing is written: a stopped master would take neither a reload nor a runtime command.
  if (before.stopped)
    throw new HaproxyFailedError(
      'reload',
      `haproxy's master (pid ${before.masterPid}) is stopped (SIGSTOP or a debugger); it can reload once it is continued (SIGCONT)`,
    );
  if (before.running && previousLive !== null && hasPeers(previousLive)) await awaitPeersLesson(deps, inst);
  const watched = await deps.pending.of(lbId);
  const running = before.running
    ? {
        state: await runningState(inst, config.serverStateFile, deps.log),
        config: previousLive,
        // Members the agent drained until a passing check would stay drained
        // through the state file: they start again as new members (their
        // passed checks are carried over, below).
        readmit: new Set(watched.filter((p) => !p.carried).map(keyOf)),
      }
    : null;
  const carried = running ? carriedChecks(running.state, config, watched, deps.pending.lookedAgoMs(lbId)) : [];
  const plan = planProtection({
    configText: runnableText,
    config,
    running,
    initStateAtStartup: deps.initStateAtStartup,
    protect: deps.protect,
  });
  for (const w of plan.warnings) deps.log.warn({ lbId }, w);

  const writes: FileContent[] = [];
  if (config.serverStateFile) {
    if (resolve(config.serverStateFile).startsWith(`${resolve(deps.baseDir)}/`)) writes.push({ path: config.serverStateFile, data: plan.stateFile });
    else deps.log.warn({ lbId, path: config.serverStateFile }, 'server-state file outside the agent directories; not written');
  }
  writes.push({ path: files.live, data: plan.effectiveConfig });

  await removeFile(files.stopped);
  const staged = await stageFiles(writes, 0o600);
  try {
    // The previous live config stays on disk until the load is verified (recovery.ts).
    if (previousLive !== null) await linkDurable(files.live, files.livePrevious);
  } catch (err) {
    staged.discard();
    throw err;
  }
  staged.commit();

  const bindAddresses = config.frontends.flatMap((f) => f.bindAddresses);
  await deps.beforeBind?.(bindAddresses);
  let after: HaproxyStatus;
  try {
    after = before.running ? await deps.supervisor.reload(inst, before) : await deps.supervisor.start(inst);
  } catch (err) {
    const failure = err instanceof HaproxyFailedError ? err : new HaproxyFailedError(before.running ? 'reload' : 'start', String(err));
    // The previous live config is still on disk under its second name.
    if (previousLive !== null) await renameDurable(files.livePrevious, files.live);
    else await removeFile(files.live);
    if (before.running) await reloadPrevious(deps, inst, failure);
    throw failure;
  }
  await writeApplied(files, { workerPid: after.workerPid, masterReloads: after.table?.reloads ?? 0 });
  await removeFile(files.livePrevious);
  await deps.pending.set(lbId, carried);
  await deps.retired.clear(lbId);

  const report: LoadReport = {
    outcome: before.running ? 'reloaded' : 'started',
    newMembers: plan.newMembers.map((s) => memberKey(s.backend, s.name)),
    method: plan.method,
    warnings: plan.warnings,
    workerPid: after.workerPid,
    bindAddresses,
    durationMs: Date.now() - started,
  };
  deps.log.info({ lbId, ...report, ...(carried.length > 0 ? { carriedChecks: carried.map(keyOf) } : {}) }, `haproxy ${report.outcome}`);
  return report;
}

/** The running worker's stick tables, complete before it hands them over (peers-resync.ts). */
async function awaitPeersLesson(deps: LoadDeps, inst: HaproxyInstance): Promise<void> {
  const started = Date.now();
  const learning = await waitForPeersLesson(inst.files.masterSocket);
  const waitedMs = Date.now() - started;
  if (learning.length > 0) {
    deps.log.warn(
      { lbId: inst.lbId, sections: learning, waitedMs },
      'reloading before haproxy finished learning its stick tables: the new worker gets only what its peers teach it',
    );
  } else if (waitedMs >= 100) {
    deps.log.info({ lbId: inst.lbId, waitedMs }, 'waited for haproxy to finish learning its stick tables before reloading');
  }
}

/**
 * After a failed load haproxy's old workers may have paused their listeners
 * for the socket hand-over and not resumed them (seen on 2.6 and 3.2 when a
 * bind address is missing): reload once more with the previous live config,
 * which loaded before, so the listeners serve again.
 */
async function reloadPrevious(deps: LoadDeps, inst: HaproxyInstance, failure: HaproxyFailedError): Promise<void> {
  try {
    const status = await deps.supervisor.status(inst);
    await deps.supervisor.reload(inst, status);
    deps.log.warn({ lbId: inst.lbId, err: failure.output }, 'reload failed; haproxy reloaded with the previous config');
  } catch (err) {
    deps.log.error({ lbId: inst.lbId, err: String(err) }, 'reload failed and the previous config did not reload either');
  }
}

/**
 * What haproxy runs now, from its state dump right before the reload.
 * If the dump fails, fall back to the last state file so running members are
 * not mistaken for new ones (which would take them out of service).
 */
async function runningState(inst: HaproxyInstance, stateFile: string | null, log: Logger): Promise<string> {
  try {
    const text = await workerCommand(inst.files.masterSocket, 'show servers state', 10_000);
    if (/^1\s*$/m.test(text)) return text;
    throw new Error(text.trim() || 'empty answer');
  } catch (err) {
    log.warn({ lbId: inst.lbId, err: String(err) }, 'cannot dump server state; using the last state file');
    return (stateFile ? await readTextIfExists(stateFile) : null) ?? '';
  }
}
