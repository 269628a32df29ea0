// Octavia in a box: the control plane (MariaDB, RabbitMQ, octavia-api,
// -worker, -health-manager, -housekeeping), run by
// test/octavia-box/control_plane.py chrooted in the release matrix's root
// filesystem of its suite (test/rig/prepare.sh), inside a network namespace
// the caller made (where the control plane's address, 172.31.0.2 by
// default, is on an interface). See test/octavia-box/PROTOCOL.md.
//
// Paths are the same inside the chroot and outside: the state directory lies
// under the test root (bound into the root filesystem by prepare.sh); the
// drivers directory and the cloud socket's directory are bound in here, in
// the private mount namespace `ip netns exec` gives the process, so nothing
// outside sees those mounts and nothing needs unmounting afterwards.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { TEST_ROOT } from '../haproxies.js';
import { pssKiB } from './amphora-memory.js';

const BOX = fileURLToPath(new URL('../../../../test/octavia-box/', import.meta.url));
const SCRIPT = join(BOX, 'control_plane.py');
const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const run = promisify(execFile);

export type Suite = 'sid' | 'trixie';

export interface ControlPlaneOptions {
  /** The network namespace (ip netns) the control plane runs in; 172.31.0.2 (bindIp) must be on one of its interfaces. */
  netns: string;
  /** Its state directory: must lie under the test root (/var/tmp/aat). */
  stateDir: string;
  /** AAT_CLOUD_SOCKET of every Octavia process (need not exist yet). */
  cloudSocket: string;
  /** On PYTHONPATH of every Octavia process: the octavia_box drivers and their dist-info (default test/octavia-box). */
  driversDir?: string;
  /** Debian suite of the root filesystem: sid (Octavia 19, default) or trixie (Octavia 16). */
  suite?: Suite;
  apiPort?: number;
  bindIp?: string;
  /** octavia.conf options over the box's ("section.key": value). */
  set?: Record<string, string | number | boolean>;
  debug?: boolean;
  /** Deadline for the ready line (default 3 minutes; a cached root filesystem starts in about 15 s). */
  timeoutMs?: number;
}

/** The line control_plane.py prints once everything answers. */
export interface ReadyLine {
  ready: true;
  api: string;
  startup_seconds: number;
  migration_seconds: number;
  /** Seconds from the start until MariaDB, RabbitMQ and the API answered. */
  timings: Record<string, number>;
  octavia_version: string;
  config: string;
  ca: { client_ca: string; client_cert: string; server_ca: string; server_ca_key: string };
  heartbeat_key: string;
  db: { socket: string; name: string };
  /** Each service's process group leader. */
  pids: Record<string, number>;
  /** Service name to log file: mariadb, epmd, rabbitmq, api, worker, health-manager, housekeeping (their output), octavia-<service> (Octavia's own log). */
  logs: Record<string, string>;
}

export interface Exited {
  exited: string;
  code: number | null;
  log_tail: string;
}

/** The release matrix's root filesystem for `suite`, with Octavia's services in it (test/rig/prepare.sh builds and mounts it). */
export function controlPlaneRootfs(suite: Suite = 'sid'): string {
  const dir = join(process.env.AMPHORA_TEST_CACHE ?? '/var/cache/amphora-agent-tests', 'rootfs', suite);
  if (!existsSync(join(dir, 'usr/bin/octavia-worker')) || !existsSync(join(dir, TEST_ROOT))) {
    throw new Error(`ControlPlane: no Octavia control plane in ${dir}: run test/rig/prepare.sh (as root) first`);
  }
  return dir;
}

export class ControlPlane {
  /** Services that died after ready (control_plane.py's {"exited": ...} lines). */
  readonly exits: Exited[] = [];
  private readonly exited: Promise<void>;

  private constructor(
    readonly netns: string,
    readonly rootfs: string,
    readonly ready: ReadyLine,
    private readonly child: ChildProcess,
    readonly stderr: () => string,
  ) {
    this.exited = child.exitCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
  }

  get apiUrl(): string {
    return this.ready.api;
  }

