// Plugging NICs into the amphora namespace (POST /1.0/plug/vip and
// /1.0/plug/network): find the hot-plugged link by MAC, write its interface
// file, move and rename it into the namespace, and bring it up.
import type { Logger } from '../log.js';
import { exists, writeFileAtomic } from '../system/files.js';
import { ensureNetns } from '../system/netns.js';
import { interfaceUp } from './amphora-interface.js';
import { backendInterfaceFile, vipInterfaceFile, type FixedIp, type VipSubnet } from './interface-file.js';
import { amphoraNamespace, findLinkByMac, links, moveLink, rememberPlugged, writeInterfaceFile, type NetworkSettings } from './interfaces.js';
import { announceAddresses } from './advertise.js';
import { applyIpvsSysctls } from './ipvs-sysctls.js';
import { AgentError } from '../errors.js';

export interface PlugSettings extends NetworkSettings {
  topology: 'SINGLE' | 'ACTIVE_STANDBY';
}

/** The NIC is not visible yet (hot-plug still in progress): the controller retries on this exact text. */
/** No interface of the namespace has the MAC address the controller named. */
export class InterfaceNotFoundError extends AgentError {
  readonly kind = 'not_found';
}

/** plug/vip on a MAC address whose interface is already plugged. */
export class InterfaceExistsError extends AgentError {
  readonly kind = 'conflict';
}

/** Move the hot-plugged link with this MAC from the agent's namespace into the amphora namespace. */
async function moveIntoNamespace(netns: string, mac: string, ifname: string): Promise<void> {
  const current = await findLinkByMac(null, mac);
  if (!current) {
    // A PCI rescan makes a hot-plugged NIC appear on some hypervisors; only where the file exists.
    if (await exists('/sys/bus/pci/rescan')) await writeFileAtomic('/sys/bus/pci/rescan', '1').catch(() => undefined);
    throw new InterfaceNotFoundError('No suitable network interface found');
  }
  await moveLink(netns, current, ifname);
}

export async function plugVip(
  settings: PlugSettings,
  body: {
    vips: VipSubnet[];
    mac: string;
    vrrpIp: string | null;
    mtu: number | null;
    isSriov: boolean | null;
  },
  log: Logger,
): Promise<string> {
  const netns = amphoraNamespace(settings);
  await ensureNetns(netns);
  // The namespace is the amphora's from here on (it may be the agent's own creation).
  await applyIpvsSysctls(netns, log);
  if (await findLinkByMac(netns, body.mac)) throw new InterfaceExistsError('Interface already exists');
  // Octavia's agent (16 and later) records is_sriov false when plug vip does not say.
  const file = vipInterfaceFile({
    name: 'eth1',
    vips: body.vips,
    vrrpIp: body.vrrpIp,
    fixedIps: [],
    topology: settings.topology,
    mtu: body.mtu,
    isSriov: body.isSriov ?? false,
  });
  await moveIntoNamespace(netns, body.mac, 'eth1');
  await writeInterfaceFile(settings, file);
  await rememberPlugged(settings, body.mac, 'eth1');
  await interfaceUp({ netns, basePath: settings.basePath }, file);
  return 'eth1';
}

export async function plugNetwork(
  settings: PlugSettings,
  body: {
    mac: string;
    fixedIps: FixedIp[];
    mtu: number | null;
    isSriov: boolean | null;
    vip: { vips: VipSubnet[]; vrrpIp: string | null } | null;
  },
  log: Logger,
): Promise<{ ifname: string; updated: boolean }> {
  const netns = amphoraNamespace(settings);
  await ensureNetns(netns);
  const existing = await findLinkByMac(netns, body.mac);
  const ifname = existing ?? (await firstFreeName(netns));
  const file = body.vip
    ? vipInterfaceFile({
        name: ifname,
        vips: body.vip.vips,
        vrrpIp: body.vip.vrrpIp,
        fixedIps: body.fixedIps,
        topology: settings.topology,
        mtu: body.mtu,
        isSriov: body.isSriov,
      })
    : backendInterfaceFile({ name: ifname, fixedIps: body.fixedIps, mtu: body.mtu, isSriov: body.isSriov });
  if (!existing) await moveIntoNamespace(netns, body.mac, ifname);
  await writeInterfaceFile(settings, file);
  await rememberPlugged(settings, body.mac, ifname);
  await interfaceUp({ netns, basePath: settings.basePath }, file);
  // The member subnet's neighbours (members, routers) learn the port's MAC
  // at once, as Octavia 16 and later announce it; in the background, since
  // arping waits for replies and nobody waits for the announcement.
  void announceAddresses(
    netns,
    body.fixedIps.map((f) => f.ip_address),
    log,
  );
  return { ifname, updated: existing !== null };
}

/**
 * The first ethN (N >= 2) not used in the namespace, as Octavia 16 and later
 * name member ports: a name freed by a detached port is taken again (11 took
 * eth<number of links>, which could collide). eth0 is the management NIC,
 * eth1 the VIP.
 */
async function firstFreeName(netns: string): Promise<string> {
  const used = new Set((await links(netns)).map((l) => l.ifname));
  for (let n = 2; ; n++) if (!used.has(`eth${n}`)) return `eth${n}`;
}
