// The CI image's root filesystem booted as a container: systemd-nspawn runs
// the image's systemd as PID 1 (so the agent runs under amphora-agent.service
// and, with process_manager auto, runs haproxy and keepalived as systemd
// units), in a network namespace the test made (the amphora's management
// side). Each container writes to an overlay of its own over one extracted
// root filesystem; the agent code, templates and node_modules of this
// checkout are bind-mounted over the image's /opt/amphora-agent, so the code
// under test is the checkout's whatever bundle the image was built with.
//
// Needs systemd-container (test/rig/prepare.sh). Without the host's D-Bus:
// --register=no and --keep-unit. Everything in the container dies with its
// PID 1 (its PID namespace), so a container is stopped by SIGKILL to it.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statfsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep, waitFor } from './load.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** Where the image has the agent bundle (image-build/elements/amphora-agent-ts/install.d). */
const BUNDLE = '/opt/amphora-agent';

function sh(cmd: string, args: string[], input?: string): string {
  return execFileSync(cmd, args, { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: SYSTEM_PATH, LANG: 'C.UTF-8' } });
}

/** Mount points at or below `dir`, deepest first. */
function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((p) => p === dir || p.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

/** `rm -rf` of a tree that had mounts below it: unmounted first, never removed while something stays mounted. */
function removeTree(dir: string): void {
  for (let i = 0; i < 3 && mountsUnder(dir).length > 0; i++) {
    for (const m of mountsUnder(dir)) spawnSync('umount', ['-l', m], { stdio: 'ignore' });
  }
  if (mountsUnder(dir).length === 0) spawnSync('rm', ['-rf', '--one-file-system', dir], { stdio: 'ignore' });
  else console.error(`amphora container: left ${dir} in place, still mounted: ${mountsUnder(dir).join(' ')}`);
}

/**
 * The CI image's root filesystem tarball: AMPHORA_IMAGE_TAR when given (any
 * CI image will do, the agent code comes from the checkout), else through the
 * one build script, reused when its inputs did not change.
 */
export function ciImageTar(): { tar: string; summary: string } {
  const given = process.env.AMPHORA_IMAGE_TAR;
  if (given) return { tar: given, summary: `image: ${given} (AMPHORA_IMAGE_TAR)` };
  const started = Date.now();
  const build = spawnSync('bash', [join(REPO, 'image-build/build.sh'), 'ci'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30 * 60_000,
    env: { ...process.env, AMPHORA_IMAGE_REUSE: process.env.AMPHORA_IMAGE_REUSE ?? '1' },
  });
  if (build.status !== 0) throw new Error(`image-build/build.sh ci failed (${build.status}):\n${build.stderr}\n${build.stdout.slice(-3000)}`);
  const tar = build.stdout.trim().split('\n').pop()!;
  return { tar, summary: `image: ${build.stderr.includes('reusing') ? 'reused' : 'built'} ${tar} in ${((Date.now() - started) / 1000).toFixed(1)} s` };
}

/** One extracted root filesystem that containers overlay; `remove` takes it and every container's files away. */
export class ImageRoot {
  private constructor(readonly dir: string) {}

  static extract(tar: string): ImageRoot {
    // Short: the master CLI socket's path through a container's root must stay within 107 characters.
    const dir = `/var/tmp/aat-ns-${process.pid}`;
    const root = new ImageRoot(dir);
    process.on('exit', () => root.remove());
    mkdirSync(join(dir, 'lower'), { recursive: true });
    sh('tar', ['-xf', tar, '-C', join(dir, 'lower'), '--numeric-owner']);
    return root;
  }

  get lower(): string {
    return join(this.dir, 'lower');
  }

  remove(): void {
    if (existsSync(this.dir)) removeTree(this.dir);
  }
}

export interface ContainerOptions {
  name: string;
  /** The network namespace (/run/netns/<netns>) the container's systemd gets as its own. */
  netns: string;
  /** Files put in place before the boot (path inside the container: content and mode). */
  files: Record<string, { content: string | Buffer; mode: number }>;
  /** false: the image's agent as it is (the reference image has Octavia's own); default true, this checkout's. */
  checkoutAgent?: boolean;
}

export class AmphoraContainer {
  private exited: Promise<void>;

  private constructor(
    readonly name: string,
    readonly root: string,
    readonly netns: string,
    private readonly nspawn: ChildProcess,
    readonly leader: number,
    readonly log: string,
    private readonly cgroups: string[],
  ) {
    this.exited = nspawn.exitCode !== null ? Promise.resolve() : new Promise((r) => nspawn.once('exit', () => r()));
  }

  /** Boot the image in an overlay of `image`, with this checkout's agent (unless told not to); resolves once systemd finished starting up. */
  static async boot(image: ImageRoot, opts: ContainerOptions): Promise<AmphoraContainer> {
    const base = join(image.dir, opts.name);
    const root = join(base, 'root');
    for (const d of ['upper', 'work', 'root']) mkdirSync(join(base, d), { recursive: true });
    sh('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${image.lower},upperdir=${join(base, 'upper')},workdir=${join(base, 'work')}`, root]);
    tolerateSysctls(root);
    for (const [path, f] of Object.entries(opts.files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), f.content, { mode: f.mode });
    }
    const log = join(base, 'nspawn.log');
    const out = createWriteStream(log);
    const binds =
      opts.checkoutAgent === false ? [] : ['dist', 'templates', 'node_modules', 'package.json'].map((p) => `--bind-ro=${join(REPO, p)}:${join(BUNDLE, p)}`);
    const cgroups = ownCgroups(opts.name);
    // Moved into its own cgroups before nspawn starts, which (--keep-unit)
    // builds the container's tree below the cgroup it runs in. SIGTERM
    // (nspawn: shut the container down) if the test process dies unawares.
    const nspawn = spawn(
      'setpriv',
      [
        '--pdeathsig',
        'TERM',
        'sh',
        '-c',
        'for c in $CGROUPS; do echo $$ >"$c/cgroup.procs" || exit 1; done; exec systemd-nspawn "$@"',
        'sh',
        '-D',
        root,
        '-b',
        '--register=no',
        '--keep-unit',
        `--network-namespace-path=/run/netns/${opts.netns}`,
        '--console=pipe',
        `--machine=${opts.name}`,
        // The agent creates the tenant namespace, moves NICs into it, loads
        // sysctls there and runs keepalived: an amphora's root can.
        '--capability=all',
        ...binds,
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          PATH: SYSTEM_PATH,
          LANG: 'C.UTF-8',
          // /proc/sys/net writable: the agent and amphora-netns.service set sysctls in the tenant namespace.
          SYSTEMD_NSPAWN_API_VFS_WRITABLE: 'network',
          // cgroup v2 only, as trixie boots: on this cgroup v1 (hybrid) host the
          // container's systemd 257 otherwise never sees a unit's cgroup empty,
          // and a haproxy whose master died stays "deactivating" until the stop
          // timeout (90 s) instead of restarting after RestartSec.
          SYSTEMD_NSPAWN_UNIFIED_HIERARCHY: '1',
          CGROUPS: cgroups.join(' '),
        },
      },
    );
    nspawn.stdout!.pipe(out);
    nspawn.stderr!.pipe(out);
    let leader: number;
    try {
      leader = (await waitFor(
        `the container ${opts.name}'s systemd`,
        () => {
          if (nspawn.exitCode !== null) throw new Error(`systemd-nspawn exited (${nspawn.exitCode}): ${readFileSync(log, 'utf8')}`);
          return childOf(nspawn.pid!, 'systemd');
        },
        30_000,
        100,
      ))!;
    } catch (err) {
      nspawn.kill('SIGKILL');
      throw err;
    }
    const c = new AmphoraContainer(opts.name, root, opts.netns, nspawn, leader, log, cgroups);
    process.on('exit', () => c.kill());
    try {
      await c.booted();
    } catch (err) {
      await c.destroy();
      throw err;
    }
    return c;
  }

  /**
   * Resolves once systemd finished starting up; "degraded" only for units
   * that fail in any container (the image's nftables.service and
   * systemd-remount-fs), not for ours.
   */
  private async booted(): Promise<void> {
    const state = await waitFor(
      `the container ${this.name} to finish booting`,
      () => {
        const s = spawnSync('nsenter', ['-t', String(this.leader), '-a', 'systemctl', 'is-system-running'], { encoding: 'utf8' }).stdout.trim();
        return s === 'running' || s === 'degraded' ? s : null;
      },
      60_000,
      250,
    );
    if (state === 'running') return;
    const failed = this.exec(['systemctl', '--failed', '--plain', '--no-legend'])
      .split('\n')
      .map((l) => l.split(' ')[0]!)
      .filter(Boolean);
    const unexpected = failed.filter((u) => !['nftables.service', 'systemd-remount-fs.service', 'systemd-firstboot.service'].includes(u));
    if (unexpected.length) throw new Error(`container ${this.name}: ${unexpected.join(', ')} failed:\n${this.exec(['journalctl', '--no-pager', '-n', '80'])}`);
  }

  /** A command run in the container (all its namespaces); throws with its output when it fails. */
  exec(argv: string[], input?: string): string {
    try {
      return sh('nsenter', ['-t', String(this.leader), '-a', ...argv], input);
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      throw new Error(`${this.name}: ${argv.join(' ')}: ${e.stderr || e.stdout || e.message}`);
    }
  }

  /** A systemd unit's property (systemctl show -P). */
  unitProperty(unit: string, property: string): string {
    return this.exec(['systemctl', 'show', '-P', property, unit]).trim();
  }

  /** The container's path `path` seen from the host (through its overlay). */
  path(path: string): string {
    return join(this.root, path);
  }

  /** argv running `cmd` in a network namespace the container's ip made (/run/netns/<name> inside it). */
  inNetns(name: string): string[] {
    return ['nsenter', `--net=/proc/${this.leader}/root/run/netns/${name}`];
  }

  /** Everything in it killed at once (its PID namespace goes with its PID 1). */
  kill(): void {
    try {
      process.kill(this.leader, 'SIGKILL');
    } catch {
      // gone already
    }
  }

  /** Killed, nspawn gone, and its overlay unmounted. */
  async destroy(): Promise<void> {
    this.kill();
    await Promise.race([this.exited, sleep(10_000)]);
    if (this.nspawn.exitCode === null) this.nspawn.kill('SIGKILL');
    for (const m of mountsUnder(this.root)) spawnSync('umount', ['-l', m], { stdio: 'ignore' });
    // The container's systemd made cgroups below its own: deepest first, once empty.
    for (const c of this.cgroups) spawnSync('find', [c, '-depth', '-type', 'd', '-exec', 'rmdir', '{}', ';'], { stdio: 'ignore' });
  }
}

