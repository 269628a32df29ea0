// The IPVS settings Octavia's image (16 and later) gives the amphora
// namespace in amphora-netns.service: connection tracking for LVS, and
// connections to a removed real server (or its persistence template) expired
// at once, so UDP/SCTP clients move to the remaining members instead of
// sending into a void. The agent applies them itself too, because the
// namespace may come from the agent (no amphora-netns.service: containers,
// tests) and ip_vs may be loaded only when keepalived starts the first LVS
// listener, after the unit ran. They exist only where the kernel has IPVS
// (/proc/sys/net/ipv4/vs in the namespace): absent ones are skipped.
import type { Logger } from '../log.js';
import { run } from '../system/exec.js';
import { AgentError } from '../errors.js';

export const IPVS_SYSCTLS: Record<string, string> = {
  'net.ipv4.vs.conntrack': '1',
  'net.ipv4.vs.expire_nodest_conn': '1',
  'net.ipv4.vs.expire_quiescent_template': '1',
};

export interface SysctlOutcome {
  set: string[];
  /** Not in this kernel (no IPVS): left alone. */
  absent: string[];
}

export class SysctlError extends AgentError {
  readonly kind = 'command_failed';
}

/**
 * Write each setting that exists in the namespace; report the ones that do
 * not. /proc/sys/net shows the namespace of the process reading it, so the
 * check runs inside the namespace.
 */
export async function applyNamespaceSysctls(netns: string, settings: Record<string, string>): Promise<SysctlOutcome> {
  const out: SysctlOutcome = { set: [], absent: [] };
  for (const key of Object.keys(settings)) {
    const present = (await run(['test', '-e', `/proc/sys/${key.replaceAll('.', '/')}`], { netns })).exitCode === 0;
    (present ? out.set : out.absent).push(key);
  }
  if (out.set.length > 0) {
    const res = await run(['sysctl', '-q', '-w', ...out.set.map((k) => `${k}=${settings[k]}`)], { netns });
    if (res.exitCode !== 0) throw new SysctlError(`sysctl: ${res.output.trim()}`);
  }
  return out;
}

// Said once per agent process, not at every plug and LVS start.
let absenceLogged = false;

/** The IPVS settings in the amphora namespace, best effort: a failure is logged, never the caller's error. */
export async function applyIpvsSysctls(netns: string, log: Logger): Promise<void> {
  try {
    const { set, absent } = await applyNamespaceSysctls(netns, IPVS_SYSCTLS);
    if (set.length > 0) log.debug({ netns, set }, 'IPVS settings applied in the namespace');
    if (absent.length > 0 && !absenceLogged) {
      absenceLogged = true;
      log.info({ netns, absent }, 'the kernel has no IPVS in the namespace (yet): these settings are left unset');
    }
  } catch (err) {
    log.warn({ netns, err: (err as Error).message }, 'IPVS settings could not be applied in the namespace');
  }
}
