// haproxy process control in master-worker mode. Two back ends share one
// contract: the agent supervising haproxy itself (containers, tests, the
// development default) and systemd units (the production image). Either way a
// reload is verified on the master CLI: it succeeded only when a new worker
// answers; otherwise the old workers keep serving and the caller gets an error.
import { HaproxyFailedError } from '../errors.js';
import type { UnitState } from './systemd-unit.js';
import type { LoadBalancerFiles } from '../layout.js';
import { currentWorker, masterCommand, parseShowProc, type ProcessTable } from './master-cli.js';
import { isProcessAlive, isProcessStopped, readPidFile, terminateProcess } from '../../system/proc.js';
import { launchDaemon } from '../../system/exec.js';
import { haproxyEnvironment } from './environment.js';
import { ensureNetns } from '../../system/netns.js';

export interface HaproxyInstance {
  lbId: string;
  files: LoadBalancerFiles;
  /** -L: the local peer name, so the config's peers section finds itself. */
  peerName: string;
}

export interface HaproxyStatus {
  running: boolean;
  masterPid: number | null;
  /** The worker serving new connections. */
  workerPid: number | null;
  table: ProcessTable | null;
  /**
   * The master is stopped (SIGSTOP, a debugger): alive, so not restarted, but
   * it answers nothing; asking its CLI would only wait for a timeout.
   */
  stopped?: boolean;
}

export interface HaproxySupervisor {
  readonly kind: 'direct' | 'systemd';
  start(inst: HaproxyInstance): Promise<HaproxyStatus>;
  reload(inst: HaproxyInstance, before: HaproxyStatus): Promise<HaproxyStatus>;
  stop(inst: HaproxyInstance): Promise<void>;
  status(inst: HaproxyInstance): Promise<HaproxyStatus>;
  /** systemd only: the unit's state (failed after too many restarts). */
  unitState?(inst: HaproxyInstance): Promise<UnitState>;
}

/** How long a reload or start may take before it counts as failed (large configs load slowly). */
export const LOAD_TIMEOUT_MS = 60_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function readStatus(files: LoadBalancerFiles): Promise<HaproxyStatus> {
  const masterPid = await readPidFile(files.pidFile);
  if (!masterPid || !(await isProcessAlive(masterPid))) {
    return { running: false, masterPid: null, workerPid: null, table: null };
  }
  if (await isProcessStopped(masterPid)) return { running: true, masterPid, workerPid: null, table: null, stopped: true };
  const table = await showProc(files.masterSocket);
  return { running: true, masterPid, workerPid: table ? currentWorker(table) : null, table };
}

async function showProc(socket: string): Promise<ProcessTable | null> {
  return masterCommand(socket, 'show proc', 2000)
    .then(parseShowProc)
    .catch(() => null);
}

/**
 * Wait until the master lists a worker that answers on the runtime API.
 * `masterPid`: the master just launched; once it is gone the start failed
 * (no need to wait out the deadline).
 */
export async function waitForFirstWorker(files: LoadBalancerFiles, action: string, masterPid: number | null = null): Promise<HaproxyStatus> {
  const deadline = Date.now() + LOAD_TIMEOUT_MS;
  for (;;) {
    const status = await readStatus(files);
    if (status.workerPid && (await workerAnswers(files.masterSocket, status.workerPid))) return status;
    if (masterPid !== null && !(await isProcessAlive(masterPid)))
      throw new HaproxyFailedError(action, `haproxy (master pid ${masterPid}) exited before a worker answered`);
    if (Date.now() > deadline) throw new HaproxyFailedError(action, 'no haproxy worker came up');
    await sleep(10);
  }
}

/**
 * After a reload was requested: success once the master counts one more reload
 * and lists a worker that did not exist before and answers; failure when the
 * master reports the reload failed (2.6 via "[failed: N]", 3.x via Success=0).
 */
export async function waitForReload(files: LoadBalancerFiles, before: HaproxyStatus, reloadOutput: string): Promise<HaproxyStatus> {
  if (/^Success=0/m.test(reloadOutput)) {
    throw new HaproxyFailedError('reload', reloadOutput.replace(/^Success=0\n--\n?/m, '').trim());
  }
  const previous = new Set((before.table?.workers ?? []).map((w) => w.pid));
  const reloadsBefore = before.table?.reloads ?? 0;
  const deadline = Date.now() + LOAD_TIMEOUT_MS;
  for (;;) {
    // While the master re-executes (2.6 after a failed load in particular) its
    // CLI is briefly unreachable; keep polling until the deadline.
    const table = await showProc(files.masterSocket);
    if (table && table.reloads > reloadsBefore) {
      const fresh = table.workers.find((w) => !previous.has(w.pid));
      if (fresh && (await workerAnswers(files.masterSocket, fresh.pid))) {
        return { running: true, masterPid: table.masterPid, workerPid: currentWorker(table), table };
      }
      if (!fresh && table.failedReloads > 0) {
        throw new HaproxyFailedError('reload', await failureDetails(files.masterSocket));
      }
    }
    if (Date.now() > deadline) {
      throw new HaproxyFailedError('reload', `no new haproxy worker within ${LOAD_TIMEOUT_MS} ms`);
    }
    await sleep(5);
  }
}

