// The engine as amphora-agent.conf configures it: which process manager
// runs haproxy (systemd units or the agent's own supervision) and the
// engine's options. The composition root (agent.ts) builds it here, and so
// does `heartbeat --print`, which needs the engine alone and none of the API.
import { readFile } from 'node:fs/promises';
import type { AgentConfig } from '../config/agent-config.js';
import { certificateDir } from '../config/layout.js';
import { HaproxyEngine, type EngineOptions } from './apply/engine.js';
import { DirectSupervisor, type HaproxySupervisor } from './process/process.js';
import { SystemdSupervisor } from './process/systemd.js';
import type { Logger } from '../log.js';

export async function pid1IsSystemd(): Promise<boolean> {
  const comm = await readFile('/proc/1/comm', 'utf8').catch(() => '');
  return comm.trim() === 'systemd';
}

export async function buildSupervisor(config: AgentConfig): Promise<HaproxySupervisor> {
  const aa = config.amphoraAgent;
  const command = [config.haproxyAmphora.haproxyCmd];
  const useSystemd = aa.processManager === 'systemd' || (aa.processManager === 'auto' && (await pid1IsSystemd()));
  const netns = aa.networkNamespace;
  if (useSystemd) {
    if (!netns) throw new Error('process_manager systemd needs a network_namespace');
    return new SystemdSupervisor(command, netns, aa.userGroupFile, aa.systemdUnitDir);
  }
  return new DirectSupervisor(command, netns, aa.userGroupFile);
}

export async function buildEngine(config: AgentConfig, log: Logger, hooks: Pick<EngineOptions, 'beforeBind' | 'onChange'> = {}): Promise<HaproxyEngine> {
  return new HaproxyEngine({
    baseDir: config.haproxyAmphora.basePath,
    haproxyCommand: [config.haproxyAmphora.haproxyCmd],
    userGroupFile: config.amphoraAgent.userGroupFile,
    supervisor: await buildSupervisor(config),
    log: log.child({ module: 'engine' }),
    protectNewMembers: config.amphoraAgent.protectNewMembers,
    drainTimeoutMs: config.amphoraAgent.memberDrainTimeout * 1000,
    memberConfigWriteDelayMs: config.amphoraAgent.memberConfigWriteDelayMs,
    runtimeMemberChanges: config.amphoraAgent.runtimeMemberChanges,
    certDir: (lbId) => certificateDir(config.haproxyAmphora.baseCertDir, lbId),
    ...hooks,
  });
}
