// The words for applies, said once: both APIs' responses, the metrics
// labels and the OpenAPI document use these, and the member key of the
// reports' step and pending lists.
//  - a plan says what an apply will do (a dry run returns it);
//  - an outcome says what it did (a reload plan ends as "started" when
//    haproxy was not running, as "reloaded" when it was).

export const APPLY_PLANS = ['unchanged', 'runtime', 'reload'] as const;
export type ApplyPlan = (typeof APPLY_PLANS)[number];

export const APPLY_OUTCOMES = ['started', 'reloaded', 'runtime', 'unchanged'] as const;
export type ApplyOutcome = (typeof APPLY_OUTCOMES)[number];

/** API 2.0's `result`: an outcome, or that nothing was applied because it was a dry run. */
export const PUT_RESULTS = [...APPLY_OUTCOMES, 'dry_run'] as const;
export type PutResultWord = (typeof PUT_RESULTS)[number];

/** The metrics' `outcome` label: an outcome, or an apply that failed. */
export type RecordedOutcome = ApplyOutcome | 'failed';

/** Outcomes after which haproxy runs a config it did not run before. */
export const isReload = (o: ApplyOutcome): o is 'started' | 'reloaded' => o === 'started' || o === 'reloaded';
