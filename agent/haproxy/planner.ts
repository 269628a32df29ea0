// The facts plan.ts decides on, gathered for one load balancer: the live
// config, whether the accepted one is the new text, whether haproxy runs,
// whether certificates changed since the last load, and which accepted
// config haproxy runs as this process last applied it (a member edit on
// exactly that config is planned from its lines alone: engine.ts).
import { modifiedAt, newestModification, readTextIfExists } from '../system/files.js';
import type { LoadBalancerFiles } from './layout.js';
import { planApply, type Plan, type PlanFacts } from './plan.js';

/** A plan, and the live config it was made from: a load made under the same lock need not read it again (700 kB at 10,000 members). */
export interface Planned {
  plan: Plan;
  live: string | null;
}

export interface PlannerDeps {
  files: (lbId: string) => LoadBalancerFiles;
  acceptedConfig: (lbId: string) => Promise<string | null>;
  running: (lbId: string) => Promise<boolean>;
  /** API 1.0 reloads may go through the runtime API (default true); needs certDir. */
  runtimeMemberChanges?: boolean;
  certDir?: (lbId: string) => string;
}

export class Planner {
  /** The accepted config haproxy runs, per load balancer, as this process last applied or loaded it. */
  private readonly applied = new Map<string, string>();

  constructor(private readonly deps: PlannerDeps) {}

  /** haproxy now runs `text` (the accepted config). */
  ran(lbId: string, text: string): void {
    this.applied.set(lbId, text);
  }

  /** What haproxy runs is no longer known (stopped, deleted). */
  forget(lbId: string): void {
    this.applied.delete(lbId);
  }

  /** API 2.0: make `text` run. */
  put(lbId: string, text: string, runnable: string, forcedReload: string | null): Promise<Planned> {
    return this.plan(lbId, 'put', text, runnable, forcedReload);
  }

  /** API 1.0's reload of the accepted `text`. */
  async reload(lbId: string, text: string, runnable: string): Promise<Planned> {
    return this.plan(lbId, 'reload', text, runnable, await this.reloadFirst(lbId));
  }

  /** Whether haproxy runs `text`, as this process last applied or loaded it. */
  runs(lbId: string, text: string): boolean {
    return this.applied.get(lbId) === text;
  }

  /** Whether haproxy runs costs a master CLI round trip: asked only when it can matter. */
  private async plan(lbId: string, request: PlanFacts['request'], text: string, runnable: string, forcedReload: string | null): Promise<Planned> {
    const accepted = (await this.deps.acceptedConfig(lbId)) === text;
    const running = accepted && request === 'put' ? await this.deps.running(lbId) : null;
    const live = await readTextIfExists(this.deps.files(lbId).live);
    return { plan: planApply({ request, forcedReload, live, runnable, accepted, running }), live };
  }

  /** Reasons an API 1.0 reload cannot go through the runtime API, whatever changed. */
  private async reloadFirst(lbId: string): Promise<string | null> {
    if (this.deps.runtimeMemberChanges === false || !this.deps.certDir) return 'runtime member changes are off';
    const loadedAt = await modifiedAt(this.deps.files(lbId).applied);
    const certsAt = await newestModification(this.deps.certDir(lbId));
    return loadedAt === null || (certsAt !== null && certsAt >= loadedAt) ? 'certificates changed since the last load' : null;
  }
}
