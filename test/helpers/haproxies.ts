// The release matrix the tests run against: haproxy, keepalived and Octavia's
// own code from Debian bookworm (this machine) and from the root filesystems
// test/rig/prepare.sh caches (trixie, sid, experimental), run through chroot
// wrappers that share this machine's network.
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { mkdirSync, readFileSync } from 'node:fs';

const CACHE = process.env.AMPHORA_TEST_CACHE ?? '/var/cache/amphora-agent-tests';
export const TEST_ROOT = process.env.AMPHORA_TEST_ROOT ?? '/var/tmp/aat';
const wrapper = (name: string) => join(CACHE, 'bin', name);

export interface HaproxyUnderTest {
  /** haproxy-<major.minor>: the series each Debian suite ships. */
  label: string;
  command: string[];
}

/**
 * Every haproxy scenario runs against each of these: bookworm's 2.6, trixie's
 * 3.0 (the one the amphora image ships), sid's 3.2 and experimental's 3.4.
 */
export const HAPROXIES: HaproxyUnderTest[] = [
  { label: 'haproxy-2.6', command: ['/usr/sbin/haproxy'] },
  { label: 'haproxy-3.0', command: [wrapper('haproxy-trixie')] },
  { label: 'haproxy-3.2', command: [wrapper('haproxy-sid')] },
  { label: 'haproxy-3.4', command: [wrapper('haproxy-experimental')] },
];

/**
 * The suite runs in two sizes (test/README.md, "Which combinations run"):
 * the gate (`npm test`, CI) and the matrix (`npm run test:matrix`,
 * AMPHORA_TEST_MATRIX=full), run before an issue is resolved. A scenario
 * that does not fit CI's time on every version or variant takes the
 * oldest and newest (`gate`) in the gate and all of them in the matrix.
 */
export const FULL_MATRIX = process.env.AMPHORA_TEST_MATRIX === 'full';

export function gateOrMatrix<T>(all: readonly T[], gate: readonly T[]): T[] {
  return [...(FULL_MATRIX ? all : gate)];
}

/** haproxy's oldest and newest supported versions: the gate's, for scenarios that split. */
export const HAPROXY_GATE = gateOrMatrix(HAPROXIES, [HAPROXIES[0]!, HAPROXIES[HAPROXIES.length - 1]!]);

export interface KeepalivedUnderTest {
  label: string;
  command: string[];
}

/** bookworm's keepalived 2.2.7 and trixie's 2.3 (the image's). */
export const KEEPALIVEDS: KeepalivedUnderTest[] = [
  { label: 'keepalived-2.2', command: ['/usr/sbin/keepalived'] },
  { label: 'keepalived-2.3', command: [wrapper('keepalived-trixie')] },
];

export interface OctaviaUnderTest {
  /** octavia-<major>: the python3-octavia release. */
  label: string;
  /** The python3 that imports this release's octavia package. */
  python: string;
}

/** Octavia 11.0.0 (bookworm), 16.0.0 (trixie) and 19.0.0 (sid), each with its own Python. */
export const OCTAVIAS: OctaviaUnderTest[] = [
  { label: 'octavia-11', python: '/usr/bin/python3' },
  { label: 'octavia-16', python: wrapper('python3-trixie') },
  { label: 'octavia-19', python: wrapper('python3-sid') },
];

/** A fresh directory under the test root (visible inside the chroots too). */
export async function testDir(prefix: string): Promise<string> {
  mkdirSync(TEST_ROOT, { recursive: true });
  return mkdtemp(join(TEST_ROOT, `${prefix}-`));
}

/**
 * argv that runs one of the test's Python scripts with a release's Octavia.
 * The script goes as text (`python3 -c`), so it needs no path inside the
 * release's root filesystem; its arguments follow as sys.argv[1:].
 */
export function octaviaPython(o: OctaviaUnderTest, script: string, args: string[] = []): [string, string[]] {
  return [o.python, ['-c', readFileSync(script, 'utf8'), ...args]];
}

export interface InteropPair {
  haproxy: HaproxyUnderTest;
  octavia: OctaviaUnderTest;
}

/**
 * The controller lifecycles under load run once per haproxy, each with one
 * Octavia release, so every haproxy and every release is met: each suite's
 * own pair (bookworm, trixie, sid), and the newest haproxy with the oldest
 * controller still in use.
 */
export const INTEROP_PAIRS: InteropPair[] = [
  { haproxy: HAPROXIES[0]!, octavia: OCTAVIAS[0]! },
  { haproxy: HAPROXIES[1]!, octavia: OCTAVIAS[1]! },
  { haproxy: HAPROXIES[2]!, octavia: OCTAVIAS[2]! },
  { haproxy: HAPROXIES[3]!, octavia: OCTAVIAS[0]! },
];
