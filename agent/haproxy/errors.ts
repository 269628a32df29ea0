// One error class per failure a caller must tell apart. The API maps these to
// Octavia's error shapes in one place.

/** haproxy -c rejected the configuration; `output` is haproxy's own message. */
export class InvalidConfigError extends Error {
  constructor(readonly output: string) {
    super(`haproxy rejected the configuration:\n${output}`);
  }
}

/** haproxy failed to start, reload or stop; the previous config keeps serving. */
export class HaproxyFailedError extends Error {
  constructor(readonly action: string, readonly output: string) {
    super(`haproxy ${action} failed: ${output}`);
  }
}

export class LoadBalancerNotFoundError extends Error {
  constructor(readonly lbId: string) {
    super(`no load balancer ${lbId}`);
  }
}
