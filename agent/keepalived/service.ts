// VRRP and LVS (UDP/SCTP listeners) on the amphora, with Octavia's file
// layout under <base_path>/vrrp and <base_path>/lvs, and the check scripts
// keepalived runs in ACTIVE_STANDBY.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { TEMPLATES_DIR } from '../package-root.js';
import { udpCheckScript, vrrpCheckScript } from '../config/layout.js';
import { checkKeepalivedConfig, OCTAVIA_NAMESPACE, type KeepalivedConfigKind } from '../haproxy/config/policy/keepalived-config.js';
import { PolicyRefusedError } from '../haproxy/config/policy/types.js';
import { ensureHaproxyTrack, withHaproxyTrack } from './haproxy-track.js';
import { ensureDir, exists, readTextIfExists, removeFile, writeFileAtomic } from '../system/files.js';
import { keepalivedPid, installUnit, startKeepalived, stopKeepalived, type KeepalivedInstance, type KeepalivedSettings } from './process.js';

const LVS_PREFIX = 'octavia-keepalivedlvs-';
/**
 * The check keepalived runs for each load balancer's haproxy: a shell script
 * with socat (Octavia's haproxy-vrrp-check semantics), not the agent's own
 * command, which would load all of Node.js and the agent every interval.
 */
export const VRRP_CHECK_SCRIPT = join(TEMPLATES_DIR, 'keepalived', 'haproxy-vrrp-check.sh');

/**
 * The VRRP keepalived names its child pid files too: with -p only, keepalived
 * keeps the VRRP child's pid in /run/vrrp.pid and a second VRRP keepalived on
 * the same host (two amphorae on one machine, a container) refuses to start.
 */
export function vrrpInstance(basePath: string): KeepalivedInstance {
  const dir = join(basePath, 'vrrp');
  return {
    unit: 'octavia-keepalived',
    config: join(dir, 'octavia-keepalived.conf'),
    runConfig: join(dir, 'octavia-keepalived.live.conf'),
    pidFile: join(dir, 'octavia-keepalived.pid'),
    childPidFiles: { vrrp: join(dir, 'octavia-keepalived.vrrp.pid'), check: join(dir, 'octavia-keepalived.check.pid') },
    launchLog: join(dir, 'keepalived.launch.log'),
  };
}

export function lvsInstance(basePath: string, listenerId: string): KeepalivedInstance {
  const base = join(basePath, 'lvs', `${LVS_PREFIX}${listenerId}`);
  return {
    unit: `${LVS_PREFIX}${listenerId}`,
    config: `${base}.conf`,
    pidFile: `${base}.pid`,
    childPidFiles: { vrrp: `${base}.vrrp.pid`, check: `${base}.check.pid` },
    launchLog: `${base}.launch.log`,
  };
}

/** Runs every script in check_scripts/ and fails with the sum of their exit codes (keepalived's vrrp_script). */
const CHECK_SCRIPT = `#!/bin/bash
# Written by the amphora agent: keepalived's VRRP health check.
status=0
for script in "$(dirname "$0")"/check_scripts/*; do
    [ -e "$script" ] || continue
    bash "$script"
    status=$((status + $?))
done
exit $status
`;

/** A UDP member answers when a probe datagram is not refused (no ICMP port unreachable). */
const UDP_CHECK = `#!/bin/bash
# Written by the amphora agent: UDP member check for keepalived LVS (address port).
nc -uzv -w1 "$1" "$2" >/dev/null 2>&1
`;

/**
 * Refuse a config the keepalived policy does not allow (unless config_policy
 * is off), before anything is written: keepalived runs as root what its
 * config names.
 */
export function judgeKeepalivedConfig(basePath: string, s: KeepalivedSettings, kind: KeepalivedConfigKind, config: string): void {
  if (s.configPolicy === false) return;
  const namespaces = s.netns && s.netns !== OCTAVIA_NAMESPACE ? [OCTAVIA_NAMESPACE, s.netns] : [OCTAVIA_NAMESPACE];
  const violations = checkKeepalivedConfig(config, kind, { basePath, namespaces });
  if (violations.length > 0) throw new PolicyRefusedError(violations);
}

export async function uploadVrrp(basePath: string, s: KeepalivedSettings, config: string, lbSockets: string[], hasLvs: boolean): Promise<void> {
  judgeKeepalivedConfig(basePath, s, 'vrrp', config);
  const inst = vrrpInstance(basePath);
  await ensureDir(join(basePath, 'vrrp', 'check_scripts'), 0o755);
  // The config stays as uploaded; keepalived runs it with the agent's track
  // file (./haproxy-track.ts): failover at once when haproxy is gone for good.
  await writeFileAtomic(inst.config, config, 0o644);
  await writeFileAtomic(inst.runConfig!, withHaproxyTrack(config, basePath), 0o644);
  await ensureHaproxyTrack(basePath);
  if (!(await exists(vrrpCheckScript(basePath)))) await writeFileAtomic(vrrpCheckScript(basePath), CHECK_SCRIPT, 0o755);
  await updateHaproxyCheckScript(basePath, lbSockets, hasLvs);
  await installUnit(inst, s);
}

