// The names the agent keeps beside the load balancers' directories, which no
// id may take: a load balancer called `certs` read another's key, and
// DELETE /1.0/listeners/certs removed every load balancer's certificates
// (issue 26, class 5); `vrrp` and `lvs` collide the same way. The list comes
// from the layout functions themselves: the first component, under base_path
// or base_cert_dir, of every path the agent keeps there. Pure.
import { isAbsolute, relative, sep } from 'node:path';
import type { AgentConfig } from '../config/agent-config.js';
import { lvsInstance, vrrpInstance } from '../keepalived/service.js';
import { vipFirewallFile } from '../net/nftables.js';
import { isObjectId } from './params.js';

/** Names directly under base_path or base_cert_dir that are the agent's own. */
export function reservedIds(config: AgentConfig): Set<string> {
  const { basePath, baseCertDir } = config.haproxyAmphora;
  const kept = [
    vrrpInstance(basePath).config,
    lvsInstance(basePath, 'any').config,
    vipFirewallFile(basePath),
    config.amphoraAgent.userGroupFile,
    baseCertDir,
    basePath,
  ];
  const names = new Set<string>();
  for (const base of [basePath, baseCertDir]) {
    for (const path of kept) {
      const rel = relative(base, path);
      if (rel !== '' && !rel.startsWith('..') && !isAbsolute(rel)) names.add(rel.split(sep)[0]!);
    }
  }
  return names;
}

/** Why `id` cannot be a load balancer, listener or amphora id, else null. */
export function idRefusal(config: AgentConfig, id: string): string | null {
  if (!isObjectId(id)) return 'an id is a lowercase UUID or slug (letters, digits and "-")';
  if (reservedIds(config).has(id)) return 'the agent keeps a directory or file of its own under that name';
  return null;
}
