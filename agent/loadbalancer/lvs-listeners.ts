// The UDP/SCTP listeners of an API 2.0 spec. keepalived (LVS) serves them,
// not haproxy, so they go around the engine: which listeners a spec has,
// what applying its rendered configs would restart or remove (a dry run's
// report), doing it, taking away those a failed apply added, and their
// statuses. Apart from v2-service.ts, which decides when each is done.
import { keepalivedSettings } from '../keepalived/process.js';
import { applyLvs, lvsInstance, lvsStatus, removeLvs } from '../keepalived/service.js';
import type { RenderedLoadBalancer } from '../render/settings.js';
import { LVS_PROTOCOLS, type LoadBalancerSpec } from '../model/spec/types.js';
import { readTextIfExists } from '../system/files.js';
import { afterLvsStart, type AnnounceDeps } from './announce.js';

type LvsConfigs = RenderedLoadBalancer['lvsConfigs'];

export function lvsListeners(spec: LoadBalancerSpec): string[] {
  return spec.listeners.filter((l) => LVS_PROTOCOLS.includes(l.protocol)).map((l) => l.id);
}

/** The LVS listeners a spec's apply restarts or removes, as the report names them, without touching keepalived. */
export async function lvsChanges(deps: AnnounceDeps, configs: LvsConfigs, removed: string[]): Promise<string[]> {
  const base = deps.config.current.haproxyAmphora.basePath;
  const out: string[] = [];
  for (const c of configs) {
    if ((await readTextIfExists(lvsInstance(base, c.listenerId).config)) !== c.content) out.push(`restarted ${c.listenerId}`);
  }
  return [...out, ...removed.map((id) => `removed ${id}`)];
}

export async function applyLvsListeners(deps: AnnounceDeps, configs: LvsConfigs, removed: string[]): Promise<string[]> {
  const base = deps.config.current.haproxyAmphora.basePath;
  const settings = keepalivedSettings(deps.config.current, deps.engine.processManager);
  const done: string[] = [];
  for (const c of configs) {
    if (!(await applyLvs(base, settings, c.listenerId, c.content))) continue;
    await afterLvsStart(deps, c.listenerId);
    done.push(`restarted ${c.listenerId}`);
  }
  for (const id of removed) {
    await removeLvs(base, settings, id);
    done.push(`removed ${id}`);
  }
  return done;
}

/** The load balancer goes: its LVS listeners go with it. */
export async function removeLvsListeners(deps: AnnounceDeps, ids: string[]): Promise<void> {
  const settings = keepalivedSettings(deps.config.current, deps.engine.processManager);
  for (const id of ids) await removeLvs(deps.config.current.haproxyAmphora.basePath, settings, id);
}

/** After a failed apply: UDP/SCTP listeners the stored spec does not have must not linger. */
export async function removeNewLvs(deps: AnnounceDeps, ids: string[]): Promise<void> {
  const settings = keepalivedSettings(deps.config.current, deps.engine.processManager);
  for (const id of ids) {
    await removeLvs(deps.config.current.haproxyAmphora.basePath, settings, id).catch((err: Error) =>
      deps.log.warn({ listener: id, err: err.message }, 'cannot remove the LVS listener of a failed apply'),
    );
  }
}

/** keepalived's word for each of the spec's LVS listeners, by listener id. */
export async function lvsStatuses(deps: AnnounceDeps, spec: LoadBalancerSpec): Promise<Record<string, string>> {
  const base = deps.config.current.haproxyAmphora.basePath;
  const lvs: Record<string, string> = {};
  for (const id of lvsListeners(spec)) {
    lvs[id] = await lvsStatus(base, id, (await readTextIfExists(lvsInstance(base, id).config)) ?? '');
  }
  return lvs;
}
