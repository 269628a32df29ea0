// What Octavia's lvs-masquerade helper sets up for each tenant interface,
// done by the agent in one nftables transaction per interface instead of a
// shell script named in the interface file:
// - UDP and SCTP leaving the interface are masqueraded, so LVS (UDP/SCTP
//   listeners) members answer through the amphora;
// - TCP on the interface skips connection tracking: haproxy terminates it, and
//   a busy load balancer would otherwise fill nf_conntrack and drop new
//   connections. Not with SR-IOV, whose VIP firewall matches on conntrack state.
// Each interface has its own tables, replaced whole, so bringing an interface
// up again leaves exactly one set of rules (the shell helper appended another).
import { run } from '../system/exec.js';
import { AgentError } from '../errors.js';

const tableName = (ifname: string) => `amphora-lvs-${ifname}`;
const nftFamily = (family: 4 | 6) => (family === 4 ? 'ip' : 'ip6');

/** Declaring a table before deleting it makes the delete succeed whether or not it existed. */
function dropTable(family: 4 | 6, ifname: string): string[] {
  const table = `${nftFamily(family)} ${tableName(ifname)}`;
  return [`table ${table} {}`, `delete table ${table}`];
}

export function masqueradeRuleset(ifname: string, families: (4 | 6)[], sriov: boolean): string {
  const dev = JSON.stringify(ifname);
  const lines: string[] = [];
  for (const family of [4, 6] as const) {
    lines.push(...dropTable(family, ifname));
    if (!families.includes(family)) continue;
    lines.push(
      `table ${nftFamily(family)} ${tableName(ifname)} {`,
      '    chain lvs-masquerade {',
      '        type nat hook postrouting priority 100;',
      `        oifname ${dev} meta l4proto { udp, sctp } masquerade`,
      '    }',
    );
    if (!sriov) {
      lines.push(
        '    chain tcp-notrack-in {',
        '        type filter hook prerouting priority -300;',
        `        iifname ${dev} meta l4proto tcp notrack`,
        '    }',
        '    chain tcp-notrack-out {',
        '        type filter hook output priority -300;',
        `        oifname ${dev} meta l4proto tcp notrack`,
        '    }',
      );
    }
    lines.push('}');
  }
  return `${lines.join('\n')}\n`;
}

export class MasqueradeError extends AgentError {
  readonly kind = 'command_failed';
}

async function load(netns: string, ruleset: string): Promise<void> {
  const res = await run(['nft', '-f', '-'], { netns, input: ruleset });
  if (res.exitCode !== 0) throw new MasqueradeError(`nft: ${res.output.trim()}`);
}

export function applyMasquerade(netns: string, ifname: string, families: (4 | 6)[], sriov: boolean): Promise<void> {
  return load(netns, masqueradeRuleset(ifname, families, sriov));
}

export function removeMasquerade(netns: string, ifname: string): Promise<void> {
  return load(netns, masqueradeRuleset(ifname, [], false));
}
