// A background job run every `intervalMs`, counted from the end of the
// previous run: a run that takes longer than the interval (a haproxy that
// answers only at its socket timeout) delays the next one instead of piling
// runs up behind the load balancer locks.

/** Starts the loop; the timers do not keep the process alive. */
export function repeatAfter(intervalMs: number, job: () => Promise<unknown>): void {
  const next = () =>
    setTimeout(
      () =>
        void job()
          .catch(() => undefined)
          .finally(next),
      intervalMs,
    ).unref();
  next();
}
