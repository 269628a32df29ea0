// The amphora's own facts that size haproxy (RenderTarget.amphora): what
// Octavia 19's controller reads from /1.0/details before it renders, read
// here from the same sources details.ts reports.
import { readFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import type { AmphoraFacts } from '../render/settings.js';

export async function procFile(path: string): Promise<string> {
  return readFile(path, 'utf8').catch(() => '');
}

/** /proc/meminfo as numbers (kB), by field name. */
export function meminfo(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^(\w+\(?\w*\)?):\s+(\d+)/.exec(line);
    if (m) out[m[1]!] = Number(m[2]);
  }
  return out;
}

export async function readAmphoraFacts(): Promise<AmphoraFacts> {
  const [mem, tuned] = await Promise.all([procFile('/proc/meminfo'), procFile('/etc/tuned/active_profile')]);
  const m = meminfo(mem);
  return {
    cpuCount: cpus().length,
    tunedProfiles: tuned.trim().split(/\s+/).filter(Boolean),
    memoryKb: { free: m.MemFree ?? 0, buffers: m.Buffers ?? 0, cached: m.Cached ?? 0 },
  };
}
