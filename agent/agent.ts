// The composition root: turns an AgentConfig into the running parts (engine
// with its process manager, API app). Nothing else decides which back end runs.
import { readFile } from 'node:fs/promises';
import type { AgentConfig } from './config/agent-config.js';
import { certificateDir } from './config/layout.js';
import { HaproxyEngine, type EngineOptions } from './haproxy/apply/engine.js';
import { DirectSupervisor, type HaproxySupervisor } from './haproxy/process/process.js';
import { SystemdSupervisor } from './haproxy/process/systemd.js';
import { run } from './system/exec.js';
import type { Logger } from './log.js';

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

export async function buildEngine(
  config: AgentConfig, log: Logger, hooks: Pick<EngineOptions, 'beforeBind' | 'onChange'> = {},
): Promise<HaproxyEngine> {
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

/**
 * Installed versions of Debian packages ('' for one that is not installed),
 * with one dpkg-query for all: it prints the packages it knows and exits 1
 * when one is unknown.
 */
export async function packageVersions<K extends string>(pkgs: K[]): Promise<Record<K, string>> {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format syntax
  const res = await run(['dpkg-query', '-W', '-f=${Package}\t${db:Status-Abbrev}\t${Version}\n', ...pkgs]);
  const found = new Map<string, string>();
  for (const line of res.stdout.split('\n')) {
    const [name, status, version] = line.split('\t');
    // "ii " is installed; a removed package whose config files remain is still listed ("rc ").
    if (name && status?.startsWith('ii') && version) found.set(name.replace(/:.*$/, ''), version);
  }
  return Object.fromEntries(pkgs.map((p) => [p, found.get(p) ?? ''])) as Record<K, string>;
}