/**
 * The image's sysctl settings, each made a "-key = value" line (a failure
 * to set it ignored). A container's /proc/sys is read-only outside net.*
 * (SYSTEMD_NSPAWN_API_VFS_WRITABLE=network: the kernel.*, fs.* and vm.* keys
 * would be the host's), and a few net.core keys belong to the host's
 * namespace; amphora-netns.service's `sysctl --system` would fail on them.
 * What a namespace can set is still set.
 */
function tolerateSysctls(root: string): void {
  const dirs = ['etc/sysctl.d', 'run/sysctl.d', 'usr/local/lib/sysctl.d', 'usr/lib/sysctl.d'].map((d) => join(root, d));
  const files = dirs
    .filter((d) => lstatSync(d, { throwIfNoEntry: false })?.isDirectory())
    .flatMap((d) =>
      readdirSync(d)
        .filter((f) => f.endsWith('.conf'))
        .map((f) => join(d, f)),
    );
  for (const f of [...files, join(root, 'etc/sysctl.conf')]) {
    // Symlinks name paths inside the image: never followed from the host.
    if (!lstatSync(f, { throwIfNoEntry: false })?.isFile()) continue;
    const text = readFileSync(f, 'utf8')
      .split('\n')
      .map((l) => (/^\s*[^\s#;-]/.test(l) ? `-${l.trimStart()}` : l))
      .join('\n');
    writeFileSync(f, text);
  }
}

/**
 * A cgroup of the container's own in each hierarchy that tracks processes:
 * with --keep-unit nspawn puts the container's tree (payload/system.slice/
 * <unit>...) below the cgroup it runs in, so two containers started from one
 * process would share every unit's cgroup (both amphorae have
 * haproxy-<lb>.service), and systemd in one would wait for the other's
 * processes to leave it. The unified hierarchy (cgroup2, or its mount on a
 * hybrid host) and, on a hybrid host, the name=systemd one.
 */
function ownCgroups(name: string): string[] {
  const unified = statfsSync('/sys/fs/cgroup').type === CGROUP2_MAGIC ? '/sys/fs/cgroup' : '/sys/fs/cgroup/unified';
  const roots = [unified, '/sys/fs/cgroup/systemd'].filter((r) => existsSync(join(r, 'cgroup.procs')));
  return roots.map((r) => {
    const dir = join(r, `aat-nspawn-${name}`);
    mkdirSync(dir, { recursive: true });
    return dir;
  });
}

const CGROUP2_MAGIC = 0x63677270;

/** The child of `pid` named `comm`, once it exists. */
function childOf(pid: number, comm: string): number | null {
  const path = `/proc/${pid}/task/${pid}/children`;
  if (!existsSync(path)) return null;
  for (const child of readFileSync(path, 'utf8').trim().split(/\s+/).filter(Boolean)) {
    try {
      if (readFileSync(`/proc/${child}/comm`, 'utf8').trim() === comm) return Number(child);
    } catch {
      // exited meanwhile
    }
  }
  return null;
}
