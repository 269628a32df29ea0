// The network of "Octavia in a box" (test/octavia-box/PROTOCOL.md, Topology):
// one namespace for the box, aatb-<tag>, with two bridges, br-mgmt (the
// control plane's 172.31.0.2/24, the amphorae's management network) and
// br-tenant (10.99.0.1/24, the client side of the VIP/member network);
// namespaces of amphorae and members joined to a bridge by veths whose outer
// ends stay in the box namespace. Every name this makes starts with aatb.
//
// The commands are synchronous on purpose: the cloud's state changes and the
// links it stands for change together, with no other request in between.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';

const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export type BridgeName = 'br-mgmt' | 'br-tenant';

export const MGMT_PREFIX = '172.31.0';
export const TENANT_PREFIX = '10.99.0';
export const CONTROL_PLANE_IP = `${MGMT_PREFIX}.2`;
export const TENANT_GATEWAY_IP = `${TENANT_PREFIX}.1`;
/** Members are 10.99.0.(20+n), n in 0..79 (PROTOCOL.md: members 10.99.0.20-99). */
export const MEMBER_COUNT = 80;

function ip(args: string[]): string {
  try {
    return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: SYSTEM_PATH } });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`ip ${args.join(' ')}: ${(e.stderr || e.message).trim()}`);
  }
}

/** A command whose failure only means "already gone". */
function quietly(cmd: string, args: string[]): void {
  spawnSync(cmd, args, { stdio: 'ignore', env: { PATH: SYSTEM_PATH } });
}

/** Processes with `netns` as their network namespace, killed (what a dead namespace must not keep). */
function killIn(netns: string): void {
  const r = spawnSync('ip', ['netns', 'pids', netns], { encoding: 'utf8', env: { PATH: SYSTEM_PATH } });
  for (const pid of (r.stdout ?? '').split('\n').filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // exited meanwhile
    }
  }
}

export function namespaceExists(netns: string): boolean {
  return spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .stdout.split('\n')
    .some((l) => l.split(' ')[0] === netns);
}

/** A member: a namespace on br-tenant where a test runs a backend. */
export interface Member {
  n: number;
  netns: string;
  ip: string;
  /** argv prefix running a command in the member's namespace. */
  exec: string[];
}

/** A NIC plugged into a namespace: the veth's inner end (given name and MAC) and its outer end on a bridge. */
export interface Nic {
  netns: string;
  inner: string;
  outer: string;
  mac: string;
  bridge: BridgeName;
}

const live = new Set<Box>();
let hooked = false;

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  // Synchronous, so it also runs on process.exit() after a failed test.
  process.on('exit', () => {
    for (const b of live) b.destroy();
  });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(130));
}

export class Box {
  /** Namespaces made by this box (amphorae and members), the box's own last. */
  private readonly namespaces = new Set<string>();
  private readonly nics = new Map<string, Nic>();
  private readonly members = new Map<number, Member>();
  private vethCounter = 0;
  private destroyed = false;

  private constructor(
    readonly tag: string,
    readonly netns: string,
    readonly stateDir: string,
  ) {}

  /**
   * The box namespace and its bridges; state (the cloud's log and socket) in
   * `stateDir`, kept after destroy() for reading a failure. `tag`: 1-6 of [a-z0-9] (interface
   * names are aatb<tag>v<n>, within the kernel's 15 characters).
   */
  static create(tag: string, opts: { stateDir?: string } = {}): Box {
    if (!/^[a-z0-9]{1,6}$/.test(tag)) throw new Error(`box tag '${tag}': 1 to 6 of [a-z0-9]`);
    hookExit();
    const netns = `aatb-${tag}`;
    if (namespaceExists(netns)) throw new Error(`namespace ${netns} exists already (another box with this tag?)`);
    // Under the test root: the control plane's chroot has it mounted, so the cloud's socket there is reachable from inside.
    const stateDir = opts.stateDir ?? `${process.env.AMPHORA_TEST_ROOT ?? '/var/tmp/aat'}/octavia-box-${tag}`;
    mkdirSync(stateDir, { recursive: true });
    const box = new Box(tag, netns, stateDir);
    live.add(box);
    try {
      ip(['netns', 'add', netns]);
      ip(['-n', netns, 'link', 'set', 'lo', 'up']);
      // Fixed bridge MACs: otherwise a bridge takes the lowest MAC of its
      // ports and changes it as amphorae come and go (stale ARP entries).
      box.bridge('br-mgmt', '02:aa:7b:00:00:01', `${CONTROL_PLANE_IP}/24`);
      box.bridge('br-tenant', '02:aa:7b:00:00:02', `${TENANT_GATEWAY_IP}/24`);
    } catch (err) {
      box.destroy();
      throw err;
    }
    return box;
  }

  private bridge(name: BridgeName, mac: string, cidr: string): void {
    ip(['-n', this.netns, 'link', 'add', name, 'address', mac, 'type', 'bridge']);
    ip(['-n', this.netns, 'addr', 'add', cidr, 'dev', name]);
    ip(['-n', this.netns, 'link', 'set', name, 'up']);
  }

  /** argv prefix running a command in the box namespace. */
  get exec(): string[] {
    return ['ip', 'netns', 'exec', this.netns];
  }

