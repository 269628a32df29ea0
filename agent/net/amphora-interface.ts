// Brings an interface of the amphora namespace to what its interface file
// says (Octavia's `amphora-interface up`): link up with its MTU, addresses,
// routes and policy rules, adding what is missing and removing stale static
// addresses, then the LVS masquerade of tenant interfaces. Every change is a
// command run through system/.
import { run } from '../system/exec.js';
import { explode, ipFamily } from './ip.js';
import { interfaceFamilies, type InterfaceFile } from './interface-file.js';
import { applyMasquerade, removeMasquerade } from './masquerade.js';
import { loadVipFirewall } from './nftables.js';
import { AgentError } from '../errors.js';

export class InterfaceError extends AgentError {
  readonly kind = 'command_failed';
}

async function ip(netns: string, args: string[]): Promise<string> {
  const res = await run(['ip', '-n', netns, ...args]);
  if (res.exitCode !== 0) throw new InterfaceError(`ip ${args.join(' ')}: ${res.output.trim()}`);
  return res.stdout;
}

interface AddrInfo {
  family: 'inet' | 'inet6';
  local: string;
  prefixlen: number;
  scope: string;
  dynamic?: boolean;
}

async function addresses(netns: string, dev: string): Promise<AddrInfo[]> {
  return (JSON.parse(await ip(netns, ['-j', 'addr', 'show', 'dev', dev])) as { addr_info: AddrInfo[] }[])[0]?.addr_info ?? [];
}

/** The addresses keepalived owns (ACTIVE_STANDBY VIPs): the agent neither adds nor removes them. */
function keepalivedAddresses(file: InterfaceFile): Set<string> {
  return new Set(file.addresses.filter((a) => a.octavia_owned === false).map((a) => explode(a.address!)));
}

/** basePath: where the SR-IOV VIP firewall file lives. */
export async function interfaceUp(where: { netns: string; basePath: string }, file: InterfaceFile): Promise<void> {
  const { netns } = where;
  const dev = file.name;
  // The firewall is in place before an SR-IOV interface takes traffic; the
  // controller's rules call then only has to fill in the VIP chain.
  if (file.is_sriov === true) await loadVipFirewall(where.basePath, netns);
  await ip(netns, ['link', 'set', 'dev', dev, ...(file.mtu ? ['mtu', String(file.mtu)] : []), 'up']);

  const wanted = file.addresses.filter((a) => a.address && a.octavia_owned !== false);
  const keepalivedOwned = keepalivedAddresses(file);
  const current = await addresses(netns, dev);
  const has = (addr: string, len: number) => current.some((c) => explode(c.local) === addr && c.prefixlen === len);
  // Stale addresses go first: deleting a subnet's primary address also deletes
  // the secondaries added after it (seen when a fixed IP is replaced).
  for (const c of current) {
    const addr = explode(c.local);
    const listed = wanted.some((a) => a.address === addr && a.prefixlen === c.prefixlen);
    if (c.scope === 'global' && !c.dynamic && !listed && !keepalivedOwned.has(addr)) {
      await ip(netns, ['addr', 'del', `${c.local}/${c.prefixlen}`, 'dev', dev]);
    }
  }
  for (const a of wanted) {
    // nodad: the address is ours (Neutron allocated it); do not wait for duplicate detection.
    if (!has(a.address!, a.prefixlen!)) {
      await ip(netns, ['addr', 'add', `${a.address}/${a.prefixlen}`, 'dev', dev, ...(ipFamily(a.address!) === 6 ? ['nodad'] : [])]);
    }
  }

  for (const r of file.routes) {
    const fam = ipFamily(r.dst.split('/')[0]!) === 6 ? '-6' : '-4';
    await ip(netns, [
      fam,
      'route',
      'replace',
      r.dst,
      ...(r.gateway ? ['via', r.gateway] : []),
      'dev',
      dev,
      ...(r.flags?.includes('onlink') ? ['onlink'] : []),
      ...(r.table ? ['table', String(r.table)] : []),
      ...(r.prefsrc ? ['src', r.prefsrc] : []),
      ...(r.scope ? ['scope', r.scope] : []),
      'proto',
      'static',
    ]);
  }

  for (const rule of file.rules) {
    const fam = ipFamily(rule.src) === 6 ? '-6' : '-4';
    const existing = JSON.parse(await ip(netns, [fam, '-j', 'rule', 'show'])) as { src?: string; srclen?: number; table?: string }[];
    // `ip -j` leaves srclen out for a host prefix (/32, /128).
    const hostLen = fam === '-6' ? 128 : 32;
    const present = existing.some(
      (e) => e.src && e.src !== 'all' && explode(e.src) === explode(rule.src) && (e.srclen ?? hostLen) === rule.src_len && e.table === String(rule.table),
    );
    if (!present) await ip(netns, [fam, 'rule', 'add', 'from', `${rule.src}/${rule.src_len}`, 'table', String(rule.table), 'priority', '100']);
  }

  if (file.if_type !== 'lo') await applyMasquerade(netns, dev, interfaceFamilies(file), file.is_sriov === true);
}

/** `amphora-interface down`: the interface's rules, masquerade and addresses go, and the link goes down. */
export async function interfaceDown(where: { netns: string }, file: InterfaceFile): Promise<void> {
  const { netns } = where;
  const dev = file.name;
  if (file.if_type !== 'lo') await removeMasquerade(netns, dev);
  for (const rule of file.rules) {
    const fam = ipFamily(rule.src) === 6 ? '-6' : '-4';
    // Gone already is fine: down must work on a half-configured interface.
    await run(['ip', '-n', netns, fam, 'rule', 'del', 'from', `${rule.src}/${rule.src_len}`, 'table', String(rule.table)]);
  }
  // Addresses keepalived owns are left to keepalived, as on the way up.
  const keepalivedOwned = keepalivedAddresses(file);
  for (const c of await addresses(netns, dev)) {
    if (c.scope === 'global' && !keepalivedOwned.has(explode(c.local))) await ip(netns, ['addr', 'del', `${c.local}/${c.prefixlen}`, 'dev', dev]);
  }
  await ip(netns, ['link', 'set', 'dev', dev, 'down']);
}