/**
 * After an agent restart, how a reload it had triggered ended (the master
 * counted it, but the agent died before seeing the result). Waits until
 * haproxy knows: the status with the new worker once one answers, or null
 * when the reload failed. `oldWorker`: the worker pid before that reload.
 */
export async function interruptedReloadOutcome(files: LoadBalancerFiles, oldWorker: number | null): Promise<HaproxyStatus | null> {
  const deadline = Date.now() + LOAD_TIMEOUT_MS;
  for (;;) {
    const table = await showProc(files.masterSocket);
    if (table && table.failedReloads > 0) return null;
    // The new generation has survived no reload yet; the old workers have.
    const fresh = table?.workers.find((w) => w.reloads === 0 && w.pid !== oldWorker);
    if (table && fresh && (await workerAnswers(files.masterSocket, fresh.pid))) {
      return { running: true, masterPid: table.masterPid, workerPid: currentWorker(table), table };
    }
    if (Date.now() > deadline) return null;
    await sleep(10);
  }
}

/**
 * The worker `pid` itself answers on the runtime API. Asked by its pid: while
 * a new worker starts, the master sends `@1` commands to the previous one,
 * which would answer for it (seen on 3.2 and 3.4: a reload counted as done,
 * and the next runtime command reaching the old worker).
 */
async function workerAnswers(socket: string, pid: number): Promise<boolean> {
  const info = await masterCommand(socket, `@!${pid} show info`, 2000).catch(() => '');
  return new RegExp(`^Pid: ${pid}$`, 'm').test(info);
}

async function failureDetails(socket: string): Promise<string> {
  // haproxy >= 2.7 keeps the startup messages of the failed load; 2.6 has no
  // such command and only says that the load failed.
  const logs = await masterCommand(socket, 'show startup-logs', 2000).catch(() => '');
  const alerts = logs.split('\n').filter((l) => /ALERT|WARNING/.test(l) && !/Former worker|Exiting/.test(l));
  return alerts.length > 0 ? alerts.join('\n') : 'haproxy could not load the new configuration (see the haproxy log); the previous workers keep serving';
}

/**
 * The pid of the master a start just launched. haproxy -D may write its pid
 * file after the launcher exits (bookworm's 2.6.12-1+deb12u4 does): read too
 * early, there was no master to watch, and a master killed before its worker
 * answered held the start (and the watchdog behind it) for LOAD_TIMEOUT_MS.
 */
async function newMasterPid(files: LoadBalancerFiles, stale: number | null): Promise<number> {
  const deadline = Date.now() + LOAD_TIMEOUT_MS;
  for (;;) {
    const pid = await readPidFile(files.pidFile);
    // The stale pid is a dead master's (a start follows one), unless the new
    // master was given the same number.
    if (pid !== null && (pid !== stale || (await isProcessAlive(pid)))) return pid;
    if (Date.now() > deadline) throw new HaproxyFailedError('start', `haproxy wrote no pid file (${files.pidFile})`);
    await sleep(10);
  }
}

/** The agent supervises haproxy itself: haproxy -W -D, detached so it outlives the agent. */
export class DirectSupervisor implements HaproxySupervisor {
  readonly kind = 'direct';

  constructor(
    private readonly haproxyCommand: string[],
    private readonly netns: string | null,
    private readonly userGroupFile: string | null,
  ) {}

  async start(inst: HaproxyInstance): Promise<HaproxyStatus> {
    const { files } = inst;
    const argv = [
      ...this.haproxyCommand,
      '-W',
      '-D',
      '-f',
      files.live,
      ...(this.userGroupFile ? ['-f', this.userGroupFile] : []),
      '-p',
      files.pidFile,
      '-S',
      `${files.masterSocket},mode,600`,
      '-L',
      inst.peerName,
    ];
    if (this.netns) await ensureNetns(this.netns);
    // A pid left by a haproxy that died must not pass for the new master's
    // (the file stays: others read it while haproxy restarts).
    const stale = await readPidFile(files.pidFile);
    const res = await launchDaemon(argv, files.launchLog, { netns: this.netns, env: haproxyEnvironment() });
    if (res.exitCode !== 0) throw new HaproxyFailedError('start', res.output.trim() || `exit code ${res.exitCode}`);
    return waitForFirstWorker(files, 'start', await newMasterPid(files, stale));
  }

  async reload(inst: HaproxyInstance, before: HaproxyStatus): Promise<HaproxyStatus> {
    const out = await masterCommand(inst.files.masterSocket, 'reload', LOAD_TIMEOUT_MS).catch((err: Error) => {
      throw new HaproxyFailedError('reload', err.message);
    });
    return waitForReload(inst.files, before, out);
  }

  async stop(inst: HaproxyInstance): Promise<void> {
    const pid = await readPidFile(inst.files.pidFile);
    if (pid && (await isProcessAlive(pid))) await terminateProcess(pid);
  }

  status(inst: HaproxyInstance): Promise<HaproxyStatus> {
    return readStatus(inst.files);
  }
}