  /** A namespace of the box's own (an amphora's): lo up. */
  addNamespace(netns: string): void {
    this.alive();
    if (namespaceExists(netns)) throw new Error(`namespace ${netns} exists already`);
    ip(['netns', 'add', netns]);
    this.namespaces.add(netns);
    ip(['-n', netns, 'link', 'set', 'lo', 'up']);
  }

  /** Everything in it killed, its NICs and the namespace removed. */
  removeNamespace(netns: string): void {
    killIn(netns);
    for (const nic of [...this.nics.values()].filter((n) => n.netns === netns)) this.unplug(nic.outer);
    quietly('ip', ['netns', 'del', netns]);
    this.namespaces.delete(netns);
  }

  /**
   * A veth from `bridge` into `netns`: the inner end named `inner` with `mac`
   * (down, unaddressed: as a hot-plugged NIC appears), the outer end on the
   * bridge and up.
   */
  plug(netns: string, inner: string, mac: string, bridge: BridgeName): Nic {
    this.alive();
    const outer = `aatb${this.tag}v${++this.vethCounter}`;
    ip(['-n', this.netns, 'link', 'add', outer, 'type', 'veth', 'peer', 'name', inner, 'address', mac, 'netns', netns]);
    const nic: Nic = { netns, inner, outer, mac, bridge };
    this.nics.set(outer, nic);
    try {
      ip(['-n', this.netns, 'link', 'set', outer, 'master', bridge, 'up']);
    } catch (err) {
      this.unplug(outer);
      throw err;
    }
    return nic;
  }

  /** The veth pair gone, wherever its inner end was moved to. */
  unplug(outer: string): void {
    quietly('ip', ['-n', this.netns, 'link', 'del', outer]);
    this.nics.delete(outer);
  }

  /** An address on a NIC inside a namespace, the NIC up (what a DHCP client would do). */
  configure(netns: string, ifname: string, cidr: string): void {
    ip(['-n', netns, 'addr', 'add', cidr, 'dev', ifname]);
    ip(['-n', netns, 'link', 'set', ifname, 'up']);
  }

  /** Every process in one of the box's namespaces killed (an amphora that died). */
  killIn(netns: string): void {
    killIn(netns);
  }

  /** The outer end of a NIC up or down (a port's admin state). */
  setOuterUp(outer: string, up: boolean): void {
    ip(['-n', this.netns, 'link', 'set', outer, up ? 'up' : 'down']);
  }

  /** The first ethN (N >= 0) not used in `netns`: the kernel's name for a NIC that appears there. */
  freeEthName(netns: string): string {
    const used = new Set(
      ip(['-n', netns, '-o', 'link', 'show'])
        .split('\n')
        .map((l) => l.split(':')[1]?.trim().split('@')[0]),
    );
    for (let n = 0; ; n++) if (!used.has(`eth${n}`)) return `eth${n}`;
  }

  /** Addresses the box itself uses on a bridge's subnet (the bridges' and the members'). */
  usedAddresses(): string[] {
    return [CONTROL_PLANE_IP, TENANT_GATEWAY_IP, ...[...this.members.values()].map((m) => m.ip)];
  }

  /** A member namespace on br-tenant at 10.99.0.(20+n), default route via the box. */
  member(n: number): Member {
    this.alive();
    if (!Number.isInteger(n) || n < 0 || n >= MEMBER_COUNT) throw new Error(`member ${n}: 0 to ${MEMBER_COUNT - 1}`);
    const existing = this.members.get(n);
    if (existing) return existing;
    const netns = `aatb-${this.tag}-m${n}`;
    this.addNamespace(netns);
    const address = `${TENANT_PREFIX}.${20 + n}`;
    this.plug(netns, 'eth0', `02:aa:7b:01:00:${(20 + n).toString(16).padStart(2, '0')}`, 'br-tenant');
    ip(['-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0']);
    ip(['-n', netns, 'link', 'set', 'eth0', 'up']);
    ip(['-n', netns, 'route', 'add', 'default', 'via', TENANT_GATEWAY_IP]);
    const member: Member = { n, netns, ip: address, exec: ['ip', 'netns', 'exec', netns] };
    this.members.set(n, member);
    return member;
  }

  /** A member's namespace and veth removed (a node gone for good). */
  removeMember(n: number): void {
    const m = this.members.get(n);
    if (!m) return;
    this.removeNamespace(m.netns);
    this.members.delete(n);
  }

  /** Names of the namespaces and veths this box holds now (for assertions that nothing was left). */
  inventory(): { namespaces: string[]; veths: string[] } {
    return { namespaces: [...this.namespaces], veths: [...this.nics.keys()] };
  }

  /** Everything this box made removed, the processes in its namespaces killed; safe to call twice. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    live.delete(this);
    for (const ns of [...this.namespaces]) this.removeNamespace(ns);
    this.members.clear();
    killIn(this.netns);
    for (const br of ['br-mgmt', 'br-tenant']) quietly('ip', ['-n', this.netns, 'link', 'del', br]);
    quietly('ip', ['netns', 'del', this.netns]);
  }

  private alive(): void {
    if (this.destroyed) throw new Error(`box ${this.tag} destroyed`);
  }
}
