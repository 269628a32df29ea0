// The accepted spec of each API 2.0 load balancer, with its ETag and the
// fingerprints of the certificate files it was applied with (a changed
// certificate needs a reload even when the rendered config is the same).
//
// On disk: spec.json, the spec as of the last whole-spec PUT (or the last
// compaction), and spec.journal, the member changes since, one JSON line
// each. A member call then writes a few hundred bytes instead of the whole
// spec, so its cost does not grow with the load balancer; the journal is
// folded into spec.json every JOURNAL_LIMIT changes.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { LoadBalancerSpec, MemberSpec, PoolSpec } from '../model/spec/types.js';
import { poolsById, withMember } from '../model/spec/pools.js';
import { readTextIfExists, removeFile } from '../system/files.js';

export interface StoredSpec {
  spec: LoadBalancerSpec;
  etag: string;
  /** Certificate file name -> sha256 of its content, at the last apply. */
  certificates: Record<string, string>;
}

/** One member change of the journal: the member as it is now (or its removal) and the spec's ETag after it. */
export interface MemberChange {
  pool: string;
  member: string;
  /** The member's new spec; absent when it was removed. */
  spec?: MemberSpec;
  etag: string;
}

/** Member changes kept in the journal before they are folded into spec.json. */
export const JOURNAL_LIMIT = 200;

export interface SpecFiles {
  /** The accepted spec and its ETag, as of the last whole-spec PUT or compaction. */
  spec: string;
  /** The member calls since spec.json, one JSON line each. */
  journal: string;
}

/**
 * API 2.0's files in a load balancer's directory (haproxy/layout.ts names
 * the directory and the engine's files; these are only this layer's).
 */
export function specFiles(lbDir: string): SpecFiles {
  return { spec: join(lbDir, 'spec.json'), journal: join(lbDir, 'spec.journal') };
}

/** A stored spec with the journal text that leads to it from spec.json. */
export interface JournaledSpec {
  stored: StoredSpec;
  journal: string;
  /** Changes in the journal. */
  changes: number;
}

const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');

// A pool's members count by a sum of one term per member: the hash of the
// member's canonical JSON and of the id before it (so order counts), modulo
// 2^256. Terms are kept per member object and sums per member list: stored
// specs share the objects a member call did not touch, so the ETag after a
// member call takes the old sum, less the terms of the one member changed
// and of the one after it, plus their new terms. Its cost does not grow
// with the pool; a whole-spec PUT hashes each member once, as before.
const terms = new WeakMap<MemberSpec, { prev: string; term: bigint }>();
const sums = new WeakMap<MemberSpec[], bigint>();

function term(list: MemberSpec[], i: number): bigint {
  const m = list[i]!;
  const prev = i > 0 ? list[i - 1]!.id : '';
  const kept = terms.get(m);
  if (kept?.prev === prev) return kept.term;
  const t = BigInt(`0x${sha256(`${prev}\n${JSON.stringify(m, sortedKeys)}`)}`);
  terms.set(m, { prev, term: t });
  return t;
}

/** The terms of list[from] up to list[to - 1] (as far as the list goes). */
function termsOf(list: MemberSpec[], from: number, to: number): bigint {
  let s = 0n;
  for (let i = from; i < Math.min(to, list.length); i++) s += term(list, i);
  return s;
}

/**
 * `after`'s sum from `before`'s when one member was put or removed (the same
 * objects around it), else null. Pointer comparisons only, no hashing.
 */
function sumAfterOneChange(before: MemberSpec[], after: MemberSpec[], sum: bigint): bigint | null {
  const shorter = Math.min(before.length, after.length);
  let i = 0;
  while (i < shorter && before[i] === after[i]) i++;
  let same = 0; // members equal at the end
  while (same < shorter - i && before[before.length - 1 - same] === after[after.length - 1 - same]) same++;
  const endBefore = before.length - same;
  const endAfter = after.length - same;
  if (endBefore - i > 1 || endAfter - i > 1) return null;
  // The changed stretch and the member after it, whose predecessor changed with it.
  return sum - termsOf(before, i, endBefore + 1) + termsOf(after, i, endAfter + 1);
}

function membersDigest(list: MemberSpec[], before: MemberSpec[] | undefined): string {
  let sum = sums.get(list);
  if (sum === undefined) {
    const old = before && sums.get(before);
    sum = BigInt.asUintN(256, (old !== undefined && before ? sumAfterOneChange(before, list, old) : null) ?? termsOf(list, 0, list.length));
    sums.set(list, sum);
  }
  return `${list.length}:${sum.toString(16)}`;
}

/**
 * A strong ETag of the spec with its defaults filled in: the same spec,
 * however written, has one ETag. Everything but the members counts by its
 * canonical JSON, each pool's members by their sum (above). `previous`, the
 * spec a member call changed, lets that sum be updated instead of counted again.
 */
export function specEtag(spec: LoadBalancerSpec, previous?: LoadBalancerSpec): string {
  const before = previous ? poolsById(previous) : undefined;
  const skeleton = JSON.stringify(spec, function (this: unknown, key, value) {
    if (key !== 'members' || !Array.isArray(value)) return sortedKeys(key, value);
    return membersDigest(value as MemberSpec[], before?.get((this as PoolSpec).id)?.members);
  });
  return `"${sha256(skeleton).slice(0, 32)}"`;
}

/** JSON.stringify replacer: every object's keys in code-unit order (native stringify, ~2x a hand-written walk). */
function sortedKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const sorted: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort()) sorted[k] = (value as Record<string, unknown>)[k];
  return sorted;
}

/** The stored spec: spec.json with the journal's member changes applied. */
export async function readStoredSpec(files: SpecFiles): Promise<JournaledSpec | null> {
  const text = await readTextIfExists(files.spec);
  if (!text) return null;
  let stored = JSON.parse(text) as StoredSpec;
  const journal = (await readTextIfExists(files.journal)) ?? '';
  const lines = journal.split('\n').filter((l) => l !== '');
  for (const line of lines) stored = applyMemberChange(stored, JSON.parse(line) as MemberChange);
  return { stored, journal, changes: lines.length };
}

/** The spec after one journal entry. */
export function applyMemberChange(stored: StoredSpec, c: MemberChange): StoredSpec {
  return { ...stored, spec: withMember(stored.spec, c.pool, c.member, c.spec ?? null), etag: c.etag };
}

/** spec.json's content after a whole-spec PUT or a compaction (the journal is emptied with it). */
export function storedSpecText(stored: StoredSpec): string {
  return JSON.stringify(stored);
}

/** One journal line. */
export function journalLine(c: MemberChange): string {
  return `${JSON.stringify(c)}\n`;
}

export async function removeStoredSpec(files: SpecFiles): Promise<void> {
  await removeFile(files.journal);
  await removeFile(files.spec);
}

/** Every certificate file a spec names. */
export function certificateFiles(spec: LoadBalancerSpec): string[] {
  const names = new Set<string>();
  for (const l of spec.listeners) {
    for (const f of [l.default_tls_container_ref, ...l.sni_container_refs, l.client_ca_tls_container_ref, l.client_crl_container_ref]) {
      if (f !== undefined) names.add(f);
    }
  }
  for (const p of poolsById(spec).values()) {
    for (const f of [p.tls_container_ref, p.ca_tls_container_ref, p.crl_container_ref]) if (f !== undefined) names.add(f);
  }
  return [...names].sort();
}
