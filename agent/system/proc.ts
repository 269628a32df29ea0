// Process liveness from /proc. A zombie (exited, not yet reaped) counts as dead:
// kill(pid, 0) would still succeed on it.
import { readFile } from 'node:fs/promises';

/** The process's state letter (R, S, D, T stopped, t traced, Z zombie...), or null when there is no such process. */
export async function processState(pid: number): Promise<string | null> {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Field 3 is the state; the command name in field 2 may contain spaces, so
    // read after its closing parenthesis.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return null;
  }
}

export async function isProcessAlive(pid: number): Promise<boolean> {
  const state = await processState(pid);
  return state !== null && state !== 'Z' && state !== 'X';
}

/** Stopped by a signal (SIGSTOP, SIGTSTP) or a debugger: alive, but it runs nothing until continued. */
export async function isProcessStopped(pid: number): Promise<boolean> {
  const state = await processState(pid);
  return state === 'T' || state === 't';
}

export async function readPidFile(path: string): Promise<number | null> {
  try {
    const pid = Number.parseInt((await readFile(path, 'utf8')).trim().split('\n')[0] ?? '', 10);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** SIGTERM, then SIGKILL if the process is still there after `graceMs`; resolves once it is gone. */
export async function terminateProcess(pid: number, graceMs = 10_000): Promise<void> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return; // already gone
  }
  const deadline = Date.now() + graceMs;
  while (await isProcessAlive(pid)) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      return;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}
