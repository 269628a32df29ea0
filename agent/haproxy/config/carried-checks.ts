// Passed checks a reload would throw away. haproxy loads a server that is
// down from the server-state file with a check health of 0 (server.c: a
// stopped server's saved health is not applied), so a member part-way
// through its admission, 1 of `rise` 2 checks passed say, would start again
// from zero in the new worker; under a control plane that reloads faster
// than `rise` checks pass, a new member would never come in (issue 32). The
// agent carries the count over instead: such a member needs only the rest of
// its checks in the new worker, and the agent makes it UP once they passed
// (pending.ts). Pure: haproxy's state dump and the config about to load in,
// the members to watch out.
//
// The count is only as good as the agent's watch: haproxy's health counter
// says how many checks passed since the last failure in this worker, and a
// failure the agent did not see would let old passes count across it. So a
// carried count holds while the agent looks at least once between two
// checks (`everyMs`), and is dropped at the first failed check it sees.
import type { PendingMember } from '../process/runtime-api.js';
import type { ConfigInfo, ServerLine } from './config-reader.js';
import { memberKey } from '../../model/names.js';
import { parseServerState, sameEndpoint } from './server-state.js';

/** haproxy's srv_op_state of a server that is down. */
const STOPPED = 0;
/** srv_check_result of a failed check. */
export const CHECK_FAILED = 2;

/**
 * The members of `config` whose passed checks in the running worker (and,
 * for members carried before, in earlier ones) would be lost by loading it.
 * `watched`: the pending members now; `lookedAgoMs`: the time since the
 * agent last looked at their checks.
 */
export function carriedChecks(state: string, config: ConfigInfo, watched: PendingMember[], lookedAgoMs: number): PendingMember[] {
  const before = new Map<string, PendingMember>();
  for (const p of watched) if (p.carried) before.set(memberKey(p.backend, p.server), p);
  let servers: Map<string, ServerLine> | null = null;
  const carried: PendingMember[] = [];
  for (const e of parseServerState(state).entries) {
    if (e.opState !== STOPPED || e.checkResult === CHECK_FAILED) continue;
    const prior = before.get(memberKey(e.backend, e.server))?.carried;
    const passed = e.checkHealth + (prior && lookedAgoMs < prior.everyMs ? prior.checks : 0);
    if (!(passed > 0)) continue;
    servers ??= byMemberKey(config);
    const srv = servers.get(memberKey(e.backend, e.server));
    // A member that moved is a new one. A rise or interval that is not a
    // number (the word read as `rise` was another keyword's value) carries nothing.
    if (!srv || !sameEndpoint(e, srv.address) || !srv.checked || !(srv.rise >= 2) || Number.isNaN(srv.checkEveryMs)) continue;
    carried.push({ backend: e.backend, server: e.server, rise: Math.max(1, srv.rise - passed), carried: { checks: passed, everyMs: srv.checkEveryMs } });
  }
  return carried;
}

function byMemberKey(config: ConfigInfo): Map<string, ServerLine> {
  const servers = new Map<string, ServerLine>();
  for (const b of config.backends.values()) for (const s of b.servers) servers.set(memberKey(s.backend, s.name), s);
  return servers;
}
