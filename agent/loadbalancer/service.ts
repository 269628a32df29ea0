// API 2.0's domain: a load balancer described by a spec. put() validates,
// renders and applies it through the engine (runtime API when only members
// changed, a reload otherwise), with optimistic concurrency on the spec's
// ETag; everything for one load balancer runs under one lock, so concurrent
// writers are applied one after the other and the files always hold one
// whole spec and the config rendered from it.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { ConfigStore } from '../config/store.js';
import type { ChangeReport, HaproxyEngine } from '../haproxy/engine.js';
import { KeyedLock } from '../haproxy/keyed-lock.js';
import { renderLoadBalancer } from '../render/render.js';
import type { AmphoraFacts, RenderedLoadBalancer } from '../render/settings.js';
import type { LoadBalancerSpec } from '../spec/types.js';
import { validateSpec } from '../spec/validate.js';
import { ensureDir, readTextIfExists, writeFileAtomic } from '../system/files.js';
import { afterHaproxyChange, afterLvsStart } from './announce.js';
import { certificateDir, readCertificate, removeCertificate, removeCertificates, storeCertificate } from './certificates.js';
import { describeChanges } from './changes.js';
import { applyLvs, lvsInstance, lvsStatus, removeLvs } from '../keepalived/service.js';
import { keepalivedSettings } from '../keepalived/process.js';
import { LVS_PROTOCOLS } from '../spec/types.js';
import type { Logger } from '../log.js';
import type { ApplyMetrics } from './metrics.js';
import { memberKey } from '../haproxy/layout.js';
import { isReload, type ApplyOutcome, type ApplyPlan, type PutResultWord } from './outcome.js';
import { recordedApply } from './recorded-apply.js';
import { certificateFiles, readStoredSpec, removeStoredSpec, specEtag, storedSpecText, type StoredSpec } from './spec-store.js';
import { loadBalancerStatus, type LoadBalancerStatus } from './status.js';
import { AgentError } from '../errors.js';

export class PreconditionFailedError extends AgentError {
  readonly kind = 'precondition_failed';

  constructor(readonly currentEtag: string | null) {
    super(currentEtag === null ? 'the load balancer does not exist' : `the spec changed: its ETag is now ${currentEtag}`);
  }
}

/** The spec's id is not the load balancer of the path. */
export class SpecMismatchError extends AgentError {
  readonly kind = 'invalid_input';
}

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

interface Prepared {
  current: StoredSpec | null;
  next: StoredSpec;
  rendered: RenderedLoadBalancer;
  changes: string[];
  certificatesChanged: boolean;
  lvsAdded: string[];
  lvsRemoved: string[];
}

export interface PutOptions {
  ifMatch?: string;
  dryRun?: boolean;
}

const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');

export class LoadBalancerService {
  private readonly lock = new KeyedLock();
  /** The stored specs, read once: only this service writes them, under its lock. */
  private readonly specs = new Map<string, StoredSpec | null>();

  /**
   * `amphora`: the facts haproxy is sized from (RenderTarget.amphora), read
   * once when the agent starts: a config that moved with free memory would
   * differ between two PUTs of the same spec, and every member change would
   * become a reload.
   */
  constructor(private readonly deps: {
    engine: HaproxyEngine; config: ConfigStore; metrics: ApplyMetrics; log: Logger; amphora?: AmphoraFacts;
  }) {}

  private certDir(lbId: string): string {
    return certificateDir(this.deps.config.current, lbId);
  }

  private specPath(lbId: string): string {
    return this.deps.engine.files(lbId).spec;
  }

