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
import type { LoadBalancerSpec, MemberSpec } from '../spec/types.js';
import { poolsById, withMember } from '../spec/pools.js';
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
  spec: string;
  journal: string;
}

/** A stored spec with the journal text that leads to it from spec.json. */
export interface JournaledSpec {
  stored: StoredSpec;
  journal: string;
  /** Changes in the journal. */
  changes: number;
}

const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');

// A member's digest, kept while the member object lives: stored specs share
// the member objects a member call did not touch, so an ETag after a member
// call hashes one member and a list of digests, not the whole spec.
const memberDigests = new WeakMap<MemberSpec, string>();

function memberDigest(m: MemberSpec): string {
  let d = memberDigests.get(m);
  if (d === undefined) {
    d = sha256(JSON.stringify(m, sortedKeys));
    memberDigests.set(m, d);
  }
  return d;
}

/**
 * A strong ETag of the spec with its defaults filled in: the same spec,
 * however written, has one ETag. Everything but the members counts by its
 * canonical JSON, each pool's members by their digests in order (kept per
 * member object, so after a member call only that member is hashed again).
 */
export function specEtag(spec: LoadBalancerSpec): string {
  const memberLists: MemberSpec[][] = [];
  const skeleton = JSON.stringify(spec, (key, value) => {
    if (key !== 'members' || !Array.isArray(value)) return sortedKeys(key, value);
    memberLists.push(value as MemberSpec[]);
    return memberLists.length - 1;
  });
  const hash = createHash('sha256').update(skeleton);
  for (const list of memberLists) {
    hash.update(`\n${list.length}`);
    for (const m of list) hash.update(memberDigest(m));
  }
  return `"${hash.digest('hex').slice(0, 32)}"`;
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
