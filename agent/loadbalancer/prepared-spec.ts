// A whole spec made ready to apply, with everything decided before haproxy
// or keepalived is touched: the rendered configs, the stored spec it becomes
// (ETag, certificate fingerprints), what changed, and the LVS listeners it
// adds and removes. A dry run reports it; an apply carries it out.
import type { AgentConfig } from '../config/agent-config.js';
import { renderLoadBalancer } from '../render/render.js';
import type { RenderedLoadBalancer, RenderTarget } from '../render/settings.js';
import type { LoadBalancerSpec } from '../model/spec/types.js';
import { certificateFingerprints } from './certificates.js';
import { describeChanges } from './changes.js';
import { lvsListeners } from './lvs-listeners.js';
import { specEtag, type JournaledSpec, type StoredSpec } from './spec-store.js';

export interface Prepared {
  current: StoredSpec | null;
  /** The stored spec has member calls in its journal. */
  journaled: boolean;
  next: StoredSpec;
  rendered: RenderedLoadBalancer;
  changes: string[];
  certificatesChanged: boolean;
  lvsAdded: string[];
  lvsRemoved: string[];
}

/** Everything decided before haproxy or keepalived is touched. */
export async function prepareSpec(config: AgentConfig, target: RenderTarget, spec: LoadBalancerSpec, journaled: JournaledSpec | null): Promise<Prepared> {
  const current = journaled?.stored ?? null;
  const rendered = renderLoadBalancer(spec, config.render, target);
  const certificates = await certificateFingerprints(config, spec);
  const lvsBefore = current ? lvsListeners(current.spec) : [];
  const lvsNow = rendered.lvsConfigs.map((c) => c.listenerId);
  return {
    current,
    rendered,
    journaled: (journaled?.changes ?? 0) > 0,
    next: { spec, etag: specEtag(spec), certificates },
    changes: describeChanges(current?.spec ?? null, spec),
    certificatesChanged: current !== null && JSON.stringify(certificates) !== JSON.stringify(current.certificates),
    lvsAdded: lvsNow.filter((id) => !lvsBefore.includes(id)),
    lvsRemoved: lvsBefore.filter((id) => !lvsNow.includes(id)),
  };
}

/** A reload the spec needs whatever its members: a certificate file it names changed. */
export function forcedReload(p: Prepared): string | null {
  return p.certificatesChanged ? 'certificates changed' : null;
}
