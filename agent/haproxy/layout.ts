// Where a load balancer's files live, relative to the agent's base directory:
// its directory and the engine's files in it. A layer above the engine names
// its own files in that directory (API 2.0's spec: loadbalancer/spec-store.ts);
// the paths the renderer writes into configs too (the stats socket, the
// certificates) are in config/layout.ts.
// Names follow Octavia's amphora agent so operators find what they expect.
import { join } from 'node:path';
import { loadBalancerDir } from '../config/layout.js';

export interface LoadBalancerFiles {
  dir: string;
  /** The accepted configuration (what the control plane sent, validated). */
  config: string;
  /** A configuration being validated. */
  candidate: string;
  /** A candidate as haproxy would load it, when that differs from the text sent (legacy-httpchk.ts). */
  candidateLive: string;
  /** The last configuration haproxy -c rejected, kept for operators. */
  rejected: string;
  /** What haproxy loads: the accepted config in this haproxy's syntax, plus new-member protection. */
  live: string;
  /** The live config from before a reload in flight; present only during one. */
  livePrevious: string;
  /** Master pid (haproxy -p). */
  pidFile: string;
  /** Master CLI (haproxy -S). */
  masterSocket: string;
  /** Output of the haproxy launcher (startup errors). */
  launchLog: string;
  /** Record of the last verified (re)load: worker pid and live config hash. */
  applied: string;
  /** Agent-side settings of this load balancer (peer name). */
  meta: string;
  /** Present while haproxy is stopped on purpose (API stop): the watchdog leaves it down. */
  stopped: string;
  /** Members added or re-enabled at runtime that wait in maintenance for their first passing check. */
  pendingReady: string;
  /** Members an API 1.0 reload removed at runtime, in maintenance until haproxy lets them be deleted. */
  retired: string;
  /** Present while a member call's config is not yet written (deferred-config.ts). */
  configBehind: string;
}

export function loadBalancerFiles(baseDir: string, lbId: string): LoadBalancerFiles {
  const dir = loadBalancerDir(baseDir, lbId);
  return {
    dir,
    config: join(dir, 'haproxy.cfg'),
    candidate: join(dir, 'haproxy.cfg.new'),
    candidateLive: join(dir, 'haproxy.live.cfg.new'),
    rejected: join(dir, 'haproxy.cfg.new-failed'),
    live: join(dir, 'haproxy.live.cfg'),
    livePrevious: join(dir, 'haproxy.live.cfg.prev'),
    pidFile: join(dir, `${lbId}.pid`),
    masterSocket: join(dir, 'master.sock'),
    launchLog: join(dir, 'haproxy.launch.log'),
    applied: join(dir, 'applied.json'),
    meta: join(dir, 'agent.json'),
    stopped: join(dir, 'stopped'),
    pendingReady: join(dir, 'pending-ready.json'),
    retired: join(dir, 'retired.json'),
    configBehind: join(dir, 'config.behind'),
  };
}
