// The facts plan.ts decides on, gathered for one load balancer: the live
// config, whether the accepted one is the new text, whether haproxy runs,
// and whether certificates changed since the last load.
import { modifiedAt, newestModification, readTextIfExists } from '../../system/files.js';
import type { LoadBalancerState } from './load-balancer-state.js';
import { planApply, type Plan, type PlanFacts } from './plan.js';

/** A plan, and the live config it was made from: a load made under the same lock need not read it again (700 kB at 10,000 members). */
export interface Planned {
  plan: Plan;
  live: string | null;
}

export interface PlannerDeps {
  running: (state: LoadBalancerState) => Promise<boolean>;
  /** API 1.0 reloads may go through the runtime API (default true); needs certDir. */
  runtimeMemberChanges?: boolean;
  certDir?: (lbId: string) => string;
}

export class Planner {
  constructor(private readonly deps: PlannerDeps) {}

  /** Make `text` run (engine.apply). */
  apply(state: LoadBalancerState, text: string, runnable: string, forcedReload: string | null): Promise<Planned> {
    return this.plan(state, 'apply', text, runnable, forcedReload);
  }

  /** Run the accepted `text` again (engine.runAccepted). */
  async runAccepted(state: LoadBalancerState, text: string, runnable: string): Promise<Planned> {
    return this.plan(state, 'runAccepted', text, runnable, await this.reloadFirst(state));
  }

  /** Whether haproxy runs costs a master CLI round trip: asked only when it can matter. */
  private async plan(state: LoadBalancerState, verb: PlanFacts['verb'], text: string, runnable: string, forcedReload: string | null): Promise<Planned> {
    const accepted = (await state.acceptedConfig()) === text;
    const running = accepted && verb === 'apply' ? await this.deps.running(state) : null;
    const live = await readTextIfExists(state.files.live);
    return { plan: planApply({ verb, forcedReload, live, runnable, accepted, running }), live };
  }

  /** Reasons running the accepted config cannot go through the runtime API, whatever changed. */
  private async reloadFirst(state: LoadBalancerState): Promise<string | null> {
    if (this.deps.runtimeMemberChanges === false || !this.deps.certDir) return 'runtime member changes are off';
    const loadedAt = await modifiedAt(state.files.applied);
    const certsAt = await newestModification(this.deps.certDir(state.lbId));
    return loadedAt === null || (certsAt !== null && certsAt >= loadedAt) ? 'certificates changed since the last load' : null;
  }
}