  static async start(opts: ControlPlaneOptions): Promise<ControlPlane> {
    if (!opts.stateDir.startsWith(`${TEST_ROOT}/`)) throw new Error(`ControlPlane: the state directory must lie under ${TEST_ROOT}: ${opts.stateDir}`);
    const rootfs = controlPlaneRootfs(opts.suite);
    const drivers = opts.driversDir ?? BOX;
    mkdirSync(opts.stateDir, { recursive: true });
    // Directories the chroot must see at the same path, each bound once; the
    // control plane's own script is in test/octavia-box like the drivers.
    const binds = [...new Set([BOX, drivers, dirname(opts.cloudSocket)])].filter((d) => !d.startsWith(`${TEST_ROOT}/`));
    for (const d of binds) mkdirSync(d, { recursive: true });
    const args = [
      '--state',
      opts.stateDir,
      '--cloud-socket',
      opts.cloudSocket,
      '--drivers',
      drivers,
      '--api-port',
      String(opts.apiPort ?? 9876),
      '--bind-ip',
      opts.bindIp ?? '172.31.0.2',
      '--timeout',
      String((opts.timeoutMs ?? 180_000) / 1000),
      ...Object.entries(opts.set ?? {}).flatMap(([k, v]) => ['--set', `${k}=${v}`]),
      ...(opts.debug ? ['--debug'] : []),
    ];
    // ip netns exec gives the process a mount namespace of its own (slave of
    // the host's): the binds made there stay there. pdeathsig: a test process
    // that dies unawares still stops the control plane (control_plane.py
    // stops its services on SIGTERM).
    const inner =
      'root=$1; shift; n=$1; shift; i=0; while [ $i -lt "$n" ]; do mkdir -p "$root$1" && mount --rbind "$1" "$root$1" || exit 1; shift; i=$((i+1)); done; exec chroot "$root" /usr/bin/python3 "$@"';
    const child = spawn(
      'setpriv',
      ['--pdeathsig', 'TERM', 'ip', 'netns', 'exec', opts.netns, 'sh', '-c', inner, 'sh', rootfs, String(binds.length), ...binds, SCRIPT, ...args],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { PATH: SYSTEM_PATH, LANG: 'C.UTF-8' },
      },
    );
    let stderr = '';
    child.stderr!.on('data', (d) => {
      stderr = (stderr + d).slice(-20_000);
    });
    const lines = createInterface({ input: child.stdout! });
    let plane: ControlPlane | null = null;
    const ready = await new Promise<ReadyLine>((resolve, reject) => {
      lines.on('line', (line) => {
        let msg: Record<string, unknown>;
        try {
          msg = JSON.parse(line) as Record<string, unknown>;
        } catch {
          return; // not ours
        }
        if (msg.ready === true) resolve(msg as unknown as ReadyLine);
        else if (msg.ready === false) reject(new Error(`Octavia control plane failed: ${msg.error}\n${msg.log_tail ?? ''}`));
        else if (typeof msg.exited === 'string') {
          plane?.exits.push(msg as unknown as Exited);
          console.error(`octavia box: ${msg.exited} exited (${msg.code}) after ready:\n${msg.log_tail}`);
        }
      });
      child.once('exit', (code, signal) => reject(new Error(`control_plane.py exited (${signal ?? code}) before ready:\n${stderr}`)));
    }).catch(async (err: Error) => {
      await stopChild(child);
      throw err;
    });
    plane = new ControlPlane(opts.netns, rootfs, ready, child, () => stderr);
    process.on('exit', () => plane?.kill());
    return plane;
  }

  /** The last lines of a service's log (see ReadyLine.logs for names). */
  logTail(service: string, lines = 40): string {
    const path = this.ready.logs[service];
    if (!path) throw new Error(`no log named ${service} (have ${Object.keys(this.ready.logs).join(', ')})`);
    try {
      return readFileSync(path, 'utf8')
        .split('\n')
        .slice(-lines - 1)
        .join('\n');
    } catch {
      return '';
    }
  }

  /** An HTTP request to the API from inside the box's namespace (curl); the body parsed when it is JSON. */
  async request(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const args = [
      'netns',
      'exec',
      this.netns,
      'curl',
      '-sS',
      '--max-time',
      '30',
      '-X',
      method,
      '-w',
      '\n%{http_code}',
      '-H',
      'Accept: application/json',
      `${this.apiUrl}${path}`,
    ];
    if (body !== undefined) args.push('-H', 'Content-Type: application/json', '--data-binary', JSON.stringify(body));
    const { stdout } = await run('ip', args, { env: { PATH: SYSTEM_PATH }, maxBuffer: 64 * 1024 * 1024 });
    const cut = stdout.lastIndexOf('\n');
    const text = stdout.slice(0, cut);
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: the text itself
    }
    return { status: Number(stdout.slice(cut + 1)), body: parsed };
  }

  /** Processes still running chrooted in this root filesystem inside the box's namespace. */
  processes(): number[] {
    return boxProcesses(this.netns, this.rootfs);
  }

  /** PSS in KiB of each service (all processes of its process group) and in all. */
  memory(): { total: number; byService: Record<string, number> } {
    const groups = new Map(Object.entries(this.ready.pids).map(([name, pid]) => [pid, name]));
    const byService: Record<string, number> = {};
    let total = 0;
    for (const pid of this.processes()) {
      const pss = pssKiB(pid);
      const name = groups.get(pgidOf(pid)) ?? 'other';
      byService[name] = (byService[name] ?? 0) + pss;
      total += pss;
    }
    return { total, byService };
  }

  /** Everything stopped (SIGTERM to control_plane.py, which stops its services group by group). */
  async stop(): Promise<void> {
    await stopChild(this.child, this.exited);
    // Whatever survived (control_plane.py itself killed): only processes of this box.
    for (const pid of this.processes()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }

  /** Synchronous last resort at process exit. */
  kill(): void {
    if (this.child.exitCode === null) this.child.kill('SIGTERM');
  }
}

async function stopChild(child: ChildProcess, exited?: Promise<void>): Promise<void> {
  const done = exited ?? (child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => child.once('exit', () => r())));
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  // Each service gets up to 15 s to stop (control_plane.py), MariaDB last.
  let timer: NodeJS.Timeout | undefined;
  const stopped = await Promise.race([
    done.then(() => true),
    new Promise<boolean>((r) => {
      timer = setTimeout(() => r(false), 60_000);
    }),
  ]);
  clearTimeout(timer);
  if (!stopped) {
    child.kill('SIGKILL');
    await done;
  }
}

/** Processes in network namespace `netns` whose root is `rootfs`. */
export function boxProcesses(netns: string, rootfs: string): number[] {
  let pids: string[];
  try {
    pids = execFileSync('ip', ['netns', 'pids', netns], { encoding: 'utf8', env: { PATH: SYSTEM_PATH } })
      .split('\n')
      .filter(Boolean);
  } catch {
    return [];
  }
  return pids.map(Number).filter((pid) => {
    try {
      return readlinkSync(`/proc/${pid}/root`) === rootfs;
    } catch {
      return false;
    }
  });
}

function pgidOf(pid: number): number {
  try {
    // Fields after the command (which may hold spaces) start after its last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  } catch {
    return -1;
  }
}
