// New-member protection, the rule this project exists for: a member haproxy is
// not running yet gets no traffic before it passes its health check; a member
// already running keeps its state across the reload. Pure: it decides, given
// the config about to be loaded and what haproxy runs now, and returns the
// config and server-state file to write.
import type { ConfigInfo, ServerLine } from './config-reader.js';
import {
  formatServerState, splitServerAddress, stoppedServerLine,
  type ServerStateDump, type ServerStateEntry,
} from './server-state.js';

export type ProtectionMethod = 'init-state' | 'state-file';

export interface ProtectionInput {
  configText: string;
  config: ConfigInfo;
  /** What haproxy runs now; null when it is not running (a fresh start). */
  running: ServerStateDump | null;
  /** How new members are held down, or null to switch protection off. */
  method: ProtectionMethod | null;
}

export interface ProtectionPlan {
  /** Checked members new to their backend: they start fully down. */
  newMembers: ServerLine[];
  /** The configuration haproxy should load. */
  effectiveConfig: string;
  /** The server-state file to write before the (re)load. */
  stateFile: string;
  /** New members that could not be protected, and why. */
  warnings: string[];
}

const key = (backend: string, server: string) => `${backend}\u0000${server}`;

export function planProtection(input: ProtectionInput): ProtectionPlan {
  const runningByKey = new Map<string, ServerStateEntry>();
  for (const e of input.running?.entries ?? []) runningByKey.set(key(e.backend, e.server), e);

  const newMembers: ServerLine[] = [];
  const replaced = new Set<string>();
  for (const backend of input.config.backends.values()) {
    for (const srv of backend.servers) {
      // Never hold down a member without checks: nothing would ever bring it up.
      if (!srv.checked || srv.hasInitState) continue;
      const was = runningByKey.get(key(srv.backend, srv.name));
      if (was && sameEndpoint(was, srv.address)) continue;
      if (was) replaced.add(key(srv.backend, srv.name));
      newMembers.push(srv);
    }
  }

  // Running members keep their saved state; a member whose address changed is
  // a new endpoint, so its old line must not restore an UP state over it.
  const kept = (input.running?.entries ?? [])
    .filter((e) => !replaced.has(key(e.backend, e.server)))
    .map((e) => e.raw);
  const header = input.running?.header ?? [];

  if (input.method === null || newMembers.length === 0) {
    return { newMembers: input.method === null ? [] : newMembers, effectiveConfig: input.configText, stateFile: formatServerState(header, kept), warnings: [] };
  }

  if (input.method === 'init-state') {
    return {
      newMembers,
      effectiveConfig: withInitState(input.configText, newMembers),
      stateFile: formatServerState(header, kept),
      warnings: [],
    };
  }

  const warnings: string[] = [];
  const seeds: string[] = [];
  for (const srv of newMembers) {
    const backend = input.config.backends.get(srv.backend)!;
    if (!input.config.serverStateFile || backend.loadServerState !== 'global') {
      warnings.push(
        `member ${srv.backend}/${srv.name} cannot start down: this haproxy lacks a working init-state and ` +
        `the backend does not load the global server-state file`);
      continue;
    }
    const { host, port } = splitServerAddress(srv.address);
    seeds.push(stoppedServerLine(srv.backend, srv.name, host, port));
  }
  return { newMembers, effectiveConfig: input.configText, stateFile: formatServerState(header, [...kept, ...seeds]), warnings };
}

function sameEndpoint(entry: ServerStateEntry, address: string): boolean {
  const { host, port } = splitServerAddress(address);
  return entry.address === host && (port === '' || entry.port === port);
}

/** Append `init-state fully-down` to the given server lines, before any trailing comment. */
function withInitState(text: string, servers: ServerLine[]): string {
  const lines = text.split('\n');
  for (const srv of servers) {
    const line = lines[srv.line]!;
    lines[srv.line] = `${line.slice(0, srv.codeEnd)} init-state fully-down${line.slice(srv.codeEnd)}`;
  }
  return lines.join('\n');
}
