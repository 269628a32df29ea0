// The amphora image booted in qemu, as Nova boots it: image-build/build.sh
// vm-test's root filesystem tarball made an ext4 disk (mke2fs -d, no loop
// device or partition table), its own kernel and initramfs started by qemu's
// direct kernel boot, a config drive as second disk, the management NIC on
// qemu's user network (the host is 10.0.2.2 from the guest; host ports are
// forwarded to 9443 and 22), and QMP for what Nova does from outside
// (hot-plugging the VIP port, a hard reset).
//
// The disk, kernel and initramfs are cached under the test cache by the
// image's inputs (build.sh's stamp: bundle, elements, diskimage.yaml, DIB
// version); each VM writes to a qcow2 overlay of its own, so the cached disk
// stays as built.
import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from './load.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const CACHE = join(process.env.AMPHORA_TEST_CACHE ?? '/var/cache/amphora-agent-tests', 'vm');
/** Bump when the way the disk is made changes (the image's inputs cover the rest). */
const DISK_FORMAT = 'ext4-cloudimg-rootfs-1';
const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** What qemu starts: a disk, booted by its own bootloader or, with a kernel and initramfs, by qemu's direct kernel boot. */
export interface Bootable {
  disk: string;
  format: 'raw' | 'qcow2';
  kernel?: string;
  initrd?: string;
  /** What the caller should print: built or reused, and how long it took. */
  summary: string;
}

export interface VmImage extends Bootable {
  tar: string;
  /** Raw ext4 disk labelled cloudimg-rootfs (the root= the kernel is given). */
  disk: string;
  format: 'raw';
  kernel: string;
  initrd: string;
}

function sh(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: SYSTEM_PATH, LANG: 'C.UTF-8' } });
}

/** An image through the one build script, reused when its inputs did not change: its path and what to print. */
function buildImage(kind: 'vm-test' | 'production' | 'reference'): { path: string; summary: string } {
  const started = Date.now();
  const build = spawnSync('bash', [join(REPO, 'image-build/build.sh'), kind], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30 * 60_000,
    env: { ...process.env, AMPHORA_IMAGE_REUSE: process.env.AMPHORA_IMAGE_REUSE ?? '1' },
  });
  if (build.status !== 0) throw new Error(`image-build/build.sh ${kind} failed (${build.status}):\n${build.stderr}\n${build.stdout.slice(-3000)}`);
  const path = build.stdout.trim().split('\n').pop()!;
  return { path, summary: `image: ${build.stderr.includes('reusing') ? 'reused' : 'built'} ${path} in ${((Date.now() - started) / 1000).toFixed(1)} s` };
}

/** The qcow2 operators upload (diskimage.yaml's production entry): partitioned, with grub; Nova boots it from its own disk. */
export function productionImage(): Bootable {
  const { path, summary } = buildImage('production');
  return { disk: path, format: 'qcow2', summary };
}

/** The production image with Debian's octavia-agent in place of this agent (diskimage.yaml's reference entry). */
export function referenceImage(): Bootable {
  const { path, summary } = buildImage('reference');
  return { disk: path, format: 'qcow2', summary };
}

