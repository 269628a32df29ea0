// API 2.0's domain: a load balancer described by a spec. put() validates,
// renders and applies it through the engine (runtime API when only members
// changed, a reload otherwise), with optimistic concurrency on the spec's
// ETag; everything for one load balancer runs under one lock, so concurrent
// writers are applied one after the other and the files always hold one
// whole spec and the config rendered from it. What is not there is thrown
// (ObjectNotFoundError), like every other refusal, never returned as null:
// the router hands all of them to its one error handler.
import type { ConfigStore } from '../config/store.js';
import type { HaproxyEngine } from '../haproxy/apply/engine.js';
import type { MemberEdit } from '../haproxy/apply/pipeline.js';
import { KeyedLock } from '../system/keyed-lock.js';
import { renderLoadBalancer, renderMemberLines } from '../render/render.js';
import type { AmphoraFacts, RenderTarget } from '../render/settings.js';
import { poolsById, withMember } from '../model/spec/pools.js';
import { LVS_PROTOCOLS, type LoadBalancerSpec, type MemberSpec } from '../model/spec/types.js';
import { validateMember, validateSpec } from '../model/spec/validate.js';
import type { FileContent } from '../system/files.js';
import { readCertificate, removeCertificate, removeCertificates, storeCertificate } from './certificates.js';
import { describeMemberChange } from './changes.js';
import type { Logger } from '../log.js';
import type { ApplyMetrics } from './metrics.js';
import type { ApplyOutcome } from '../outcome.js';
import { recordedApply } from './recorded-apply.js';
import {
  JOURNAL_LIMIT,
  journalLine,
  readStoredSpec,
  removeStoredSpec,
  specEtag,
  specFiles,
  storedSpecText,
  type JournaledSpec,
  type MemberChange,
  type SpecFiles,
  type StoredSpec,
} from './spec-store.js';
import { editMember, sameMember } from './member-edit.js';
import { loadBalancerStatus, supervisionStatus, type LoadBalancerStatus, type SupervisionStatus } from './status.js';
import { ObjectNotFoundError, PreconditionFailedError, SpecMismatchError } from './v2-errors.js';
import { lvsListeners, lvsStatuses, removeLvsListeners, removeNewLvs } from './lvs-listeners.js';
import { prepareSpec } from './prepared-spec.js';
import { applyPrepared, dryRunPrepared } from './spec-apply.js';
import { plannedReport, reportedSteps, type PutOptions, type PutResult } from './put-result.js';

export class V2Service {
  private readonly lock = new KeyedLock();
  /** The stored specs with their journals, read once: only this service writes them, under its lock. */
  private readonly specs = new Map<string, JournaledSpec | null>();

  /**
   * `amphora`: the facts haproxy is sized from (RenderTarget.amphora), read
   * once when the agent starts: a config that moved with free memory would
   * differ between two PUTs of the same spec, and every member change would
   * become a reload.
   */
  constructor(
    private readonly deps: {
      engine: HaproxyEngine;
      config: ConfigStore;
      metrics: ApplyMetrics;
      log: Logger;
      amphora?: AmphoraFacts;
    },
  ) {}

  private specFiles(lbId: string): SpecFiles {
    return specFiles(this.deps.engine.files(lbId).dir);
  }

  private async journaled(lbId: string): Promise<JournaledSpec | null> {
    if (!this.specs.has(lbId)) this.specs.set(lbId, await readStoredSpec(this.specFiles(lbId)));
    return this.specs.get(lbId)!;
  }

  private async stored(lbId: string): Promise<StoredSpec | null> {
    return (await this.journaled(lbId))?.stored ?? null;
  }

  /** spec.json with an empty journal: after a whole-spec PUT, or to fold a long journal in. */
  private specFileContents(lbId: string, stored: StoredSpec): FileContent[] {
    const f = this.specFiles(lbId);
    return [
      { path: f.spec, data: storedSpecText(stored) },
      { path: f.journal, data: '' },
    ];
  }

  private checkPrecondition(current: StoredSpec | null, ifMatch: string | undefined): void {
    if (ifMatch === undefined) return;
    if (ifMatch === '*' ? current === null : current?.etag !== ifMatch) throw new PreconditionFailedError(current?.etag ?? null);
  }

  async put(lbId: string, document: unknown, opts: PutOptions = {}): Promise<PutResult> {
    const spec = validateSpec(document);
    if (spec.id !== lbId) throw new SpecMismatchError(`the spec's id "${spec.id}" is not the load balancer in the path ("${lbId}")`);
    return this.lock.run(lbId, async () => {
      const started = process.hrtime.bigint();
      const current = await this.journaled(lbId);
      this.checkPrecondition(current?.stored ?? null, opts.ifMatch);
      return this.putSpec(lbId, spec, current, opts, started);
    });
  }

