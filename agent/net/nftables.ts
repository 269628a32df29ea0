// The SR-IOV VIP firewall (PUT /1.0/interface/<ip>/rules): an nftables
// ruleset in <base_path>/nftables-vip.rules, loaded inside the amphora
// namespace. Rendering is pure; loading goes through system/.
import { isIP } from 'node:net';
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
    `table ${TABLE} {}`,
    `delete table ${TABLE}`,
    `table ${TABLE} {`,
    ...chainHeader(),
    ...BASE_ALLOWS.map((r) => `        ${r}`),
    '        ct state vmap { established : accept, related : accept, invalid : drop }',
    '        iif lo accept',
    '        ip saddr 127.0.0.0/8 drop',
    '        ip6 saddr ::1 drop',
    '        iifname eth1 goto amphora_vip_chain',
    '    }',
    '    chain amphora_vip_chain {',
    ...lines.map((l) => `        ${l}`),
    '    }',
    '}',
    '',
  ].join('\n');
}

export class NftablesError extends AgentError {
  readonly kind = 'command_failed';
}

/** The VIP firewall's ruleset file. */
export const vipFirewallFile = (basePath: string) => join(basePath, 'nftables-vip.rules');

/**
 * Bringing up an SR-IOV interface (Octavia's amphora-interface): the VIP
 * firewall file, created with the base ruleset when missing, is loaded.
 */
export async function loadVipFirewall(basePath: string, netns: string): Promise<void> {
  const path = vipFirewallFile(basePath);
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
  if (await exists(vipFirewallFile(basePath))) {
    if (rules.length === 0) return;
    await writeFileAtomic(vipFirewallFile(basePath), vipRuleset(rules), 0o600);
  }
  await loadVipFirewall(basePath, netns);
}

/** The protocols a VIP rule may name (Octavia's amphora driver sends these). */
const VIP_PROTOCOLS: readonly string[] = ['SCTP', 'TCP', 'UDP', 'vrrp'];

/**
 * An IPv4 or IPv6 network as nft reads it: an address, '/', a prefix in range
 * without leading zeros. A zone id ('%eth0', which node's isIP accepts) or any
 * other character is refused: the text goes into the ruleset as written.
 */
function isVipCidr(text: string): boolean {
  const m = /^([0-9A-Fa-f.:]+)\/(0|[1-9][0-9]{0,2})$/.exec(text);
  const family = m ? isIP(m[1]!) : 0;
  return family !== 0 && Number(m![2]) <= (family === 4 ? 32 : 128);
}

/** Why a PUT /interface/<ip>/rules body is not a list of VIP rules, else null: checked before anything is written. */
export function vipRulesRefusal(v: unknown): string | null {
  if (!Array.isArray(v)) return 'a list of rules is expected';
  for (const [i, r] of v.entries()) {
    if (typeof r !== 'object' || r === null || Array.isArray(r) || Object.keys(r).sort().join(',') !== 'cidr,port,protocol') {
      return `rule ${i}: exactly protocol, cidr and port are expected`;
    }
    const { protocol, cidr, port } = r as Record<string, unknown>;
    if (typeof protocol !== 'string' || !VIP_PROTOCOLS.includes(protocol)) return `rule ${i}: protocol must be one of ${VIP_PROTOCOLS.join(', ')}`;
    if (cidr !== null && (typeof cidr !== 'string' || !isVipCidr(cidr))) return `rule ${i}: cidr must be null or an IPv4 or IPv6 network`;
    if (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535) return `rule ${i}: port must be an integer from 1 to 65535`;
  }
  return null;
}
