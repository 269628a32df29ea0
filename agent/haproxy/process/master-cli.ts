// Client for haproxy's master CLI (the -S socket of master-worker mode). One
// short-lived connection per command, always closed: the master serves at most
// 100 connections and a reload closes them all anyway.
import { AgentError } from '../../errors.js';
import { socketCommand } from './unix-socket.js';

export class MasterCliError extends AgentError {
  readonly kind = 'command_failed';
}

export async function masterCommand(socketPath: string, command: string, timeoutMs = 10_000): Promise<string> {
  try {
    return await socketCommand(socketPath, command, timeoutMs);
  } catch (err) {
    throw new MasterCliError(`master CLI ${socketPath}: ${(err as Error).message}`);
  }
}

/** Send a command to the current worker through the master. */
export function workerCommand(socketPath: string, command: string, timeoutMs?: number): Promise<string> {
  return masterCommand(socketPath, `@1 ${command}`, timeoutMs);
}

export interface WorkerProcess {
  pid: number;
  /** Reloads this worker has survived: 0 for the newest generation. */
  reloads: number;
}

export interface ProcessTable {
  masterPid: number;
  /** Reloads the master has done since it started. */
  reloads: number;
  /** Failed reloads since the last successful one. */
  failedReloads: number;
  /** Every worker, current and old (2.6 lists both under "# workers", 3.x splits them). */
  workers: WorkerProcess[];
}

/** Parse `show proc` (the same columns from haproxy 2.6 to 3.x). */
export function parseShowProc(text: string): ProcessTable | null {
  let inPrograms = false;
  const table: ProcessTable = { masterPid: 0, reloads: 0, failedReloads: 0, workers: [] };
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (t.startsWith('#')) {
      inPrograms = t === '# programs';
      continue;
    }
    const m = /^(\d+)\s+(\S+)\s+(\d+)(?:\s+\[failed:\s*(\d+)\])?/.exec(t);
    if (!m || inPrograms) continue;
    const pid = Number(m[1]);
    if (m[2] === 'master') {
      table.masterPid = pid;
      table.reloads = Number(m[3]);
      table.failedReloads = Number(m[4] ?? 0);
    } else if (m[2] === 'worker') {
      table.workers.push({ pid, reloads: Number(m[3]) });
    }
  }
  return table.masterPid ? table : null;
}

/** The worker that serves new connections: the youngest generation. */
export function currentWorker(table: ProcessTable): number | null {
  let best: WorkerProcess | null = null;
  for (const w of table.workers) if (!best || w.reloads < best.reloads) best = w;
  return best?.pid ?? null;
}