  /** A whole spec rendered and applied; the caller holds the lock. */
  private async putSpec(lbId: string, spec: LoadBalancerSpec, current: JournaledSpec | null, opts: PutOptions, started: bigint): Promise<PutResult> {
    const p = await prepareSpec(this.deps.config.current, await this.renderTarget(), spec, current);
    if (opts.dryRun) return dryRunPrepared(this.deps, lbId, p);
    try {
      const applied = await recordedApply(
        this.deps,
        '2.0',
        async () => {
          const out = await applyPrepared(this.deps, lbId, this.amphoraId(lbId), p, this.specFileContents(lbId, p.next));
          this.specs.set(lbId, { stored: p.next, journal: '', changes: 0 });
          return { out, outcome: out.result };
        },
        started,
      );
      return applied.out;
    } catch (err) {
      this.specs.delete(lbId); // read it again: a failed apply may or may not have stored it
      await removeNewLvs(this.deps, p.lvsAdded);
      throw err;
    }
  }

  /**
   * API 2.0's member calls: put (`document`) or remove (null) one member of
   * one pool. Only the member is validated, only its server lines rendered,
   * the ETag and the journal line computed from it, so the cost does not
   * grow with the load balancer (haproxy pools; a UDP/SCTP pool's member
   * goes through the whole-spec path, as keepalived restarts anyway).
   * ObjectNotFoundError for no load balancer, no pool, or no member to remove.
   */
  async putMember(lbId: string, poolId: string, memberId: string, document: unknown | null, opts: PutOptions = {}): Promise<PutResult> {
    return this.lock.run(lbId, async () => {
      const started = process.hrtime.bigint();
      const current = await this.journaled(lbId);
      if (current === null) throw noLoadBalancer(lbId);
      this.checkPrecondition(current.stored, opts.ifMatch);
      const pool = poolsById(current.stored.spec).get(poolId);
      if (!pool) throw new ObjectNotFoundError(`no pool ${poolId} in load balancer ${lbId}`);
      const was = pool.members.find((m) => m.id === memberId);
      if (document === null && was === undefined) throw new ObjectNotFoundError(`no member ${memberId} in pool ${poolId}`);
      const member = document === null ? null : validateMember(document, memberId, pool);
      const spec = withMember(current.stored.spec, poolId, memberId, member);
      if (LVS_PROTOCOLS.includes(pool.protocol)) return this.putSpec(lbId, spec, current, opts, started);
      const next: StoredSpec = { ...current.stored, spec, etag: sameMember(was, member) ? current.stored.etag : specEtag(spec, current.stored.spec) };
      const edit = await this.memberEdit(lbId, current.stored.spec, spec, poolId, memberId, was, member);
      if (edit === null) return this.putSpec(lbId, spec, current, opts, started);
      const changes = describeMemberChange(poolId, was ?? null, member);
      if (opts.dryRun) {
        const plan = await this.deps.engine.planMemberEdit(lbId, edit);
        return { ...plannedReport(plan, []), result: 'dry_run', created: false, etag: next.etag, changes, config: edit.edited.text, pending: [] };
      }
      const change: MemberChange = { pool: poolId, member: memberId, ...(member ? { spec: member } : {}), etag: next.etag };
      // The journal's next state: as it is (the member did not change), one line longer, or folded into spec.json.
      const after: JournaledSpec =
        next.etag === current.stored.etag
          ? { ...current, stored: next }
          : current.changes + 1 >= JOURNAL_LIMIT
            ? { stored: next, journal: '', changes: 0 }
            : { stored: next, journal: current.journal + journalLine(change), changes: current.changes + 1 };
      const companions =
        next.etag === current.stored.etag
          ? []
          : after.changes === 0
            ? this.specFileContents(lbId, next)
            : [{ path: this.specFiles(lbId).journal, data: after.journal }];
      const { out } = await recordedApply(
        this.deps,
        '2.0',
        async () => {
          const report = await this.deps.engine.applyMemberEdit(lbId, this.amphoraId(lbId), edit, companions);
          this.specs.set(lbId, after);
          const out: PutResult & { result: ApplyOutcome } = {
            result: report.outcome,
            created: false,
            etag: next.etag,
            changes,
            ...reportedSteps(report, report.reloadReason, []),
            pending: report.pending,
            lvs: [],
          };
          return { out, outcome: report.outcome };
        },
        started,
      ).catch((err: unknown) => {
        this.specs.delete(lbId); // read it again: a failed apply may or may not have stored it
        throw err;
      });
      return out;
    });
  }

