// How API 2.0 reports a spec or member call: what changed, how haproxy took
// it (runtime commands or a reload, and why), members still being admitted,
// the LVS listeners restarted, and for a dry run the plan. One wording for
// the applies and the dry runs, so the two cannot tell it apart.
import { stepName, type Plan } from '../haproxy/apply/plan.js';
import type { RuntimeStep } from '../haproxy/apply/runtime-plan.js';
import type { ApplyPlan, PutResultWord } from '../outcome.js';

export interface PutResult {
  result: PutResultWord;
  created: boolean;
  etag: string;
  changes: string[];
  /** For runtime changes: the haproxy commands' subjects; for reloads, why. */
  runtime: string[];
  reloadReason: string | null;
  /** Members still in maintenance until their first passing check. */
  pending: string[];
  /** UDP/SCTP listeners whose keepalived was restarted or removed. */
  lvs: string[];
  /** With dry_run: the rendered config and what applying it would do. */
  config?: string;
  plan?: ApplyPlan;
}

export interface PutOptions {
  ifMatch?: string;
  dryRun?: boolean;
}

/** A dry run's report of a plan: a keepalived restart makes it a reload. */
export function plannedReport(plan: Plan, lvs: string[]): Pick<PutResult, 'plan' | 'runtime' | 'reloadReason' | 'lvs'> {
  return {
    ...reportedSteps(plan.kind === 'runtime' ? { steps: plan.steps } : {}, plan.kind === 'reload' ? plan.reason : null, lvs),
    plan: lvs.length > 0 && plan.kind !== 'reload' ? 'reload' : plan.kind,
    lvs,
  };
}

/** The report's runtime steps and reload reason; a keepalived restart is a reason too. */
export function reportedSteps(r: { steps?: RuntimeStep[] }, reloadReason: string | null, lvs: string[]): { runtime: string[]; reloadReason: string | null } {
  return { runtime: (r.steps ?? []).map(stepName), reloadReason: reloadReason ?? (lvs.length > 0 ? 'UDP/SCTP listeners changed' : null) };
}
