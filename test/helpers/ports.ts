// The ports tests listen on (agents' APIs, backends, heartbeat receivers,
// listeners), from one table: each test file has its own block, and takes
// named ranges from it in order, so no two uses can overlap (they did:
// 20300 + i and 20302 + i in octavia-controller-releases) and a range that
// outgrows its block fails at once instead of taking a neighbour's port.
// Files run one at a time; the blocks also keep files apart when run by hand
// side by side.

/** Each file's block: first port and size. */
const BLOCKS = {
  'reload-under-load': [18000, 100],
  failures: [18100, 100],
  'octavia-client': [18200, 100],
  heartbeat: [18300, 100],
  'render-behaviour': [18400, 100],
  'api-v2': [18500, 300],
  'api-v2-certificates': [18800, 100],
  'new-member-protection': [19000, 300],
  security: [19500, 100],
  'config-fuzz': [24100, 10],
  'octavia-network': [19600, 100],
  'health-manager': [20100, 100],
  'legacy-httpchk': [20200, 100],
  'octavia-releases': [20300, 100],
  'octavia-controller-releases': [20400, 100],
  'server-state-newline': [20500, 100],
  'systemd-reload': [20600, 100],
  'octavia-network-releases': [20700, 100],
  'supervisor-backoff': [21000, 50],
  'haproxy-hang': [21050, 50],
  'api-abuse': [21100, 50],
  'disk-full': [21150, 50],
  soak: [21200, 100],
  'vm-boot': [21300, 30],
  'vm-reboot': [21330, 30],
  'vm-log-offload-tcp': [21360, 20],
  'vm-log-offload-udp': [21380, 20],
  'vm-production': [21420, 20],
  // Members of the standard amphora workload, bound on each VM's own VIP-side
  // host address: every VM (the test's, the bench's two) uses the same ports.
  'amphora-workload': [25000, 1100],
  'bench-amphora-memory': [26100, 20],
  'stick-tables-reload': [21400, 20],
  'active-standby-systemd': [21440, 10],
  'policy-bounds': [21700, 20],
  'keepalived-policy': [22600, 10],
  'runtime-cli-injection': [23700, 30],
  'haproxy-environment': [23730, 20],
  'ids-and-vip-rules': [23750, 10],
  'admission-progress': [23800, 40],
  'config-protected': [22700, 50],
  'policy-files': [23300, 40],
  'config-policy': [24000, 40],
} as const satisfies Record<string, readonly [number, number]>;

export type PortFile = keyof typeof BLOCKS;

export class PortBlock {
  private used = 0;

  constructor(
    readonly file: string,
    readonly first: number,
    readonly size: number,
  ) {}

  /** `count` ports for one use (one per haproxy, per release...): the returned function gives the i-th. */
  range(count: number): (i: number) => number {
    const start = this.first + this.used;
    this.used += count;
    if (this.used > this.size) throw new Error(`${this.file}: ${this.used} ports do not fit its block of ${this.size} (test/helpers/ports.ts)`);
    return (i: number) => {
      if (!Number.isInteger(i) || i < 0 || i >= count) throw new Error(`${this.file}: port ${i} outside a range of ${count}`);
      return start + i;
    };
  }

  /** One port. */
  one(): number {
    return this.range(1)(0);
  }
}

/** The port block of a test file; call once per file, at module level. */
export function testPorts(file: PortFile): PortBlock {
  const [first, size] = BLOCKS[file];
  return new PortBlock(file, first, size);
}

/** Every block, for the check that none overlaps another. */
export function portBlocks(): { file: string; first: number; size: number }[] {
  return Object.entries(BLOCKS).map(([file, [first, size]]) => ({ file, first, size }));
}
