// What applying a config to a load balancer's haproxy will do, decided once
// and kept as a value: nothing, runtime commands, or a (re)load and why. An
// API 2.0 dry run returns it as it is and the engine's pipeline executes it,
// so the two cannot disagree. Pure: the engine gathers the facts.
import type { ApplyPlan } from '../../outcome.js';
import { memberKey } from '../../model/names.js';
import { planRuntime, type RuntimeStep } from './runtime-plan.js';

export type Plan =
  | { kind: Extract<ApplyPlan, 'unchanged'> }
  | { kind: Extract<ApplyPlan, 'runtime'>; steps: RuntimeStep[] }
  | { kind: Extract<ApplyPlan, 'reload'>; reason: string };

export interface PlanFacts {
  /**
   * `apply`: make a config run (engine.apply; API 2.0). `runAccepted`: run
   * the accepted config again (API 1.0's reload), which always does
   * something, as in Octavia. Its removed members are retired rather than
   * reloaded away: a reload would let their sessions finish on the old
   * worker, and retiring keeps that promise, while a reload would also
   * restart every member still being admitted from zero passed checks
   * (haproxy loads a stopped server's check health as 0), so under
   * frequent updates a new member might never come in.
   */
  verb: 'apply' | 'runAccepted';
  /** A reload the caller knows is needed before members are compared (certificates changed, runtime changes off). */
  forcedReload: string | null;
  /** What haproxy loaded last (the live config), null when it never loaded this load balancer. */
  live: string | null;
  /** The new config as this haproxy binary loads it (runnable.ts). */
  runnable: string;
  /** The new config is the accepted one already. */
  accepted: boolean;
  /** haproxy runs; asked only when the config is the accepted one (null otherwise). */
  running: boolean | null;
}

export const reloadPlan = (reason: string): Plan => ({ kind: 'reload', reason });

export function planApply(f: PlanFacts): Plan {
  if (f.forcedReload !== null) return reloadPlan(f.forcedReload);
  if (f.live === null) return reloadPlan('haproxy has not loaded this load balancer');
  const { steps, reloadReason } = planRuntime(f.live, f.runnable);
  if (reloadReason !== null) return reloadPlan(reloadReason);
  if (f.verb === 'runAccepted') {
    if (steps.length === 0) return reloadPlan('nothing changed that the runtime API could apply');
    return { kind: 'runtime', steps: steps.map((s) => (s.kind === 'remove' ? { ...s, kind: 'retire' } : s)) };
  }
  if (steps.length === 0 && f.accepted) return f.running ? { kind: 'unchanged' } : reloadPlan('haproxy is not running');
  return { kind: 'runtime', steps };
}

/** A runtime step as reports name it: "add backend/server". */
export const stepName = (s: RuntimeStep): string => `${s.kind} ${memberKey(s.backend, s.server)}`;

/** A member's server line in one backend before and after a member call (null: none). */
export interface MemberLines {
  backend: string;
  before: string | null;
  after: string | null;
}

/**
 * The plan of a member call made on the config haproxy runs: its lines alone
 * decide it, as planRuntime would decide on the whole config (nothing else
 * differs), so the cost does not grow with the load balancer.
 */
export function planMemberLines(lines: MemberLines[]): Plan {
  const sections = (pick: (l: MemberLines) => string | null) =>
    `${lines.map((l) => [`backend ${l.backend}`, pick(l)].filter((x) => x !== null).join('\n')).join('\n')}\n`;
  const { steps, reloadReason } = planRuntime(
    sections((l) => l.before),
    sections((l) => l.after),
  );
  if (reloadReason !== null) return reloadPlan(reloadReason);
  return steps.length === 0 ? { kind: 'unchanged' } : { kind: 'runtime', steps };
}
