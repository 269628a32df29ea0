// One error class per failure a caller must tell apart. Each API maps them to
// its error shapes: API 1.0 in its route handlers (api/v1/router.ts), API 2.0
// in api/v2/router.ts.

/** haproxy -c rejected the configuration; `output` is haproxy's own message. */
export class InvalidConfigError extends Error {
  constructor(readonly output: string) {
    super(`haproxy rejected the configuration:\n${output}`);
  }
}

/** haproxy failed to start, reload or stop; the previous config keeps serving. */
export class HaproxyFailedError extends Error {
  readonly output: string;

  constructor(readonly action: string, output: string) {
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

export class LoadBalancerNotFoundError extends Error {
  constructor(readonly lbId: string) {
    super(`no load balancer ${lbId}`);
  }
}