/**
 * check_scripts/haproxy_check_script.sh: every load balancer's stats socket
 * must answer, or keepalived gives up mastership. With no load balancer and
 * no LVS listener the amphora cannot serve, so the check fails.
 */
export async function updateHaproxyCheckScript(basePath: string, lbSockets: string[], hasLvs: boolean): Promise<void> {
  const dir = join(basePath, 'vrrp', 'check_scripts');
  if (!(await exists(dir))) return;
  const path = join(dir, 'haproxy_check_script.sh');
  if (lbSockets.length > 0) {
    await writeFileAtomic(path, `exec /bin/sh ${shellQuote(VRRP_CHECK_SCRIPT)} ${lbSockets.map(shellQuote).join(' ')}\n`, 0o755);
  } else if (!hasLvs) {
    await writeFileAtomic(path, 'exit 1\n', 0o755);
  } else {
    await removeFile(path);
  }
}

const shellQuote = (s: string) => (/^[\w./@:+-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`);

export async function uploadLvs(basePath: string, s: KeepalivedSettings, listenerId: string, config: string): Promise<void> {
  judgeKeepalivedConfig(basePath, s, 'lvs', config);
  const inst = lvsInstance(basePath, listenerId);
  await ensureDir(join(basePath, 'lvs', 'check'), 0o755);
  const check = udpCheckScript(basePath);
  if (!(await exists(check))) await writeFileAtomic(check, UDP_CHECK, 0o700);
  await writeFileAtomic(inst.config, config, 0o644);
  await installUnit(inst, s);
}

export async function lvsListenerIds(basePath: string): Promise<string[]> {
  const names = await readdir(join(basePath, 'lvs')).catch(() => [] as string[]);
  return names
    .filter((n) => n.startsWith(LVS_PREFIX) && n.endsWith('.conf'))
    .map((n) => n.slice(LVS_PREFIX.length, -'.conf'.length))
    .sort();
}

export async function lvsExists(basePath: string, listenerId: string): Promise<boolean> {
  return exists(lvsInstance(basePath, listenerId).config);
}

/**
 * The addresses an LVS listener's config serves: the first word of each line
 * in its virtual_server_group blocks (Octavia renders one group per address
 * family, "<address> <port>" per VIP). These are what is announced after the
 * listener starts.
 */
export function lvsVirtualAddresses(configText: string): string[] {
  const out: string[] = [];
  let inGroup = false;
  for (const line of configText.split('\n')) {
    const t = line.trim();
    if (inGroup) {
      if (t.startsWith('}')) inGroup = false;
      else if (t) out.push(t.split(/\s+/)[0]!);
    } else if (/^virtual_server_group\s/.test(t)) {
      inGroup = true;
    }
  }
  return out;
}

/** ACTIVE when keepalived runs with a virtual_server, OFFLINE when not started, ERROR when it died. */
export async function lvsStatus(basePath: string, listenerId: string, configText: string): Promise<'ACTIVE' | 'OFFLINE' | 'ERROR'> {
  const inst = lvsInstance(basePath, listenerId);
  if (await keepalivedPid(inst)) return configText.includes('virtual_server') ? 'ACTIVE' : 'OFFLINE';
  return (await exists(inst.pidFile)) ? 'ERROR' : 'OFFLINE';
}

export async function removeLvsFiles(basePath: string, listenerId: string, unitDir: string | null): Promise<void> {
  const inst = lvsInstance(basePath, listenerId);
  for (const f of [inst.pidFile, inst.childPidFiles!.vrrp, inst.childPidFiles!.check, inst.config, inst.launchLog]) await removeFile(f);
  if (unitDir) await removeFile(join(unitDir, `${inst.unit}.service`));
}

/**
 * Write an LVS listener's config and (re)start its keepalived (a restart, as
 * Octavia reloads LVS listeners). False when it already runs this config.
 */
export async function applyLvs(basePath: string, s: KeepalivedSettings, listenerId: string, config: string): Promise<boolean> {
  const inst = lvsInstance(basePath, listenerId);
  const running = (await keepalivedPid(inst)) !== null;
  if (running && (await readTextIfExists(inst.config)) === config) return false;
  await uploadLvs(basePath, s, listenerId, config);
  if (running) await stopKeepalived(inst, s);
  await startKeepalived(inst, s);
  return true;
}

/** Stop an LVS listener's keepalived and remove its files. */
export async function removeLvs(basePath: string, s: KeepalivedSettings, listenerId: string): Promise<void> {
  await stopKeepalived(lvsInstance(basePath, listenerId), s);
  await removeLvsFiles(basePath, listenerId, s.processManager === 'systemd' ? s.unitDir : null);
}
