// Direct supervision's answer to systemd's Restart=always: every load
// balancer whose haproxy died although it was not stopped on purpose is
// started again. Under systemd the units do this themselves.
import type { Logger } from '../log.js';
import type { HaproxyEngine } from './engine.js';

/** One pass over the load balancers; returns those it started again. */
export async function restartDead(engine: HaproxyEngine, log: Logger): Promise<string[]> {
  const restarted: string[] = [];
  for (const lbId of await engine.loadBalancerIds()) {
    await engine.restartIfDead(lbId)
      .then((started) => started && restarted.push(lbId))
      .catch((err: Error) => log.error({ lbId, err: err.message }, 'restarting haproxy failed'));
  }
  return restarted;
}
