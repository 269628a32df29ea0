// New-member protection on the load path: which members haproxy is not
// running yet (they are admitted as admission.ts decides), and the config and
// server-state file that hold them down; members already running keep their
// state across the reload. Pure: the config about to be loaded and what
// haproxy runs now in, the files to write out.
import { admit, HOLD_DOWN, type AdmissionMethod } from '../../model/admission.js';
import type { ConfigInfo, ServerLine } from './config-reader.js';
import { SECTION_KEYWORDS } from './tokenizer.js';
import { memberKey } from '../../model/names.js';
import {
  formatServerState,
  parseServerState,
  sameEndpoint,
  splitServerAddress,
  stateLineCount,
  stoppedServerLine,
  type ServerStateDump,
  type ServerStateEntry,
} from './server-state.js';
import { changedRegion } from './changed-region.js';

/** What haproxy runs now. */
export interface RunningHaproxy {
  /** Its `show servers state` dump right before the load (the last state file when the dump failed). */
  state: string;
  /** The config it runs (the live config); null when not known. */
  config: string | null;
  /** Members it runs that are admitted again as new ("backend/server"): runtime additions still waiting for a first check. */
  readmit: ReadonlySet<string>;
}

export interface ProtectionInput {
  configText: string;
  config: ConfigInfo;
  /** null when haproxy is not running (a fresh start). */
  running: RunningHaproxy | null;
  /** The haproxy binary applies `init-state fully-down` at start-up (probed). */
  initStateAtStartup: boolean;
  /** False switches protection off (only to prove that tests can fail); default true. */
  protect?: boolean;
}

export interface ProtectionPlan {
  /** Checked members new to their backend: they start fully down. */
  newMembers: ServerLine[];
  /** The configuration haproxy should load. */
  effectiveConfig: string;
  /** The server-state file to write before the (re)load. */
  stateFile: string;
  /** How the new members are held down (null when there are none). */
  method: AdmissionMethod | null;
  /** New members that could not be protected, and why. */
  warnings: string[];
}

export function planProtection(input: ProtectionInput): ProtectionPlan {
  if (input.running && sameMembers(input.running, input.configText, input.config)) {
    return { newMembers: [], effectiveConfig: input.configText, stateFile: `${input.running.state.trimEnd()}\n`, method: null, warnings: [] };
  }
  const dump = runningDump(input.running);
  // By backend, then by server: no key string made per member (10,000 of them on a reload).
  const runningIn = new Map<string, Map<string, ServerStateEntry>>();
  for (const e of dump?.entries ?? []) {
    let servers = runningIn.get(e.backend);
    if (!servers) runningIn.set(e.backend, (servers = new Map()));
    servers.set(e.server, e);
  }

  const newMembers: ServerLine[] = [];
  const replaced = new Set<ServerStateEntry>();
  let method: AdmissionMethod | null = null;
  for (const backend of input.config.backends.values()) {
    const running = runningIn.get(backend.name);
    for (const srv of backend.servers) {
      const was = running?.get(srv.name);
      if (was && sameEndpoint(was, srv.address)) continue;
      const admission = admit({ checked: srv.checked, initStateOnLine: srv.initStateOnLine, path: 'load', initStateAtStartup: input.initStateAtStartup });
      // Unchecked members are admitted at once; a line with init-state holds
      // itself down where the binary applies it at start-up.
      if (admission.method === 'none' || (admission.method === 'init-state' && srv.initStateOnLine)) continue;
      if (was) replaced.add(was);
      newMembers.push(srv);
      method = admission.method;
    }
  }

  // Running members keep their saved state; a member whose address changed is
  // a new endpoint, so its old line must not restore an UP state over it.
  const kept: string[] = [];
  for (const e of dump?.entries ?? []) if (!replaced.has(e)) kept.push(e.raw);
  const header = dump?.header ?? [];

  if (input.protect === false || method === null) {
    return { newMembers: [], effectiveConfig: input.configText, stateFile: formatServerState(header, kept), method: null, warnings: [] };
  }

  if (method === 'init-state') {
    return {
      newMembers,
      effectiveConfig: withInitState(input.configText, newMembers),
      stateFile: formatServerState(header, kept),
      method,
      warnings: [],
    };
  }

  const warnings: string[] = [];
  const seeds: string[] = [];
  for (const srv of newMembers) {
    const backend = input.config.backends.get(srv.backend)!;
    if (!input.config.serverStateFile || backend.loadServerState !== 'global') {
      warnings.push(
        `member ${memberKey(srv.backend, srv.name)} cannot start down: this haproxy lacks a working init-state and ` +
          `the backend does not load the global server-state file`,
      );
      continue;
    }
    const { host, port } = splitServerAddress(srv.address);
    seeds.push(stoppedServerLine(srv.backend, srv.name, host, port));
  }
  return { newMembers, effectiveConfig: input.configText, stateFile: formatServerState(header, [...kept, ...seeds]), method, warnings };
}

/**
 * Configs whose server and section lines are the same keep the same members
 * (the live config is what haproxy runs: recovery.ts): every member runs,
 * and haproxy's dump is the state file as it is, with no parse and no
 * matching (at 10,000 members most of the protection's cost). Only the
 * changed lines are compared (changed-region.ts); the dump's server count
 * must agree with the config's too.
 */
function sameMembers(running: RunningHaproxy, configText: string, config: ConfigInfo): boolean {
  if (running.config === null || running.readmit.size > 0) return false;
  const { start, beforeEnd, afterEnd } = changedRegion(running.config, configText);
  if (membershipLines(running.config.slice(start, beforeEnd)) !== membershipLines(configText.slice(start, afterEnd))) return false;
  let servers = 0;
  for (const b of config.backends.values()) servers += b.servers.length;
  return stateLineCount(running.state) === servers;
}

/** Lines that say who the members are and where: any mentioning a server, and section lines. */
const MEMBERSHIP = new RegExp(`server|^\\s*(?:${[...SECTION_KEYWORDS].join('|')})(?:\\s|$)`);

function membershipLines(text: string): string {
  return text
    .split('\n')
    .filter((line) => MEMBERSHIP.test(line))
    .join('\n');
}

/** The running servers, less those admitted again. */
function runningDump(running: RunningHaproxy | null): ServerStateDump | null {
  if (!running) return null;
  const dump = parseServerState(running.state);
  if (running.readmit.size > 0) dump.entries = dump.entries.filter((e) => !running.readmit.has(memberKey(e.backend, e.server)));
  return dump;
}

/** Append `init-state fully-down` to the given server lines, before any trailing comment. */
function withInitState(text: string, servers: ServerLine[]): string {
  const lines = text.split('\n');
  for (const srv of servers) {
    const line = lines[srv.line]!;
    lines[srv.line] = `${line.slice(0, srv.codeEnd)} ${HOLD_DOWN.join(' ')}${line.slice(srv.codeEnd)}`;
  }
  return lines.join('\n');
}
