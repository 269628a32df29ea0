// What a haproxy binary can do, found by asking it rather than trusting its
// version number: the init-state startup fix was backported to some 3.2/3.3
// releases and not others, so the probe starts a throwaway haproxy and looks.
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { isProcessAlive } from '../../system/proc.js';
import { join } from 'node:path';
import { run } from '../../system/exec.js';
import { ensureDir, removeTree } from '../../system/files.js';
import { haproxyEnvironment } from './environment.js';
import { masterCommand, parseShowProc, workerCommand } from './master-cli.js';
import { parseServerState, type ServerStateEntry } from '../config/server-state.js';

export interface HaproxyCapabilities {
  /** argv prefix that runs this haproxy. */
  command: string[];
  /** Full version string, e.g. "2.6.12-1+deb12u4". */
  version: string;
  major: number;
  minor: number;
  /** `init-state` is a known server keyword. */
  initStateAccepted: boolean;
  /** A static server with `init-state fully-down` really starts DOWN. */
  initStateAtStartup: boolean;
  /**
   * `option httpchk` takes headers hidden in its version word (Octavia 11-16's
   * `HTTP/1.1\r\nHost:\ name`); haproxy 2.7+ refuses it and the agent
   * translates such lines (legacy-httpchk.ts).
   */
  legacyHttpchkAccepted: boolean;
  /** `option http-use-htx` (Octavia 16's Prometheus endpoint) is known; when not, the agent drops it (legacy-htx.ts). */
  httpUseHtxAccepted: boolean;
  /** Commands the master CLI offers (e.g. "reload", "show startup-logs"). */
  masterCommands: string[];
  /** Commands the worker's runtime API offers (e.g. "add server", "del server"). */
  runtimeCommands: string[];
}

const cache = new Map<string, Promise<HaproxyCapabilities>>();

/** Probe once per binary and process; the answer cannot change while the agent runs. */
export function haproxyCapabilities(command: string[], workDir: string): Promise<HaproxyCapabilities> {
  const id = command.join('\u0000');
  let p = cache.get(id);
  if (!p) {
    p = probeHaproxy(command, workDir);
    cache.set(id, p);
    p.catch(() => cache.delete(id));
  }
  return p;
}

export async function probeHaproxy(command: string[], workDir: string): Promise<HaproxyCapabilities> {
  const ver = await run([...command, '-v'], { env: haproxyEnvironment() });
  const m = /version (\d+)\.(\d+)(\S*)/.exec(ver.output);
  if (ver.exitCode !== 0 || !m) {
    throw new Error(`cannot run haproxy (${command.join(' ')} -v): ${ver.output.trim() || `exit ${ver.exitCode}`}`);
  }
  const version = `${m[1]}.${m[2]}${m[3]}`;
  await ensureDir(workDir, 0o700);
  await removeAbandonedProbes(workDir);
  const dir = await mkdtemp(join(workDir, 'probe-'));
  try {
    const initStateAccepted = await acceptsInitState(command, dir);
    const legacyHttpchkAccepted = await acceptsLegacyHttpchk(command, dir);
    const httpUseHtxAccepted = await acceptsHttpUseHtx(command, dir);
    const live = await probeLive(command, dir, initStateAccepted);
    return {
      command,
      version,
      major: Number(m[1]),
      minor: Number(m[2]),
      initStateAccepted,
      legacyHttpchkAccepted,
      httpUseHtxAccepted,
      ...live,
    };
  } finally {
    await removeTree(dir);
  }
}

/** Stop throwaway haproxy processes of probes an agent crash left behind, and remove their files. */
async function removeAbandonedProbes(workDir: string): Promise<void> {
  for (const name of await readdir(workDir).catch(() => [] as string[])) {
    if (!name.startsWith('probe-')) continue;
    const dir = join(workDir, name);
    const [pid, owner] = (await readFile(join(dir, 'pid'), 'utf8').catch(() => '')).split(' ').map(Number);
    // Another live agent process may be probing right now: leave its probe alone.
    if (owner && (await isProcessAlive(owner))) continue;
    const cmdline = pid ? await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '') : '';
    if (pid && cmdline.includes(dir)) process.kill(pid, 'SIGKILL');
    await removeTree(dir);
  }
}

const PROBE_DEFAULTS = 'defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\n';

