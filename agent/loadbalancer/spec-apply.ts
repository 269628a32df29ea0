// A prepared spec (prepared-spec.ts) applied, or what applying it would do:
// haproxy through the engine (runtime or reload), then keepalived for the
// UDP/SCTP listeners, then the spec's own files. V2Service decides when
// (under its lock, after the ETag check); this module decides how.
import type { ChangeReport } from '../haproxy/apply/pipeline.js';
import type { Plan } from '../haproxy/apply/plan.js';
import { isReload, type ApplyOutcome } from '../outcome.js';
import { ensureDir, writeFilesAtomic, type FileContent } from '../system/files.js';
import { afterLvsChange, type AnnounceDeps } from './announce.js';
import { writeCrtList } from './certificates.js';
import { applyLvsListeners, lvsChanges } from './lvs-listeners.js';
import { forcedReload, type Prepared } from './prepared-spec.js';
import { plannedReport, reportedSteps, type PutResult } from './put-result.js';

const NO_HAPROXY_LEFT = 'no haproxy listeners left';

/** What applyPrepared() would do: the engine's plan for the config, as the apply would execute it, and the LVS listeners it would touch. */
export async function dryRunPrepared(deps: AnnounceDeps, lbId: string, p: Prepared): Promise<PutResult> {
  const config = p.rendered.haproxyConfig;
  const plan: Plan =
    config !== null
      ? await deps.engine.plan(lbId, config, forcedReload(p))
      : (await deps.engine.exists(lbId))
        ? { kind: 'reload', reason: NO_HAPROXY_LEFT }
        : { kind: 'unchanged' };
  return {
    ...plannedReport(plan, await lvsChanges(deps, p.rendered.lvsConfigs, p.lvsRemoved)),
    result: 'dry_run',
    created: p.current === null,
    etag: p.next.etag,
    changes: p.changes,
    config: config ?? '',
    pending: [],
  };
}

/** `specFiles`: spec.json and its emptied journal, written with the config (or after keepalived, when there are LVS listeners). */
export async function applyPrepared(
  deps: AnnounceDeps,
  lbId: string,
  amphoraId: string,
  p: Prepared,
  specFiles: FileContent[],
): Promise<PutResult & { result: ApplyOutcome }> {
  const config = p.rendered.haproxyConfig;
  // Without LVS listeners the spec is written with the config, in the
  // engine's one step; with them, after keepalived too has taken its part.
  const hasLvs = p.rendered.lvsConfigs.length > 0 || p.lvsRemoved.length > 0;
  // A spec sent again as it is (controllers retry) needs no write.
  // (A journal is folded into spec.json on every whole-spec PUT that writes.)
  const specChanged =
    p.current === null || p.journaled || p.current.etag !== p.next.etag || JSON.stringify(p.current.certificates) !== JSON.stringify(p.next.certificates);
  let report: Pick<ChangeReport, 'outcome' | 'steps' | 'reloadReason' | 'pending'> = { outcome: 'unchanged', steps: [], reloadReason: null, pending: [] };
  if (config !== null) {
    for (const f of p.rendered.crtLists) await writeCrtList(deps.config.current, lbId, f.path, f.content);
    const forceReload = forcedReload(p);
    report = await deps.engine.apply(lbId, amphoraId, config, {
      companions: hasLvs || !specChanged ? [] : specFiles,
      ...(forceReload ? { forceReload } : {}),
    });
  } else if (await deps.engine.exists(lbId)) {
    await deps.engine.delete(lbId);
    report = { ...report, outcome: 'reloaded', reloadReason: NO_HAPROXY_LEFT };
  }
  const lvs = hasLvs ? await applyLvsListeners(deps, p.rendered.lvsConfigs, p.lvsRemoved) : [];
  if (lvs.length > 0) await afterLvsChange(deps);
  if (hasLvs && specChanged) {
    await ensureDir(deps.engine.files(lbId).dir, 0o755);
    await writeFilesAtomic(specFiles);
  }
  // A keepalived restart is a reload of that listener.
  const result = lvs.length > 0 && !isReload(report.outcome) ? 'reloaded' : report.outcome;
  return {
    result,
    created: p.current === null,
    etag: p.next.etag,
    changes: p.changes,
    ...reportedSteps(report, report.reloadReason, lvs),
    pending: report.pending,
    lvs,
  };
}
