// The amphora's network as recorded on disk, and bringing it back: interface
// files (<agent_server_network_dir>/<ifname>.json) and plugged_interfaces
// (<base_path>, "<mac> <ifname>" per NIC). After a reboot the hot-plugged
// NICs are back in the main namespace under kernel names, unconfigured;
// `amphora-agent interface up all` (amphora-netns.service) moves each into the
// amphora namespace under its name and configures it from its file.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from '../system/exec.js';
import { ensureDir, readTextIfExists, writeFileAtomic } from '../system/files.js';
import { ensureNetns } from '../system/netns.js';
import { interfaceDown, interfaceUp } from './amphora-interface.js';
import type { InterfaceFile } from './interface-file.js';
import type { AgentConfig } from '../config/agent-config.js';
import { sameIp } from './ip.js';
import { AgentError } from '../errors.js';

export interface NetworkSettings {
  /** The amphora namespace; null: the agent's own (network_namespace = ''). */
  netns: string | null;
  /** agent_server_network_dir: where interface files go. */
  networkDir: string;
  /** base_path: holds plugged_interfaces and the SR-IOV VIP firewall file. */
  basePath: string;
}

export function networkSettings(config: AgentConfig): NetworkSettings {
  return {
    netns: config.amphoraAgent.networkNamespace,
    networkDir: config.amphoraAgent.agentServerNetworkDir,
    basePath: config.haproxyAmphora.basePath,
  };
}

/** Plugging or configuring an interface with network_namespace = '' (the agent's own). */
export class NoNamespaceError extends AgentError {
  readonly kind = 'conflict';

  constructor() {
    super(
      "[amphora_agent] network_namespace is '' (the agent's own namespace): plugging and configuring amphora " +
        "interfaces there would replace the agent's own routes, policy rules and firewall, so it is refused; " +
        'set network_namespace (Octavia: amphora-haproxy)',
    );
  }
}

/**
 * The namespace amphora interfaces are plugged into and configured in. With
 * '' there is none: the VIP's default route, its policy rules, masquerading
 * and the SR-IOV firewall (input policy drop) would land in the agent's own
 * namespace and cut off its management network, so these operations refuse.
 */
export function amphoraNamespace(settings: { netns: string | null }): string {
  if (settings.netns === null) throw new NoNamespaceError();
  return settings.netns;
}

interface Link {
  ifname: string;
  address?: string;
}

export async function links(netns: string | null): Promise<Link[]> {
  const res = await run(['ip', ...(netns ? ['-n', netns] : []), '-j', 'link', 'show']);
  return res.exitCode === 0 ? (JSON.parse(res.stdout) as Link[]) : [];
}

export async function findLinkByMac(netns: string | null, mac: string): Promise<string | null> {
  return (await links(netns)).find((l) => l.address === mac)?.ifname ?? null;
}

/** Move a link of the agent's namespace into the amphora namespace under another name. */
export async function moveLink(netns: string, current: string, ifname: string): Promise<void> {
  for (const cmd of [
    ['ip', 'link', 'set', 'dev', current, 'down'],
    ['ip', 'link', 'set', 'dev', current, 'netns', netns],
    ['ip', '-n', netns, 'link', 'set', 'dev', current, 'name', ifname],
  ]) {
    const res = await run(cmd);
    if (res.exitCode !== 0) throw new Error(`${cmd.join(' ')}: ${res.output.trim()}`);
  }
}

const pluggedPath = (settings: NetworkSettings) => join(settings.basePath, 'plugged_interfaces');

async function pluggedInterfaces(settings: NetworkSettings): Promise<{ mac: string; ifname: string }[]> {
  const text = (await readTextIfExists(pluggedPath(settings))) ?? '';
  return text
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length === 2)
    .map(([mac, ifname]) => ({ mac: mac!, ifname: ifname! }));
}

export async function rememberPlugged(settings: NetworkSettings, mac: string, ifname: string): Promise<void> {
  const text = (await readTextIfExists(pluggedPath(settings))) ?? '';
  if (text.split('\n').some((l) => l.split(' ')[0] === mac)) return;
  await writeFileAtomic(pluggedPath(settings), `${text}${mac} ${ifname}\n`, 0o644);
}

export async function writeInterfaceFile(settings: NetworkSettings, file: InterfaceFile): Promise<void> {
  await ensureDir(settings.networkDir, 0o755);
  await writeFileAtomic(join(settings.networkDir, `${file.name}.json`), JSON.stringify(file, null, 2), 0o644);
}

/** The interface files by interface name, loopback first as the system brings interfaces up; a file that does not parse is its error. */
async function readInterfaceFiles(settings: NetworkSettings): Promise<{ name: string; file: InterfaceFile | null; error: string | null }[]> {
  const names = (await readdir(settings.networkDir).catch(() => [] as string[]))
    .filter((n) => n.endsWith('.json'))
    .map((n) => n.slice(0, -'.json'.length))
    .sort((a, b) => Number(b === 'lo') - Number(a === 'lo') || (a < b ? -1 : a > b ? 1 : 0));
  const out: { name: string; file: InterfaceFile | null; error: string | null }[] = [];
  for (const name of names) {
    try {
      const text = await readTextIfExists(join(settings.networkDir, `${name}.json`));
      if (text !== null) out.push({ name, file: JSON.parse(text) as InterfaceFile, error: null });
    } catch (err) {
      out.push({ name, file: null, error: `unreadable interface file: ${(err as Error).message}` });
    }
  }
  return out;
}

export interface InterfaceOutcome {
  name: string;
  /** Moved back into the namespace from the main one (after a reboot). */
  moved: boolean;
  error: string | null;
}

/**
 * `amphora-agent interface up|down <ifname|all>` (Octavia's amphora-interface).
 * `up` first brings recorded NICs found in the main namespace back into the
 * amphora namespace. Each interface is done on its own: one that fails is
 * reported and the others still come up, as amphora-netns.service expects.
 */
export async function bringInterfaces(settings: NetworkSettings, direction: 'up' | 'down', which: string): Promise<InterfaceOutcome[]> {
  const netns = amphoraNamespace(settings);
  await ensureNetns(netns);
  const entries = (await readInterfaceFiles(settings)).filter((f) => which === 'all' || f.name === which);
  if (entries.length === 0) throw new Error(`no interface file for ${which} in ${settings.networkDir}`);
  const main = direction === 'up' ? await links(null) : [];
  const plugged = await pluggedInterfaces(settings);
  const out: InterfaceOutcome[] = [];
  for (const { name, file, error } of entries) {
    let moved = false;
    try {
      if (!file) throw new Error(error!);
      const mac = plugged.find((p) => p.ifname === name)?.mac;
      const stray = mac ? main.find((l) => l.address === mac) : undefined;
      if (stray) {
        await moveLink(netns, stray.ifname, name);
        moved = true;
      }
      await (direction === 'up' ? interfaceUp : interfaceDown)({ netns, basePath: settings.basePath }, file);
      out.push({ name, moved, error: null });
    } catch (err) {
      out.push({ name, moved, error: (err as Error).message });
    }
  }
  return out;
}

/** The interface of the amphora namespace (null: the agent's own) that holds this address, or null. */
export async function interfaceWithAddress(netns: string | null, address: string): Promise<string | null> {
  const res = await run(['ip', ...(netns ? ['-n', netns] : []), '-j', 'addr', 'show']);
  if (res.exitCode !== 0) return null;
  for (const link of JSON.parse(res.stdout) as { ifname: string; addr_info: { local: string }[] }[]) {
    if (link.addr_info.some((a) => sameIp(a.local, address))) return link.ifname;
  }
  return null;
}
