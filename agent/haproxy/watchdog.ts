// Direct supervision's answer to systemd's Restart=always: every load
// balancer whose haproxy died although it was not stopped on purpose is
// started again. Under systemd the units do this themselves.
import type { Logger } from '../log.js';
import type { HaproxyEngine } from './engine.js';

/**
 * Told how each restart ended: `true` once a dead haproxy runs again, `false`
 * when it could not be started (in ACTIVE_STANDBY the agent then gives up the
 * VIP through keepalived's track file, keepalived/haproxy-track.ts).
 */
export type RestartOutcome = (lbId: string, running: boolean) => Promise<void>;

/** One pass over the load balancers; returns those it started again. */
export async function restartDead(engine: HaproxyEngine, log: Logger, outcome?: RestartOutcome): Promise<string[]> {
  const restarted: string[] = [];
  for (const lbId of await engine.loadBalancerIds()) {
    let running: boolean;
    try {
      if (!(await engine.restartIfDead(lbId))) continue;
      restarted.push(lbId);
      running = true;
    } catch (err) {
      log.error({ lbId, err: (err as Error).message }, 'restarting haproxy failed');
      running = false;
    }
    await outcome?.(lbId, running).catch((err: Error) => log.warn({ lbId, err: err.message }, 'cannot record haproxy\'s state for keepalived'));
  }
  return restarted;
}
