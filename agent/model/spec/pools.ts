// A spec defines pools in two places (shared `pools[]` and inline
// `default_pool`s) and refers to them by id: this resolves them in a valid
// spec. validate.ts walks both places itself, since it must name duplicates
// and dangling ids by their field paths.
import type { ListenerSpec, LoadBalancerSpec, MemberSpec, PoolSpec } from './types.js';

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

/**
 * The spec with one member of one pool put (replaced where it is, or
 * appended) or removed (`member` null). The result shares every object it
 * did not change with `spec`, which stays as it was.
 */
export function withMember(spec: LoadBalancerSpec, poolId: string, memberId: string, member: MemberSpec | null): LoadBalancerSpec {
  const change = (p: PoolSpec): PoolSpec => {
    const at = p.members.findIndex((m) => m.id === memberId);
    const members = p.members.slice();
    if (member === null) {
      if (at >= 0) members.splice(at, 1);
    } else if (at >= 0) {
      members[at] = member;
    } else {
      members.push(member);
    }
    return { ...p, members };
  };
  return {
    ...spec,
    pools: spec.pools.map((p) => (p.id === poolId ? change(p) : p)),
    listeners: spec.listeners.map((l) => (l.default_pool?.id === poolId ? { ...l, default_pool: change(l.default_pool) } : l)),
  };
}
