// The accepted spec of each API 2.0 load balancer, with its ETag and the
// fingerprints of the certificate files it was applied with (a changed
// certificate needs a reload even when the rendered config is the same).
import { createHash } from 'node:crypto';
import type { LoadBalancerSpec } from '../spec/types.js';
import { poolsById } from '../spec/pools.js';
import { readTextIfExists, removeFile } from '../system/files.js';

export interface StoredSpec {
  spec: LoadBalancerSpec;
  etag: string;
  /** Certificate file name -> sha256 of its content, at the last apply. */
  certificates: Record<string, string>;
}

/** A strong ETag of the spec with its defaults filled in: the same spec, however written, has one ETag. */
export function specEtag(spec: LoadBalancerSpec): string {
  return `"${createHash('sha256').update(JSON.stringify(spec, sortedKeys)).digest('hex').slice(0, 32)}"`;
}

/** JSON.stringify replacer: every object's keys in code-unit order (native stringify, ~2x a hand-written walk). */
function sortedKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const sorted: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort()) sorted[k] = (value as Record<string, unknown>)[k];
  return sorted;
}

export async function readStoredSpec(path: string): Promise<StoredSpec | null> {
  const text = await readTextIfExists(path);
  return text ? (JSON.parse(text) as StoredSpec) : null;
}

/** The file's content; the engine writes it along with the config (applyChange's companions). */
export function storedSpecText(stored: StoredSpec): string {
  return JSON.stringify(stored);
}

export async function removeStoredSpec(path: string): Promise<void> {
  await removeFile(path);
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
