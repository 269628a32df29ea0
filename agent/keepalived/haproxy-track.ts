// Fast failover when this amphora's haproxy is gone for good. Octavia's VRRP
// check notices a dead haproxy only after fall x interval (2 x 5 s); the agent
// knows at once (stopped through the API, or a dead haproxy its supervisor
// could not start again). It tells keepalived through a track file that the
// agent adds to every uploaded VRRP config (as it adds init-state to uploaded
// haproxy configs): keepalived watches the file with inotify, and with
// weight 0 any non-zero value puts the VRRP instance in FAULT, so the backup
// takes the VIP after the skew (about 0.65 s) instead of about 10 s.
//
// The file holds the number of load balancers whose haproxy is down for good
// (their ids are kept next to it, so an agent restart changes nothing).
// Reloads and restarts that succeed never touch it: no false failover.
import { join } from 'node:path';
import { haproxyTrackFile } from '../config/layout.js';
import { exists, readTextIfExists, writeFileAtomic } from '../system/files.js';

export const HAPROXY_TRACK = 'amphora_haproxy';

const downListFile = (basePath: string) => join(basePath, 'vrrp', 'haproxy.down');

/**
 * The uploaded keepalived config with the agent's track file: a
 * vrrp_track_file block, and a track_file reference at the top of each
 * vrrp_instance. A config that already has it is returned unchanged.
 */
export function withHaproxyTrack(config: string, basePath: string): string {
  if (config.includes(`vrrp_track_file ${HAPROXY_TRACK}`)) return config;
  if (!/^\s*vrrp_instance\s/m.test(config)) return config;
  const block = [`vrrp_track_file ${HAPROXY_TRACK} {`, `    file ${haproxyTrackFile(basePath)}`, '    weight 0', '}', '', ''].join('\n');
  const tracked = config.replace(/^([ \t]*vrrp_instance\s+\S+[ \t]*\{[^\n]*\n)/gm, `$1    track_file {\n        ${HAPROXY_TRACK}\n    }\n`);
  const at = tracked.search(/^[ \t]*vrrp_instance\s/m);
  return tracked.slice(0, at) + block + tracked.slice(at);
}

async function downList(basePath: string): Promise<string[]> {
  return ((await readTextIfExists(downListFile(basePath))) ?? '').split('\n').filter(Boolean);
}

async function write(basePath: string, down: string[]): Promise<void> {
  await writeFileAtomic(downListFile(basePath), down.map((l) => `${l}\n`).join(''), 0o644);
  await writeFileAtomic(haproxyTrackFile(basePath), `${down.length}\n`, 0o644);
}

/** The track file exists (keepalived reads a missing one as a failure to watch); created at 0 with the VRRP config. */
export async function ensureHaproxyTrack(basePath: string): Promise<void> {
  if (!(await exists(haproxyTrackFile(basePath)))) await write(basePath, await downList(basePath));
}

/**
 * Record whether a load balancer's haproxy runs (true) or is down for good
 * (false). Without a VRRP config (SINGLE topology) it does nothing. Called
 * only by the engine's subscriber (loadbalancer/announce.ts), which hears of
 * every start, reload, stop, removal and watchdog restart.
 */
export async function markHaproxy(basePath: string, lbId: string, running: boolean): Promise<void> {
  if (!(await exists(join(basePath, 'vrrp')))) return;
  const down = await downList(basePath);
  const next = running ? down.filter((l) => l !== lbId) : down.includes(lbId) ? down : [...down, lbId].sort();
  if (next.length === down.length && (await exists(haproxyTrackFile(basePath)))) return;
  await write(basePath, next);
}