  private async stored(lbId: string): Promise<StoredSpec | null> {
    if (!this.specs.has(lbId)) this.specs.set(lbId, await readStoredSpec(this.specPath(lbId)));
    return this.specs.get(lbId)!;
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
      const current = await this.stored(lbId);
      this.checkPrecondition(current, opts.ifMatch);
      const p = await this.prepare(spec, current);
      if (opts.dryRun) return this.dryRun(lbId, p);
      try {
        const applied = await recordedApply(this.deps, '2.0', lbId, async () => {
          const out = await this.apply(lbId, p);
          this.specs.set(lbId, p.next);
          return { out, outcome: out.result, announce: isReload(out.result) ? p.rendered.haproxyConfig !== null : null };
        }, started);
        return applied.out;
      } catch (err) {
        this.specs.delete(lbId); // read it again: a failed apply may or may not have stored it
        await this.removeNewLvs(p.lvsAdded);
        throw err;
      }
    });
  }

  /** Everything decided before haproxy or keepalived is touched. */
  private async prepare(spec: LoadBalancerSpec, current: StoredSpec | null): Promise<Prepared> {
    const caps = await this.deps.engine.capabilities();
    const rendered = renderLoadBalancer(spec, this.deps.config.current.render, {
      initStateAtStartup: caps.initStateAtStartup, ...(this.deps.amphora ? { amphora: this.deps.amphora } : {}),
    });
    const certificates = await this.certificateFingerprints(spec);
    const lvsBefore = current ? lvsListeners(current.spec) : [];
    const lvsNow = rendered.lvsConfigs.map((c) => c.listenerId);
    return {
      current, rendered,
      next: { spec, etag: specEtag(spec), certificates },
      changes: describeChanges(current?.spec ?? null, spec),
      certificatesChanged: current !== null && JSON.stringify(certificates) !== JSON.stringify(current.certificates),
      lvsAdded: lvsNow.filter((id) => !lvsBefore.includes(id)),
      lvsRemoved: lvsBefore.filter((id) => !lvsNow.includes(id)),
    };
  }

  private async dryRun(lbId: string, p: Prepared): Promise<PutResult> {
    const config = p.rendered.haproxyConfig;
    const plan = config === null ? { steps: [], reloadReason: 'no haproxy listeners' } : await this.deps.engine.previewChange(lbId, config);
    const reloadReason = plan.reloadReason ?? (p.certificatesChanged ? 'certificates changed' : null);
    const same = config === null || (await this.deps.engine.acceptedConfig(lbId)) === config;
    return {
      result: 'dry_run', created: p.current === null, etag: p.next.etag, changes: p.changes, config: config ?? '',
      plan: config !== null && reloadReason !== null ? 'reload' : same ? 'unchanged' : 'runtime',
      runtime: plan.steps.map((s) => `${s.kind} ${memberKey(s.backend, s.server)}`), reloadReason, pending: [],
      lvs: [...p.rendered.lvsConfigs.map((c) => `apply ${c.listenerId}`), ...p.lvsRemoved.map((id) => `remove ${id}`)],
    };
  }

  /** haproxy through the engine (runtime or reload), then keepalived for UDP/SCTP listeners, then the spec. */
  private async apply(lbId: string, p: Prepared): Promise<PutResult & { result: ApplyOutcome }> {
    const config = p.rendered.haproxyConfig;
    // Without LVS listeners the spec is written with the config, in the
    // engine's one step; with them, after keepalived too has taken its part.
    const hasLvs = p.rendered.lvsConfigs.length > 0 || p.lvsRemoved.length > 0;
    const specFile = { path: this.specPath(lbId), data: storedSpecText(p.next) };
    // A spec sent again as it is (controllers retry) needs no write.
    const specChanged = p.current === null || p.current.etag !== p.next.etag || JSON.stringify(p.current.certificates) !== JSON.stringify(p.next.certificates);
    let report: ChangeReport = { result: 'unchanged', steps: [], reloadReason: null, pending: [] };
    if (config !== null) {
      for (const f of p.rendered.crtLists) await this.writeCrtList(lbId, f.path, f.content);
      report = await this.deps.engine.applyChange(lbId, this.amphoraId(lbId), config, {
        companions: hasLvs || !specChanged ? [] : [specFile], ...(p.certificatesChanged ? { forceReload: 'certificates changed' } : {}),
      });
    } else if (await this.deps.engine.exists(lbId)) {
      await this.deps.engine.delete(lbId);
      report = { ...report, result: 'reloaded', reloadReason: 'no haproxy listeners left' };
    }
    const lvs = hasLvs ? await this.applyLvsListeners(p) : [];
    if (hasLvs && specChanged) {
      await ensureDir(this.deps.engine.files(lbId).dir, 0o755);
      await writeFileAtomic(specFile.path, specFile.data, 0o600);
    }
    // A keepalived restart is a reload of that listener.
    const result = lvs.length > 0 && (report.result === 'unchanged' || report.result === 'runtime') ? 'reloaded' : report.result;
    return {
      result, created: p.current === null, etag: p.next.etag, changes: p.changes,
      runtime: report.steps.map((s) => `${s.kind} ${memberKey(s.backend, s.server)}`),
      reloadReason: report.reloadReason ?? (lvs.length > 0 ? 'UDP/SCTP listeners changed' : null), pending: report.pending, lvs,
    };
  }

  private async applyLvsListeners(p: Prepared): Promise<string[]> {
    const base = this.deps.config.current.haproxyAmphora.basePath;
    const settings = keepalivedSettings(this.deps.config.current, this.deps.engine.processManager);
    const done: string[] = [];
    for (const c of p.rendered.lvsConfigs) {
      if (!(await applyLvs(base, settings, c.listenerId, c.content))) continue;
      await afterLvsStart(this.deps, c.listenerId);
      done.push(`restarted ${c.listenerId}`);
    }
    for (const id of p.lvsRemoved) {
      await removeLvs(base, settings, id);
      done.push(`removed ${id}`);
    }
    return done;
  }

  async get(lbId: string): Promise<(StoredSpec & { config: string }) | null> {
    const stored = await this.lock.run(lbId, () => this.stored(lbId));
    if (!stored) return null;
    return { ...stored, config: (await this.deps.engine.acceptedConfig(lbId)) ?? '' };
  }

  /** Remove the load balancer; false when there was none. */
  async delete(lbId: string, ifMatch?: string): Promise<boolean> {
    return this.lock.run(lbId, async () => {
      const current = await this.stored(lbId);
      this.checkPrecondition(current, ifMatch);
      if (current === null && !(await this.deps.engine.exists(lbId))) return false;
      const settings = keepalivedSettings(this.deps.config.current, this.deps.engine.processManager);
      for (const id of current ? lvsListeners(current.spec) : []) await removeLvs(this.deps.config.current.haproxyAmphora.basePath, settings, id);
      await this.deps.engine.delete(lbId);
      await removeStoredSpec(this.specPath(lbId));
      this.specs.set(lbId, null);
      await removeCertificates(this.deps.config.current, lbId);
      await afterHaproxyChange(this.deps, lbId, false);
      return true;
    });
  }

  async status(lbId: string): Promise<LoadBalancerStatus | null> {
    const stored = this.specs.get(lbId) ?? (await this.lock.run(lbId, () => this.stored(lbId))); // no wait behind a drain
    if (!stored) return null;
    const rows = await this.deps.engine.stats(lbId).catch(() => []);
    const base = this.deps.config.current.haproxyAmphora.basePath;
    const lvs: Record<string, string> = {};
    for (const id of lvsListeners(stored.spec)) {
      lvs[id] = await lvsStatus(base, id, (await readTextIfExists(lvsInstance(base, id).config)) ?? '');
    }
    return loadBalancerStatus(stored.spec, rows, lvs);
  }

  putCertificate(lbId: string, name: string, pem: Buffer): Promise<void> {
    return storeCertificate(this.deps.config.current, lbId, name, pem);
  }

  async deleteCertificate(lbId: string, name: string): Promise<boolean> {
    if ((await readCertificate(this.deps.config.current, lbId, name)) === null) return false;
    await removeCertificate(this.deps.config.current, lbId, name);
    return true;
  }

  /** After a failed apply: UDP/SCTP listeners the stored spec does not have must not linger. */
  private async removeNewLvs(ids: string[]): Promise<void> {
    const settings = keepalivedSettings(this.deps.config.current, this.deps.engine.processManager);
    for (const id of ids) {
      await removeLvs(this.deps.config.current.haproxyAmphora.basePath, settings, id)
        .catch((err: Error) => this.deps.log.warn({ listener: id, err: err.message }, 'cannot remove the LVS listener of a failed apply'));
    }
  }

  private amphoraId(lbId: string): string {
    return this.deps.config.current.amphoraAgent.amphoraId ?? lbId;
  }

  /** sha256 of each certificate file the spec names; a missing file is an error the caller can fix. */
  private async certificateFingerprints(spec: LoadBalancerSpec): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const name of certificateFiles(spec)) {
      const pem = await readTextIfExists(join(this.certDir(spec.id), name));
      if (pem === null) throw new MissingCertificateError(name);
      out[name] = sha256(pem);
    }
    return out;
  }

  private async writeCrtList(lbId: string, path: string, content: string): Promise<void> {
    await ensureDir(this.certDir(lbId), 0o700);
    if ((await readTextIfExists(path)) !== content) await writeFileAtomic(path, content, 0o600);
  }
}

export class MissingCertificateError extends AgentError {
  readonly kind = 'conflict';

  constructor(readonly file: string) {
    super(`certificate file "${file}" has not been uploaded (PUT /2.0/loadbalancers/{id}/certificates/${file})`);
  }
}

function lvsListeners(spec: LoadBalancerSpec): string[] {
  return spec.listeners.filter((l) => LVS_PROTOCOLS.includes(l.protocol)).map((l) => l.id);
}
