// Stick tables across reloads (ACTIVE_STANDBY's `peers` section). On a
// reload the old worker pushes its tables to the new one through the local
// peer, but only if it had itself finished learning them: from its own
// predecessor, from the remote amphora, or by haproxy's 5 s timeouts (one
// for the local lesson, one for the remote). A worker replaced before that
// hands over nothing, and the new one starts with empty tables: SOURCE_IP
// and APP_COOKIE clients are balanced afresh (seen on 2.6, 3.0 and 3.2 with
// reloads a few seconds apart). So a reload first waits, bounded, for the
// running worker's lesson to end.
import { setTimeout as sleep } from 'node:timers/promises';
import { workerCommand } from './master-cli.js';

/** Resync flags of a peers section in `show peers` (the same bits from 2.6 to 3.x). */
const LEARNED_FROM_LOCAL = 0x1;
const LEARNED_FROM_REMOTE = 0x2;
/**
 * One of haproxy's 5 s lesson timeouts and a margin: a worker that learned
 * from its predecessor is done at once, one that did not waits for the
 * remote lesson or its timeout. Longer waits (a worker left with neither
 * lesson, two of them) did not pay in the ACTIVE_STANDBY rig: 2.6 peers
 * that teach each other partial tables finish only by timeout, and parallel
 * reloads of both amphorae took 12 s instead of 1 s.
 */
export const PEERS_RESYNC_TIMEOUT_MS = 6000;

/** A config with a `peers` section (Octavia renders one for ACTIVE_STANDBY). */
export function hasPeers(configText: string): boolean {
  return /^peers\s/m.test(configText);
}

/**
 * The peers sections of `show peers` that have not finished learning,
 * by name. Section lines look like
 * `0x55..: [04/Dec/2026:06:47:52] id=p1 disabled=0 flags=0x1103 resync_timeout=3s ...`.
 */
export function sectionsLearning(showPeers: string): string[] {
  const learning: string[] = [];
  for (const m of showPeers.matchAll(/^\S+: \[[^\]]*\] id=(\S+) disabled=(\d+) flags=0x([0-9a-fA-F]+)/gm)) {
    const flags = Number.parseInt(m[3]!, 16);
    const done = LEARNED_FROM_LOCAL | LEARNED_FROM_REMOTE;
    if (m[2] === '0' && (flags & done) !== done) learning.push(m[1]!);
  }
  return learning;
}

/**
 * Wait until the current worker has learned its tables, at most
 * PEERS_RESYNC_TIMEOUT_MS. Returns the sections still learning at the end
 * (empty when done); the reload goes ahead either way.
 */
export async function waitForPeersLesson(masterSocket: string, timeoutMs = PEERS_RESYNC_TIMEOUT_MS): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const learning = sectionsLearning(await workerCommand(masterSocket, 'show peers', 2000).catch(() => ''));
    if (learning.length === 0 || Date.now() > deadline) return learning;
    await sleep(50);
  }
}
