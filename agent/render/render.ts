// The renderer: a validated spec in, haproxy.cfg, crt-lists and keepalived LVS
// configs out. Pure: no file is read or written here.
import type { LoadBalancerSpec, MemberSpec, PoolSpec } from '../model/spec/types.js';
import { renderTemplate } from '../templates.js';
import { ViewBuilder } from './haproxy-view.js';
import { lvsViews } from './lvs-view.js';
import type { RenderedLoadBalancer, RenderSettings, RenderTarget } from './settings.js';

export function renderLoadBalancer(spec: LoadBalancerSpec, settings: RenderSettings, target: RenderTarget): RenderedLoadBalancer {
  const views = new ViewBuilder(spec, settings, target);
  const haproxyListeners = views.haproxyListeners();
  const haproxyConfig = haproxyListeners.length > 0 ? renderTemplate('haproxy/haproxy.cfg.njk', views.build()) : null;
  // crt-lists for every TLS listener, enabled or not: they are small, and a
  // listener switched on later must not wait for its file.
  const crtLists = haproxyListeners
    .filter((l) => l.default_tls_container_ref !== undefined)
    .map((l) => ({
      path: views.crtListPath(l.id),
      content: [l.default_tls_container_ref!, ...l.sni_container_refs].map((f) => `${views.certPath(f)}\n`).join(''),
    }));
  const lvsConfigs = lvsViews(spec, settings).map((v) => ({
    listenerId: v.listenerId,
    content: renderTemplate('keepalived/lvs.cfg.njk', v),
  }));
  return { haproxyConfig, crtLists, lvsConfigs };
}

/**
 * The server lines `member` has in the config rendered from `spec`, by
 * backend (a pool has one backend per listener that uses it). They come from
 * the template itself, rendered with every other member left out, so the
 * cost does not grow with the pools' sizes.
 */
export function renderMemberLines(
  spec: LoadBalancerSpec,
  poolId: string,
  member: MemberSpec,
  settings: RenderSettings,
  target: RenderTarget,
): Map<string, string> {
  const only = (p: PoolSpec): PoolSpec => ({ ...p, members: p.id === poolId ? [member] : [] });
  const alone: LoadBalancerSpec = {
    ...spec,
    pools: spec.pools.map(only),
    listeners: spec.listeners.map((l) => (l.default_pool ? { ...l, default_pool: only(l.default_pool) } : l)),
  };
  const text = renderLoadBalancer(alone, settings, target).haproxyConfig ?? '';
  const lines = new Map<string, string>();
  let backend: string | null = null;
  for (const line of text.split('\n')) {
    if (line.startsWith('backend ')) backend = line.slice('backend '.length);
    else if (!line.startsWith(' ')) backend = null;
    else if (backend?.startsWith(`${poolId}:`) && line.startsWith(`    server ${member.id} `)) lines.set(backend, line);
  }
  return lines;
}
