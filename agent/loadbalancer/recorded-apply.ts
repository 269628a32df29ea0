// What both APIs do around an apply of haproxy: time it and count its
// outcome (or its failure) in the metrics. One helper, so a 1.0 reload and a
// 2.0 PUT are counted by the same rule. (What follows the change itself, the
// engine tells announce.ts.)
import { AgentError } from '../errors.js';
import { secondsSince, type ApplyApi, type ApplyMetrics } from './metrics.js';
import type { ApplyOutcome } from '../outcome.js';

export interface RecordedApplyDeps {
  metrics: ApplyMetrics;
}

export interface Applied {
  outcome: ApplyOutcome;
}

/** A load balancer that is not there was not applied, so it is no failed apply. */
const isFailedApply = (err: unknown) => !(err instanceof AgentError && err.kind === 'not_found');

/**
 * Run `apply` and record it. `started` is when the apply began
 * from the caller's view (API 2.0 counts its render too).
 */
export async function recordedApply<T extends Applied>(
  deps: RecordedApplyDeps,
  api: ApplyApi,
  apply: () => Promise<T>,
  started = process.hrtime.bigint(),
): Promise<T> {
  let out: T;
  try {
    out = await apply();
  } catch (err) {
    if (isFailedApply(err)) deps.metrics.record(api, 'failed', secondsSince(started));
    throw err;
  }
  deps.metrics.record(api, out.outcome, secondsSince(started));
  return out;
}