async function acceptsInitState(command: string[], dir: string): Promise<boolean> {
  const cfg = join(dir, 'syntax.cfg');
  await writeFile(cfg, `${PROBE_DEFAULTS}backend b\n  server s 127.0.0.1:1 check init-state fully-down\n`);
  // Exit 2 means "valid, but no listener": the keyword was accepted.
  const { exitCode } = await run([...command, '-c', '-q', '-f', cfg], { env: haproxyEnvironment() });
  return exitCode === 0 || exitCode === 2;
}

async function acceptsLegacyHttpchk(command: string[], dir: string): Promise<boolean> {
  const cfg = join(dir, 'httpchk.cfg');
  // The backslashes reach haproxy as written: it resolves \r\n itself, as in Octavia's configs.
  await writeFile(cfg, `${PROBE_DEFAULTS}backend b\n  mode http\n  option httpchk GET / HTTP/1.1\\r\\nHost:\\ probe\n  server s 127.0.0.1:1 check\n`);
  const { exitCode } = await run([...command, '-c', '-q', '-f', cfg], { env: haproxyEnvironment() });
  return exitCode === 0 || exitCode === 2;
}

async function acceptsHttpUseHtx(command: string[], dir: string): Promise<boolean> {
  const cfg = join(dir, 'htx.cfg');
  await writeFile(cfg, `${PROBE_DEFAULTS}backend b\n  mode http\n  option http-use-htx\n  server s 127.0.0.1:1\n`);
  const { exitCode } = await run([...command, '-c', '-q', '-f', cfg], { env: haproxyEnvironment() });
  return exitCode === 0 || exitCode === 2;
}

/**
 * Start a throwaway master-worker haproxy whose only server points at a closed
 * port, with checks so slow that none completes during the probe. Legacy
 * behaviour starts that server UP; a working init-state starts it STOPPED.
 */
async function probeLive(command: string[], dir: string, withInitState: boolean) {
  const cfg = join(dir, 'live.cfg');
  const sock = join(dir, 'master.sock');
  const initState = withInitState ? ' init-state fully-down' : '';
  await writeFile(cfg, `${PROBE_DEFAULTS}backend b\n  server s 127.0.0.1:1 check inter 1h fall 3 rise 2${initState}\n`);
  const child = spawn(command[0]!, [...command.slice(1), '-W', '-db', '-f', cfg, '-S', sock], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: haproxyEnvironment(),
  });
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  child.on('error', (err) => {
    stderr += err.message;
  });
  const ended = new Promise<void>((resolve) => child.once('close', () => resolve()));
  // Recorded so that a probe orphaned by an agent crash is stopped by the next probe.
  if (child.pid) await writeFile(join(dir, 'pid'), `${child.pid} ${process.pid}`);
  try {
    // A slow machine (an amphora under TCG on a loaded host: 9 s from master
    // to worker measured) must not fail the probe, which ends the agent.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const table = await masterCommand(sock, 'show proc', 1000)
        .then(parseShowProc)
        .catch(() => null);
      if (table && table.workers.length > 0) break;
      if (Date.now() > deadline || child.exitCode !== null) {
        // Only an exited haproxy has all of its stderr; one still starting is
        // stopped by `finally` (waiting for it here would wait for ever).
        if (child.exitCode !== null) await ended;
        throw new Error(`probe haproxy did not start: ${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    // A worker listed by the master may not answer its CLI yet: ask until the
    // server shows up, or a missing answer would read as "init-state ignored".
    let server: ServerStateEntry | undefined;
    while (!server) {
      const text = await workerCommand(sock, 'show servers state', 1000).catch(() => '');
      server = parseServerState(text).entries.find((e) => e.backend === 'b' && e.server === 's');
      if (server) break;
      if (Date.now() > deadline || child.exitCode !== null) throw new Error('probe haproxy did not report its server state');
      await new Promise((r) => setTimeout(r, 20));
    }
    return {
      initStateAtStartup: withInitState && server?.opState === 0,
      masterCommands: helpCommands(await masterCommand(sock, 'help')),
      runtimeCommands: helpCommands(await workerCommand(sock, 'help')),
    };
  } finally {
    child.kill('SIGTERM');
    await ended;
  }
}

/** The command names listed by `help` ("  add server <b>/<s> ... : ..." -> "add server"). */
function helpCommands(text: string): string[] {
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^\s+([a-z@][a-z0-9 _-]*?)\s*(?:[<[{(]|:|$)/.exec(line);
    if (m?.[1]) out.add(m[1].trim());
  }
  return [...out].sort();
}
