// Direct supervision's answer to systemd's Restart=always: every load
// balancer whose haproxy died although it was not stopped on purpose is
// started again, the first time at once, then with growing delays while it
// keeps dying (restart-backoff.ts). Under systemd the units do this themselves,
// within their start limit. A stopped (SIGSTOP) haproxy is alive: it is not
// restarted, which would start a second one beside it.
import type { Logger } from '../../log.js';
import type { HaproxyEngine } from '../apply/engine.js';

/** Counts restart attempts (loadbalancer/metrics.ts). */
export type RestartCounter = (lbId: string, outcome: 'started' | 'failed') => void;

const seconds = (ms: number) => Math.round(ms / 1000);

/**
 * One pass over the load balancers; returns those it started again. Logs one
 * line per decision (dead, restarted, waiting, failed, back to normal), not
 * one per pass. How each restart ended the engine tells its subscriber (in
 * ACTIVE_STANDBY a haproxy that cannot be started gives up the VIP through
 * keepalived's track file, keepalived/haproxy-track.ts).
 */
export async function restartDead(engine: HaproxyEngine, log: Logger, count?: RestartCounter): Promise<string[]> {
  const restarted: string[] = [];
  for (const lbId of await engine.loadBalancerIds()) {
    const backoff = engine.restartBackoff(lbId);
    try {
      const found = await engine.restartIfDead(lbId, () => {
        const now = Date.now();
        const v = backoff.dead(now);
        if (v.newlyDead && !v.restart) {
          log.warn(
            { lbId, restartsInARow: v.restartsInARow, nextRestartInS: seconds(v.nextAttemptAt - now) },
            `haproxy died again within ${seconds(backoff.policy.stableAfterMs)} s of its restart; next restart in ${seconds(v.nextAttemptAt - now)} s`,
          );
        }
        return v.restart;
      });
      if (found === 'running' || found === 'stopped') {
        if (backoff.fine(Date.now()) && found === 'running') log.info({ lbId }, 'haproxy runs; its restart delays are reset');
        continue;
      }
      if (found === 'waiting') continue;
      backoff.started(Date.now());
      count?.(lbId, 'started');
      restarted.push(lbId);
    } catch (err) {
      const now = Date.now();
      const next = backoff.failed(now, (err as Error).message);
      count?.(lbId, 'failed');
      log.error(
        { lbId, err: (err as Error).message, nextRestartInS: seconds(next - now) },
        `restarting haproxy failed; next attempt in ${seconds(next - now)} s`,
      );
    }
  }
  return restarted;
}
