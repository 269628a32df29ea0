// Where the agent runs external commands. Everything else asks for a command
// to be run here, so tests and the network namespace wrapper apply to all.
// One exception: the capability probe (haproxy/process/capabilities.ts) starts its
// throwaway haproxy itself, as a child it watches and kills.
import { open, readFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';

export interface CommandResult {
  command: string;
  exitCode: number;
  /** stdout and stderr interleaved, as haproxy's own messages are read by operators. */
  output: string;
  stdout: string;
  timedOut: boolean;
}

export interface RunOptions {
  /** Run inside this network namespace (`ip netns exec`). */
  netns?: string | null;
  input?: string;
  timeoutMs?: number;
  cwd?: string;
  /** The command's whole environment; default: the agent's, with C messages. */
  env?: Record<string, string>;
}

const environment = (opts: RunOptions) => opts.env ?? { ...process.env, LC_ALL: 'C' };

/** Prefix argv so the command runs inside a network namespace, when one is given. */
export function inNetns(argv: string[], netns: string | null | undefined): string[] {
  return netns ? ['ip', 'netns', 'exec', netns, ...argv] : argv;
}

/** After a timeout's SIGTERM, how long a command gets before SIGKILL. */
const KILL_AFTER_MS = 5000;
/** After a command exits, how long what it left behind may keep its output pipes open. */
const DRAIN_AFTER_EXIT_MS = 2000;

/**
 * Run a command to its end and collect its output. It never throws: a
 * command that cannot start has exit code -1 and the reason as its output; one
 * killed by a signal (a timeout's included) has exit code -1.
 * node:child_process directly: execa, which did this before, cost the agent
 * about 160 ms of CPU and 16 MB at every start (measured with bench/startup).
 */
export function run(argv: string[], opts: RunOptions = {}): Promise<CommandResult> {
  const full = inNetns(argv, opts.netns);
  const [file, ...args] = full;
  const command = full.join(' ');
  return new Promise((resolvePromise) => {
    const all: Buffer[] = [];
    const out: Buffer[] = [];
    let timedOut = false;
    let spawnError: Error | null = null;
    const child = spawn(file!, args, {
      cwd: opts.cwd,
      env: environment(opts),
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => {
      out.push(d);
      all.push(d);
    });
    child.stderr!.on('data', (d: Buffer) => {
      all.push(d);
    });
    if (opts.input !== undefined) {
      // A command that exits without reading its input closes the pipe: not an error of ours.
      child.stdin!.on('error', () => {});
      child.stdin!.end(opts.input);
    }
    let killTimer: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
    }, opts.timeoutMs ?? 120_000);
    child.on('error', (err) => {
      spawnError = err;
    });
    // A process the command left behind (a daemon) may hold the output pipes
    // open: once the command has exited, they get a grace period, then are closed.
    let drainTimer: NodeJS.Timeout | undefined;
    child.on('exit', () => {
      drainTimer = setTimeout(() => {
        child.stdout!.destroy();
        child.stderr!.destroy();
      }, DRAIN_AFTER_EXIT_MS);
    });
    // 'close', not 'exit': the output pipes are drained by then.
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(killTimer);
      clearTimeout(drainTimer);
      const output = Buffer.concat(all).toString('utf8');
      resolvePromise({
        command,
        exitCode: spawnError || timedOut || signal !== null || code === null ? -1 : code,
        output: spawnError ? `${output}${spawnError.message}\n` : output,
        stdout: Buffer.concat(out).toString('utf8'),
        timedOut,
      });
    });
  });
}

/**
 * Start a process that daemonizes itself (haproxy -D), detached from the agent so
 * it outlives an agent crash. Its output goes to a file, not to pipes: the daemon
 * keeps inherited descriptors, and a pipe would then never reach EOF.
 */
export async function launchDaemon(argv: string[], logFile: string, opts: RunOptions = {}): Promise<CommandResult> {
  const full = inNetns(argv, opts.netns);
  const [file, ...args] = full;
  const log = await open(logFile, 'w', 0o600);
  let exitCode: number;
  try {
    exitCode = await new Promise<number>((resolvePromise) => {
      const child = spawn(file!, args, {
        detached: true,
        stdio: ['ignore', log.fd, log.fd],
        env: environment(opts),
      });
      child.on('error', () => resolvePromise(-1));
      child.on('exit', (code) => resolvePromise(code ?? -1));
    });
  } finally {
    await log.close();
  }
  const output = await readFile(logFile, 'utf8').catch(() => '');
  return { command: full.join(' '), exitCode, output, stdout: output, timedOut: false };
}
