// haproxy's failures: its verdict on a config, a start/reload/stop that did
// not happen, and a load balancer it does not know. The APIs map them in
// api/v1/errors.ts and api/v2/errors.ts.
import { AgentError } from '../errors.js';

/** haproxy -c rejected the configuration; `output` is haproxy's own message. */
export class InvalidConfigError extends AgentError {
  readonly kind = 'config_rejected';

  constructor(readonly output: string) {
    super(`haproxy rejected the configuration:\n${output}`);
  }
}

/**
 * haproxy failed to start, reload or stop (`action`). After a failed reload
 * the previous config keeps serving; after a failed start nothing serves.
 */
export class HaproxyFailedError extends AgentError {
  readonly kind = 'haproxy_failed';
  readonly output: string;

  constructor(
    readonly action: string,
    output: string,
  ) {
    const summary = essentialOutput(output);
    super(`haproxy ${action} failed: ${summary}`);
    this.output = summary;
  }
}

const MAX_OUTPUT = 8000;

/**
 * haproxy's own verdict without the noise: its ALERT lines when there are any
 * (a start with thousands of servers also prints one WARNING per server), else
 * the tail of what it printed.
 */
function essentialOutput(output: string): string {
  const lines = output.trim().split('\n');
  const alerts = lines.filter((l) => l.includes('[ALERT]'));
  const kept = (alerts.length > 0 ? alerts : lines.slice(-20)).join('\n');
  return kept.length > MAX_OUTPUT ? `${kept.slice(0, MAX_OUTPUT)}...` : kept;
}

export class LoadBalancerNotFoundError extends AgentError {
  readonly kind = 'not_found';

  constructor(readonly lbId: string) {
    super(`no load balancer ${lbId}`);
  }
}