/** The vm-test image (the production elements less `vm`) as an ext4 disk with its kernel and initramfs beside it. */
export function vmImage(): VmImage {
  const built = buildImage('vm-test');
  const tar = built.path;
  const summary = [built.summary];
  const inputs = readFileSync(tar.replace(/\.tar$/, '.inputs'), 'utf8').trim();
  const key = createHash('sha256').update(`${inputs}\n${DISK_FORMAT}\n`).digest('hex').slice(0, 16);
  const image = { tar, disk: join(CACHE, `${key}.ext4`), format: 'raw' as const, kernel: join(CACHE, `${key}.vmlinuz`), initrd: join(CACHE, `${key}.initrd`) };
  if ([image.disk, image.kernel, image.initrd].every((f) => existsSync(f))) {
    summary.push(`disk: reused ${image.disk}`);
    return { ...image, summary: summary.join('; ') };
  }
  const started = Date.now();
  mkdirSync(CACHE, { recursive: true });
  // One disk at a time: another image's files go (each is a few GB sparse).
  for (const f of readdirSync(CACHE)) if (!f.startsWith(key)) rmSync(join(CACHE, f), { recursive: true, force: true });
  const root = join(CACHE, `${key}.root`);
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root);
  try {
    sh('tar', ['-xf', tar, '-C', root, '--numeric-owner']);
    const boot = readdirSync(join(root, 'boot'));
    const kernel = boot
      .filter((f) => f.startsWith('vmlinuz-'))
      .sort()
      .pop();
    const initrd = boot
      .filter((f) => f.startsWith('initrd.img-'))
      .sort()
      .pop();
    if (!kernel || !initrd) throw new Error(`${tar} has no kernel and initramfs in /boot (${boot.join(' ')})`);
    // Room for what the tests write; cloud-init grows it to the overlay's size at first boot.
    const usedMb = Number(sh('du', ['-sm', '--apparent-size', root]).split('\t')[0]);
    sh('mke2fs', ['-q', '-t', 'ext4', '-L', 'cloudimg-rootfs', '-d', root, `${image.disk}.tmp`, `${usedMb + 512}M`]);
    sh('cp', [join(root, 'boot', kernel), `${image.kernel}.tmp`]);
    sh('cp', [join(root, 'boot', initrd), `${image.initrd}.tmp`]);
    for (const f of [image.disk, image.kernel, image.initrd]) renameSync(`${f}.tmp`, f);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  summary.push(`disk: made ${image.disk} (${(statSync(image.disk).size / 1e6).toFixed(0)} MB) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { ...image, summary: summary.join('; ') };
}

/**
 * Whether KVM boots this kernel: a nested hypervisor may offer /dev/kvm and
 * still fail a Debian kernel (this machine's PVM: qemu aborts or hits "KVM
 * internal error"). The kernel with no root filesystem must get as far as
 * looking for one (its panic) within the deadline. A failing probe waits out
 * the deadline, so the answer is kept for the host's boot and this kernel:
 * every later VM of the run starts at once.
 */
export async function kvmBoots(kernel: string, deadlineMs = 60_000): Promise<boolean> {
  if (!existsSync('/dev/kvm')) return false;
  const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  const known = join(CACHE, `kvm-${createHash('sha256').update(`${bootId}\n${kernel}\n`).digest('hex').slice(0, 16)}`);
  if (existsSync(known)) return readFileSync(known, 'utf8') === 'kvm';
  const boots = await probeKvm(kernel, deadlineMs);
  writeFileSync(known, boots ? 'kvm' : 'tcg');
  return boots;
}

async function probeKvm(kernel: string, deadlineMs: number): Promise<boolean> {
  const child = spawn(
    'setpriv',
    [
      '--pdeathsig',
      'KILL',
      '--',
      'qemu-system-x86_64',
      '-accel',
      'kvm',
      '-cpu',
      'host',
      '-m',
      '256',
      '-smp',
      '1',
      '-nodefaults',
      '-display',
      'none',
      '-no-reboot',
      '-serial',
      'stdio',
      '-kernel',
      kernel,
      '-append',
      'console=ttyS0 panic=-1 root=/dev/nonexistent rootwait=1',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    out += d;
  });
  try {
    await waitFor(
      'the KVM probe kernel to look for its root',
      () => /VFS: Unable to mount root|Kernel panic|Waiting for root device/.test(out) || child.exitCode !== null,
      deadlineMs,
    );
  } catch {
    return false;
  } finally {
    child.kill('SIGKILL');
  }
  return /VFS: Unable to mount root|Kernel panic|Waiting for root device/.test(out) && !/KVM internal error/.test(out);
}

export interface VmOptions {
  dir: string;
  image: Bootable;
  /** The disk the guest sees (a flavor's disk; the image is smaller and grows to it). */
  diskGb?: number;
  configDrive: string;
  mac: string;
  /** Host ports (on 127.0.0.1) forwarded to the guest's 9443 and 22. */
  apiPort: number;
  sshPort: number;
  kvm: boolean;
  memoryMb?: number;
}

/** A minimal QMP client: one command at a time, events kept. */
class Qmp {
  private buffer = '';
  private pending: ((m: Record<string, unknown>) => void) | null = null;
  readonly events: Record<string, unknown>[] = [];

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      this.buffer += d;
      let nl = this.buffer.indexOf('\n');
      while (nl >= 0) {
        const line = this.buffer.slice(0, nl).trim();
        this.buffer = this.buffer.slice(nl + 1);
        nl = this.buffer.indexOf('\n');
        if (!line) continue;
        const message = JSON.parse(line) as Record<string, unknown>;
        if ('event' in message || 'QMP' in message) this.events.push(message);
        else {
          const answer = this.pending;
          this.pending = null;
          answer?.(message);
        }
      }
    });
  }

  static async connect(path: string): Promise<Qmp> {
    const socket = await waitFor(
      `QMP socket ${path}`,
      () =>
        new Promise<Socket | null>((resolve) => {
          const s = createConnection(path);
          s.once('connect', () => resolve(s));
          s.once('error', () => resolve(null));
        }),
      30_000,
      200,
    );
    const qmp = new Qmp(socket as Socket);
    await waitFor('the QMP greeting', () => qmp.events.some((e) => 'QMP' in e), 30_000);
    await qmp.execute('qmp_capabilities');
    return qmp;
  }

  execute(command: string, args?: Record<string, unknown>): Promise<unknown> {
    if (this.pending) throw new Error('QMP: one command at a time');
    return new Promise((resolve, reject) => {
      this.pending = (m) => ('error' in m ? reject(new Error(`QMP ${command}: ${JSON.stringify(m.error)}`)) : resolve(m.return));
      this.socket.write(`${JSON.stringify({ execute: command, ...(args ? { arguments: args } : {}) })}\n`);
    });
  }

  close(): void {
    this.socket.destroy();
  }
}

export class Vm {
  private child: ChildProcess | null = null;
  private qmpClient: Qmp | null = null;
  readonly overlay: string;
  readonly console: string;
  readonly startedAt = Date.now();

  constructor(readonly options: VmOptions) {
    this.overlay = join(options.dir, 'overlay.qcow2');
    this.console = join(options.dir, 'console.log');
  }

  /** Power on: a fresh overlay over the cached disk (4 GB unless asked: a small flavor's disk). */
  async start(): Promise<void> {
    const o = this.options;
    sh('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', o.image.disk, '-F', o.image.format, this.overlay, `${o.diskGb ?? 4}G`]);
    // Without a kernel, SeaBIOS boots the disk's own bootloader, as Nova's default firmware does.
    const directBoot = o.image.kernel ? ['-kernel', o.image.kernel, '-initrd', o.image.initrd!, '-append', 'root=LABEL=cloudimg-rootfs rw console=ttyS0'] : [];
    const qmpPath = join(o.dir, 'qmp.sock');
    // setpriv --pdeathsig: qemu goes with the test process, even when the
    // runner SIGKILLs a file that overran its time limit.
    this.child = spawn(
      'setpriv',
      [
        '--pdeathsig',
        'KILL',
        '--',
        'qemu-system-x86_64',
        ...(o.kvm ? ['-accel', 'kvm', '-cpu', 'host'] : ['-accel', 'tcg']),
        '-m',
        String(o.memoryMb ?? 1024),
        '-smp',
        '1',
        '-nodefaults',
        '-display',
        'none',
        ...directBoot,
        '-drive',
        `file=${this.overlay},if=virtio,format=qcow2,cache=unsafe`,
        '-drive',
        `file=${o.configDrive},if=virtio,format=raw,readonly=on`,
        '-netdev',
        `user,id=mgmt,hostfwd=tcp:127.0.0.1:${o.apiPort}-:9443,hostfwd=tcp:127.0.0.1:${o.sshPort}-:22`,
        // romfile=: no PXE option ROM (Nova's guests boot from disk; ipxe-qemu is only a Recommends).
        '-device',
        `virtio-net-pci,netdev=mgmt,mac=${o.mac},romfile=`,
        '-serial',
        `file:${this.console}`,
        '-qmp',
        `unix:${qmpPath},server=on,wait=off`,
        '-rtc',
        'base=utc',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    this.child.stderr!.on('data', (d) => {
      stderr += d;
    });
    this.child.on('exit', (code, signal) => {
      if (code !== 0 && signal !== 'SIGKILL' && signal !== 'SIGTERM') console.error(`qemu exited (${signal ?? code}): ${stderr}`);
    });
    this.qmpClient = await Qmp.connect(qmpPath);
  }

  /** qemu has exited (powered off, crashed, or killed). */
  get exited(): boolean {
    return this.child !== null && (this.child.exitCode !== null || this.child.signalCode !== null);
  }

  get qmp(): Qmp {
    if (!this.qmpClient) throw new Error('VM not started');
    return this.qmpClient;
  }

  consoleText(): string {
    return existsSync(this.console) ? readFileSync(this.console, 'utf8') : '';
  }

  /** Wait for a line on the serial console; returns seconds since power-on. */
  async waitConsole(what: string, re: RegExp, timeoutMs: number): Promise<number> {
    await waitFor(
      what,
      () => {
        if (this.exited) throw new Error(`qemu exited while waiting for ${what}:\n${this.consoleText().slice(-3000)}`);
        return re.test(this.consoleText());
      },
      timeoutMs,
      500,
    );
    return (Date.now() - this.startedAt) / 1000;
  }

  /** Power off and drop the overlay (hundreds of MB after a boot); the console log stays for a post-mortem. */
  stop(): void {
    this.qmpClient?.close();
    if (this.child && this.child.exitCode === null) this.child.kill('SIGKILL');
    rmSync(this.overlay, { force: true });
  }
}

/** ssh into the guest as the image's default user (the key Nova puts in public-keys). */
export class GuestShell {
  constructor(
    readonly port: number,
    readonly key: string,
    readonly user = 'debian',
  ) {}

  run(command: string, timeoutMs = 60_000): { status: number | null; stdout: string; stderr: string } {
    const r = spawnSync('ssh', this.sshArgs(command), { encoding: 'utf8', timeout: timeoutMs });
    return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
  }

  /** run's output, without blocking the caller's event loop (members and clients served from it keep going); throws unless it exits 0. */
  output(command: string, timeoutMs = 60_000): Promise<string> {
    return new Promise((resolve, reject) => {
      execFile('ssh', this.sshArgs(command), { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 256 * 2 ** 20 }, (err, stdout) =>
        err ? reject(err) : resolve(stdout),
      );
    });
  }

  private sshArgs(command: string): string[] {
    return [
      '-i',
      this.key,
      '-p',
      String(this.port),
      '-o',
      'StrictHostKeyChecking=no',
      '-o',
      'UserKnownHostsFile=/dev/null',
      '-o',
      'BatchMode=yes',
      '-o',
      'ConnectTimeout=20',
      '-o',
      'LogLevel=ERROR',
      `${this.user}@127.0.0.1`,
      command,
    ];
  }

  /** A command as root (sudo: the default user's NOPASSWD rule from cloud-init); throws unless it exits 0. */
  root(command: string, timeoutMs = 60_000): string {
    const r = this.run(`sudo -n sh -c ${shellQuote(command)}`, timeoutMs);
    if (r.status !== 0) throw new Error(`guest: ${command}: exit ${r.status}\n${r.stderr}${r.stdout}`);
    return r.stdout;
  }
}

export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", "'\\''")}'`;
}
