// keepalived process control, for the VRRP instance and each LVS (UDP/SCTP)
// listener: the agent itself (containers, tests) or systemd units named as
// Octavia names them. keepalived daemonizes; a start counts only when its pid
// file names a live process, since keepalived may exit right after forking
// (for example when the kernel has no IPVS).
import { join } from 'node:path';
import { launchDaemon, run } from '../system/exec.js';
import { readTextIfExists, removeFile, writeFileAtomic } from '../system/files.js';
import { ensureNetns } from '../system/netns.js';
import { isProcessAlive, readPidFile, terminateProcess } from '../system/proc.js';
import type { AgentConfig } from '../config/agent-config.js';
import { AgentError } from '../errors.js';

export interface KeepalivedInstance {
  /** systemd unit name without .service: octavia-keepalived or octavia-keepalivedlvs-<id>. */
  unit: string;
  /** The config as uploaded. */
  config: string;
  /** What keepalived loads when the agent adds to the uploaded config (VRRP: the haproxy track file); else `config`. */
  runConfig?: string;
  pidFile: string;
  /** The VRRP and checker child pid files (-r, -c), so several keepalived can run on one host. */
  childPidFiles: { vrrp: string; check: string } | null;
  launchLog: string;
}

export class KeepalivedFailedError extends AgentError {
  readonly kind = 'keepalived_failed';

  constructor(
    readonly action: string,
    readonly output: string,
  ) {
    super(`keepalived ${action} failed: ${output}`);
  }
}

export interface KeepalivedSettings {
  netns: string | null;
  logFacility: number;
  processManager: 'direct' | 'systemd';
  unitDir: string;
  /** [amphora_agent] config_policy: uploaded configs are judged (agent/haproxy/config/policy/keepalived-config.ts); on unless false. */
  configPolicy?: boolean;
}

/** keepalived runs the way haproxy does (systemd units or the agent), in haproxy's namespace. */
export function keepalivedSettings(config: AgentConfig, processManager: 'direct' | 'systemd'): KeepalivedSettings {
  return {
    netns: config.amphoraAgent.networkNamespace,
    logFacility: config.amphoraAgent.administrativeLogFacility,
    processManager,
    unitDir: config.amphoraAgent.systemdUnitDir,
    configPolicy: config.amphoraAgent.configPolicy,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function keepalivedPid(inst: KeepalivedInstance): Promise<number | null> {
  const pid = await readPidFile(inst.pidFile);
  return pid && (await isProcessAlive(pid)) ? pid : null;
}

export function keepalivedArgv(inst: KeepalivedInstance, s: KeepalivedSettings): string[] {
  return [
    '/usr/sbin/keepalived',
    `--log-facility=${s.logFacility}`,
    '-f',
    inst.runConfig ?? inst.config,
    '-p',
    inst.pidFile,
    ...(inst.childPidFiles ? ['-r', inst.childPidFiles.vrrp, '-c', inst.childPidFiles.check] : []),
  ];
}

async function systemctl(verb: string, inst: KeepalivedInstance): Promise<void> {
  const res = await run(['systemctl', verb, `${inst.unit}.service`]);
  if (res.exitCode !== 0) throw new KeepalivedFailedError(verb, res.output.trim());
}

/** Write the unit when it is missing or differs (systemd only). */
export async function installUnit(inst: KeepalivedInstance, s: KeepalivedSettings): Promise<void> {
  if (s.processManager !== 'systemd') return;
  const path = join(s.unitDir, `${inst.unit}.service`);
  const unit = [
    '[Unit]',
    `Description=keepalived ${inst.unit}`,
    'After=network.target amphora-netns.service',
    'Requires=amphora-netns.service',
    '',
    '[Service]',
    'Type=forking',
    'KillMode=process',
    `PIDFile=${inst.pidFile}`,
    `ExecStart=${s.netns ? `/sbin/ip netns exec ${s.netns} ` : ''}${keepalivedArgv(inst, s).join(' ')}`,
    'ExecReload=/bin/kill -HUP $MAINPID',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
  if ((await readTextIfExists(path)) === unit) return;
  await writeFileAtomic(path, unit, 0o644);
  await run(['systemctl', 'daemon-reload']);
  await systemctl('enable', inst);
}

export async function startKeepalived(inst: KeepalivedInstance, s: KeepalivedSettings): Promise<void> {
  if (await keepalivedPid(inst)) return;
  if (s.processManager === 'systemd') {
    await installUnit(inst, s);
    await systemctl('start', inst);
  } else {
    if (s.netns) await ensureNetns(s.netns);
    // --log-console: startup errors land in the launch log, for the caller.
    const res = await launchDaemon([...keepalivedArgv(inst, s), '--log-console'], inst.launchLog, { netns: s.netns });
    if (res.exitCode !== 0) throw new KeepalivedFailedError('start', res.output.trim());
  }
  // keepalived writes its pid file after forking and may exit right after
  // (no IPVS, unusable config): it counts as started when it is still alive
  // half a second after its pid appeared.
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    if (await keepalivedPid(inst)) {
      await sleep(500);
      if (await keepalivedPid(inst)) return;
      break;
    }
    await sleep(50);
  }
  const log = (await readTextIfExists(inst.launchLog)) ?? '';
  throw new KeepalivedFailedError('start', log.trim().split('\n').slice(-10).join('\n') || 'keepalived exited right after starting');
}

export async function reloadKeepalived(inst: KeepalivedInstance, s: KeepalivedSettings): Promise<void> {
  const pid = await keepalivedPid(inst);
  if (!pid) return startKeepalived(inst, s);
  if (s.processManager === 'systemd') return systemctl('reload', inst);
  process.kill(pid, 'SIGHUP');
}

export async function stopKeepalived(inst: KeepalivedInstance, s: KeepalivedSettings): Promise<void> {
  const pid = await keepalivedPid(inst);
  if (!pid) return;
  if (s.processManager === 'systemd') return systemctl('stop', inst);
  await terminateProcess(pid);
  await removeFile(inst.pidFile);
}
