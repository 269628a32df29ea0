// A spec defines pools in two places (shared `pools[]` and inline
// `default_pool`s) and refers to them by id: this resolves them in a valid
// spec. validate.ts walks both places itself, since it must name duplicates
// and dangling ids by their field paths.
import type { ListenerSpec, LoadBalancerSpec, PoolSpec } from './types.js';

/** Every pool of a valid spec by id, shared and inline. */
export function poolsById(spec: LoadBalancerSpec): Map<string, PoolSpec> {
  const pools = new Map<string, PoolSpec>();
  for (const p of spec.pools) pools.set(p.id, p);
  for (const l of spec.listeners) if (l.default_pool) pools.set(l.default_pool.id, l.default_pool);
  return pools;
}

/** A listener's default pool, inline or by id. */
export function defaultPoolOf(l: ListenerSpec, pools: Map<string, PoolSpec>): PoolSpec | undefined {
  return l.default_pool ?? (l.default_pool_id !== undefined ? pools.get(l.default_pool_id) : undefined);
}