  /** The member call as an edit of the accepted config, or null when the whole spec must be rendered. */
  private async memberEdit(
    lbId: string,
    before: LoadBalancerSpec,
    after: LoadBalancerSpec,
    poolId: string,
    memberId: string,
    was: MemberSpec | undefined,
    member: MemberSpec | null,
  ): Promise<MemberEdit | null> {
    const base = await this.deps.engine.memberBase(lbId);
    if (base === null) return null;
    const target = await this.renderTarget();
    const lines = (spec: LoadBalancerSpec, m: MemberSpec) => renderMemberLines(spec, poolId, m, this.deps.config.current.render, target);
    const newLines = member ? lines(after, member) : null;
    const backends = [...(newLines ?? (was ? lines(before, was) : new Map())).keys()];
    return editMember(base, memberId, backends, newLines);
  }

  private async renderTarget(): Promise<RenderTarget> {
    const caps = await this.deps.engine.capabilities();
    return { initStateAtStartup: caps.initStateAtStartup, ...(this.deps.amphora ? { amphora: this.deps.amphora } : {}) };
  }

  /**
   * At agent start: the load balancers whose config a killed agent held back
   * after member calls (haproxy/apply/deferred-config.ts) get their stored spec
   * applied again, as a whole-spec PUT of it would. Returns them.
   */
  async catchUp(): Promise<string[]> {
    const caughtUp: string[] = [];
    for (const lbId of await this.deps.engine.configsBehind()) {
      await this.lock.run(lbId, async () => {
        const current = await this.journaled(lbId);
        if (current === null) return;
        const rendered = renderLoadBalancer(current.stored.spec, this.deps.config.current.render, await this.renderTarget());
        if (rendered.haproxyConfig === null) return;
        await this.deps.engine.apply(lbId, this.amphoraId(lbId), rendered.haproxyConfig);
        caughtUp.push(lbId);
      });
    }
    return caughtUp;
  }

  /** ObjectNotFoundError when there is no load balancer. */
  async get(lbId: string): Promise<StoredSpec & { config: string }> {
    const stored = await this.lock.run(lbId, () => this.stored(lbId));
    if (!stored) throw noLoadBalancer(lbId);
    return { ...stored, config: (await this.deps.engine.acceptedConfig(lbId)) ?? '' };
  }

  /** Remove the load balancer; ObjectNotFoundError when there was none. */
  async delete(lbId: string, ifMatch?: string): Promise<void> {
    return this.lock.run(lbId, async () => {
      const current = await this.stored(lbId);
      this.checkPrecondition(current, ifMatch);
      if (current === null && !(await this.deps.engine.exists(lbId))) throw noLoadBalancer(lbId);
      await removeLvsListeners(this.deps, current ? lvsListeners(current.spec) : []);
      await this.deps.engine.delete(lbId);
      await removeStoredSpec(this.specFiles(lbId));
      this.specs.set(lbId, null);
      await removeCertificates(this.deps.config.current, lbId);
    });
  }

  /** ObjectNotFoundError when there is no load balancer. */
  async status(lbId: string): Promise<LoadBalancerStatus & { haproxy: SupervisionStatus }> {
    const stored = this.specs.get(lbId)?.stored ?? (await this.lock.run(lbId, () => this.stored(lbId))); // no wait behind a drain
    if (!stored) throw noLoadBalancer(lbId);
    // Asked together: a haproxy that does not answer costs one socket timeout, not two.
    const [rows, haproxy] = await Promise.all([this.deps.engine.stats(lbId).catch(() => []), this.deps.engine.supervision(lbId)]);
    const lvs = await lvsStatuses(this.deps, stored.spec);
    return { ...loadBalancerStatus(stored.spec, rows, lvs), haproxy: supervisionStatus(haproxy) };
  }

  putCertificate(lbId: string, name: string, pem: Buffer): Promise<void> {
    return storeCertificate(this.deps.config.current, lbId, name, pem);
  }

  /** ObjectNotFoundError when there is no such file. */
  async deleteCertificate(lbId: string, name: string): Promise<void> {
    if ((await readCertificate(this.deps.config.current, lbId, name)) === null) throw new ObjectNotFoundError(`no certificate file ${name}`);
    await removeCertificate(this.deps.config.current, lbId, name);
  }

  private amphoraId(lbId: string): string {
    return this.deps.config.current.amphoraAgent.amphoraId ?? lbId;
  }
}

const noLoadBalancer = (lbId: string) => new ObjectNotFoundError(`no load balancer ${lbId}`);
