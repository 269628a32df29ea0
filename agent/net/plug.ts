// Plugging NICs into the amphora namespace (POST /1.0/plug/vip and
// /1.0/plug/network): find the hot-plugged link by MAC, write its interface
// file, move and rename it into the namespace, and bring it up.
import { run } from '../system/exec.js';
import { exists, writeFileAtomic } from '../system/files.js';
import { ensureNetns } from '../system/netns.js';
import { interfaceUp } from './amphora-interface.js';
import { backendInterfaceFile, vipInterfaceFile, type FixedIp, type VipSubnet } from './interface-file.js';
import { findLinkByMac, links, moveLink, rememberPlugged, writeInterfaceFile, type NetworkSettings } from './interfaces.js';
import { sameIp } from './ip.js';

export interface PlugSettings extends NetworkSettings {
  topology: 'SINGLE' | 'ACTIVE_STANDBY';
}

/** The NIC is not visible yet (hot-plug still in progress): the controller retries on this exact text. */
export class InterfaceNotFoundError extends Error {}
export class InterfaceExistsError extends Error {}

/** Move the hot-plugged link with this MAC from the agent's namespace into the amphora namespace. */
async function moveIntoNamespace(settings: PlugSettings, mac: string, ifname: string): Promise<void> {
  const current = await findLinkByMac(null, mac);
  if (!current) {
    // A PCI rescan makes a hot-plugged NIC appear on some hypervisors; only where the file exists.
    if (await exists('/sys/bus/pci/rescan')) await writeFileAtomic('/sys/bus/pci/rescan', '1').catch(() => undefined);
    throw new InterfaceNotFoundError('No suitable network interface found');
  }
  await moveLink(settings.netns, current, ifname);
}

export async function plugVip(settings: PlugSettings, body: {
  vips: VipSubnet[]; mac: string; vrrpIp: string | null; mtu: number | null; isSriov: boolean | null;
}): Promise<string> {
  await ensureNetns(settings.netns);
  if (await findLinkByMac(settings.netns, body.mac)) throw new InterfaceExistsError('Interface already exists');
  const file = vipInterfaceFile({
    name: 'eth1', vips: body.vips, vrrpIp: body.vrrpIp, fixedIps: [], topology: settings.topology, mtu: body.mtu, isSriov: body.isSriov,
  });
  await moveIntoNamespace(settings, body.mac, 'eth1');
  await writeInterfaceFile(settings, file);
  await rememberPlugged(settings, body.mac, 'eth1');
  await interfaceUp(settings, file);
  return 'eth1';
}

export async function plugNetwork(settings: PlugSettings, body: {
  mac: string; fixedIps: FixedIp[]; mtu: number | null; isSriov: boolean | null;
  vip: { vips: VipSubnet[]; vrrpIp: string | null } | null;
}): Promise<{ ifname: string; updated: boolean }> {
  await ensureNetns(settings.netns);
  const existing = await findLinkByMac(settings.netns, body.mac);
  const ifname = existing ?? (await firstFreeName(settings.netns));
  const file = body.vip
    ? vipInterfaceFile({ name: ifname, vips: body.vip.vips, vrrpIp: body.vip.vrrpIp, fixedIps: body.fixedIps, topology: settings.topology, mtu: body.mtu, isSriov: body.isSriov })
    : backendInterfaceFile({ name: ifname, fixedIps: body.fixedIps, mtu: body.mtu, isSriov: body.isSriov });
  if (!existing) await moveIntoNamespace(settings, body.mac, ifname);
  await writeInterfaceFile(settings, file);
  await rememberPlugged(settings, body.mac, ifname);
  await interfaceUp(settings, file);
  return { ifname, updated: existing !== null };
}

/** The first ethN (N >= 2) not used in the namespace; eth0 is the management NIC, eth1 the VIP. */
async function firstFreeName(netns: string): Promise<string> {
  const used = new Set((await links(netns)).map((l) => l.ifname));
  for (let n = 2; ; n++) if (!used.has(`eth${n}`)) return `eth${n}`;
}

/** The interface of the amphora namespace that holds this address, or null. */
export async function interfaceWithAddress(netns: string, address: string): Promise<string | null> {
  const res = await run(['ip', '-n', netns, '-j', 'addr', 'show']);
  if (res.exitCode !== 0) return null;
  for (const link of JSON.parse(res.stdout) as { ifname: string; addr_info: { local: string }[] }[]) {
    if (link.addr_info.some((a) => sameIp(a.local, address))) return link.ifname;
  }
  return null;
}
