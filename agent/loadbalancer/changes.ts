// What a new spec changes compared with the accepted one, object by object,
// in words a control-plane author reads: "member p1/m3 added",
// "member p1/m2 changed: weight 1 -> 5". Pure.
import type { LoadBalancerSpec, MemberSpec, PoolSpec } from '../model/spec/types.js';

type Flat = Map<string, Record<string, unknown>>;

/** Each object of the spec under "<kind> <id>", with its own fields only (children are objects of their own). */
function flatten(spec: LoadBalancerSpec): Flat {
  const out: Flat = new Map();
  const own = (obj: object, children: string[]) => Object.fromEntries(Object.entries(obj).filter(([k]) => !children.includes(k)));
  out.set('load balancer', own(spec, ['listeners', 'pools']));
  const pool = (p: PoolSpec) => {
    out.set(`pool ${p.id}`, own(p, ['members']));
    for (const m of p.members) out.set(`member ${p.id}/${m.id}`, m as unknown as Record<string, unknown>);
  };
  spec.pools.forEach(pool);
  for (const l of spec.listeners) {
    out.set(`listener ${l.id}`, { ...own(l, ['default_pool', 'l7policies']), default_pool_id: l.default_pool?.id ?? l.default_pool_id });
    if (l.default_pool) pool(l.default_pool);
    for (const p of l.l7policies) out.set(`L7 policy ${l.id}/${p.id}`, own(p, []));
  }
  return out;
}

/** Field-by-field equality; arrays and objects compare by their JSON. */
function sameFields(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const k of keys) {
    const x = a[k];
    const y = b[k];
    if (x === y) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null || JSON.stringify(x) !== JSON.stringify(y)) return false;
  }
  return true;
}

export function describeChanges(before: LoadBalancerSpec | null, after: LoadBalancerSpec): string[] {
  if (before === null) return ['load balancer created'];
  const a = flatten(before);
  const b = flatten(after);
  const out: string[] = [];
  for (const [k, v] of b) out.push(...describeObject(k, a.get(k) ?? null, v));
  for (const k of a.keys()) if (!b.has(k)) out.push(`${k} removed`);
  return out;
}

/** The words for one member's change (API 2.0's member calls), as describeChanges says them. */
export function describeMemberChange(poolId: string, before: MemberSpec | null, after: MemberSpec | null): string[] {
  const k = `member ${poolId}/${(after ?? before)!.id}`;
  if (after === null) return before === null ? [] : [`${k} removed`];
  return describeObject(k, before as unknown as Record<string, unknown> | null, after as unknown as Record<string, unknown>);
}

function describeObject(k: string, was: Record<string, unknown> | null, v: Record<string, unknown>): string[] {
  if (!was) return [`${k} added`];
  if (sameFields(was, v)) return [];
  const fields = [...new Set([...Object.keys(was), ...Object.keys(v)])]
    .sort()
    .filter((f) => JSON.stringify(was[f]) !== JSON.stringify(v[f]))
    .map((f) => `${f} ${JSON.stringify(was[f]) ?? '(unset)'} -> ${JSON.stringify(v[f]) ?? '(unset)'}`);
  return fields.length > 0 ? [`${k} changed: ${fields.join(', ')}`] : [];
}
