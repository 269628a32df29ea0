// Client for haproxy's master CLI (the -S socket of master-worker mode). One
// short-lived connection per command, always closed: the master serves at most
// 100 connections and a reload closes them all anyway.
import { createConnection } from 'node:net';
import { AgentError } from '../errors.js';

export class MasterCliError extends AgentError {
  readonly kind = 'command_failed';
}

export async function masterCommand(socketPath: string, command: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const sock = createConnection(socketPath);
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new MasterCliError(`master CLI ${socketPath}: no answer to "${command}" within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.on('connect', () => sock.end(`${command}\n`));
    sock.on('data', (d) => chunks.push(d));
    sock.on('error', (err) => {
      clearTimeout(timer);
      reject(new MasterCliError(`master CLI ${socketPath}: ${err.message}`));
    });
    sock.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
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
