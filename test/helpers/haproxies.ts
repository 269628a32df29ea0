// The haproxy binaries every haproxy scenario runs against: bookworm's 2.6 and
// Debian sid's newest (through the chroot wrapper test/rig/prepare.sh makes).
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';

const CACHE = process.env.AMPHORA_TEST_CACHE ?? '/var/cache/amphora-agent-tests';
export const TEST_ROOT = process.env.AMPHORA_TEST_ROOT ?? '/var/tmp/aat';

export interface HaproxyUnderTest {
  label: string;
  command: string[];
}

export const HAPROXIES: HaproxyUnderTest[] = [
  { label: 'haproxy-2.6', command: ['/usr/sbin/haproxy'] },
  { label: 'haproxy-sid', command: [join(CACHE, 'bin', 'haproxy-sid')] },
];

/** A fresh directory under the test root (visible inside the sid chroot too). */
export async function testDir(prefix: string): Promise<string> {
  mkdirSync(TEST_ROOT, { recursive: true });
  return mkdtemp(join(TEST_ROOT, `${prefix}-`));
}
