// The SR-IOV VIP firewall (PUT /1.0/interface/<ip>/rules): an nftables
// ruleset in <base_path>/nftables-vip.rules, loaded inside the amphora
// namespace. Rendering is pure; loading goes through system/.
import { join } from 'node:path';
import { run } from '../system/exec.js';
import { exists, writeFileAtomic } from '../system/files.js';
import { AgentError } from '../errors.js';

export interface VipRule {
  protocol: 'SCTP' | 'TCP' | 'UDP' | 'vrrp';
  cidr: string | null;
  port: number;
}

const TABLE = 'inet amphora_table';

/** Traffic every amphora needs whatever the listeners: ICMP errors, IPv6 neighbour discovery, DHCP. */
const BASE_ALLOWS = [
  'icmp type destination-unreachable accept',
  'icmpv6 type { nd-neighbor-solicit, nd-router-advert, nd-neighbor-advert, packet-too-big, destination-unreachable } accept',
  'udp sport 67 udp dport 68 accept',
  'udp sport 547 udp dport 546 accept',
];

function chainHeader(): string[] {
  return ['    chain amphora_chain {', '        type filter hook input priority filter; policy drop;'];
}

export function baseRuleset(): string {
  return [`table ${TABLE} {`, ...chainHeader(), ...BASE_ALLOWS.map((r) => `        ${r}`), '    }', '}', ''].join('\n');
}

export function vipRuleset(rules: VipRule[]): string {
  const lines = rules.map((r) => {
    const family = r.cidr?.includes(':') ? 'ip6' : 'ip';
    // 0.0.0.0/0 means "from anywhere" (Octavia leaves ::/0 as written).
    const from = r.cidr && r.cidr !== '0.0.0.0/0' ? `${family} saddr ${r.cidr} ` : '';
    return r.protocol === 'vrrp' ? `${from}ip protocol 112 accept` : `${from}${r.protocol.toLowerCase()} dport ${r.port} accept`;
  });
  return [
    // Declaring then deleting the table makes `nft -f` replace it atomically.
    `table ${TABLE} {}`, `delete table ${TABLE}`, `table ${TABLE} {`, ...chainHeader(),
    ...BASE_ALLOWS.map((r) => `        ${r}`),
    '        ct state vmap { established : accept, related : accept, invalid : drop }',
    '        iif lo accept', '        ip saddr 127.0.0.0/8 drop', '        ip6 saddr ::1 drop',
    '        iifname eth1 goto amphora_vip_chain', '    }',
    '    chain amphora_vip_chain {', ...lines.map((l) => `        ${l}`), '    }', '}', '',
  ].join('\n');
}

export class NftablesError extends AgentError {
  readonly kind = 'command_failed';
}

const firewallFile = (basePath: string) => join(basePath, 'nftables-vip.rules');

/**
 * Bringing up an SR-IOV interface (Octavia's amphora-interface): the VIP
 * firewall file, created with the base ruleset when missing, is loaded.
 */
export async function loadVipFirewall(basePath: string, netns: string): Promise<void> {
  const path = firewallFile(basePath);
  if (!(await exists(path))) await writeFileAtomic(path, baseRuleset(), 0o600);
  const res = await run(['nft', '-o', '-f', path], { netns });
  if (res.exitCode !== 0) throw new NftablesError(res.output.trim());
}

/**
 * Octavia's semantics: the first call only installs the base ruleset (the
 * SR-IOV interface's bring-up normally did that already); an empty list
 * leaves the rules as they are; otherwise the VIP chain is replaced.
 */
export async function applyVipRules(basePath: string, netns: string, rules: VipRule[]): Promise<void> {
  if (await exists(firewallFile(basePath))) {
    if (rules.length === 0) return;
    await writeFileAtomic(firewallFile(basePath), vipRuleset(rules), 0o600);
  }
  await loadVipFirewall(basePath, netns);
}

export function isVipRuleList(v: unknown): v is VipRule[] {
  return Array.isArray(v) && v.every((r) => typeof r === 'object' && r !== null && !Array.isArray(r)
    && Object.keys(r).sort().join(',') === 'cidr,port,protocol'
    && ['SCTP', 'TCP', 'UDP', 'vrrp'].includes((r as VipRule).protocol)
    && ((r as VipRule).cidr === null || typeof (r as VipRule).cidr === 'string')
    && typeof (r as VipRule).port === 'number' && (r as VipRule).port >= 1 && (r as VipRule).port <= 65535);
}
