// Where the agent runs external commands. Everything else asks for a command
// to be run here, so tests and the network namespace wrapper apply to all.
// One exception: the capability probe (haproxy/capabilities.ts) starts its
// throwaway haproxy itself, as a child it watches and kills.
import { open, readFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { execa } from 'execa';

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
}

/** Prefix argv so the command runs inside a network namespace, when one is given. */
export function inNetns(argv: string[], netns: string | null | undefined): string[] {
  return netns ? ['ip', 'netns', 'exec', netns, ...argv] : argv;
}

export async function run(argv: string[], opts: RunOptions = {}): Promise<CommandResult> {
  const full = inNetns(argv, opts.netns);
  const [file, ...args] = full;
  const result = await execa(file!, args, {
    reject: false,
    all: true,
    stripFinalNewline: false,
    input: opts.input,
    timeout: opts.timeoutMs ?? 120_000,
    cwd: opts.cwd,
    env: { LC_ALL: 'C' },
  });
  return {
    command: full.join(' '),
    exitCode: typeof result.exitCode === 'number' ? result.exitCode : -1,
    output: String(result.all ?? ''),
    stdout: String(result.stdout ?? ''),
    timedOut: Boolean(result.timedOut),
  };
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
        env: { ...process.env, LC_ALL: 'C' },
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
