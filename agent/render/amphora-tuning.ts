// How haproxy is sized from the amphora it runs on (memory, CPUs, the TuneD
// profile), as Octavia 19 sizes it. Apart from the view builder because
// these follow Octavia's measurements, not the spec. Pure.
import type { AmphoraFacts } from './settings.js';

/**
 * Octavia 19's SSL session cache: 2/5 of the memory left after 32 kB per
 * connection (two sockets' buffers), at about 250 bytes per entry; below
 * haproxy's own default (20000 entries, 5000 kB) it keeps the default. 19
 * took 2/5 instead of 16's 1/2 because a reload briefly runs the old and the
 * new process, each with its cache, and the amphora ran out of memory (LP #2119987).
 */
export function sslCacheSize(facts: AmphoraFacts, maxconn: number): number | null {
  const { free, buffers, cached } = facts.memoryKb;
  const cacheKb = Math.floor(((free + buffers + cached - 32 * maxconn) * 2) / 5);
  return cacheKb > 5000 ? cacheKb * 4 : null;
}

/**
 * Octavia 19's CPU pinning under the amphora TuneD profile: one thread per
 * CPU but the first (which the profile leaves to the kernel and the agent).
 */
export function haproxyThreads(facts: AmphoraFacts): number | null {
  return facts.tunedProfiles.includes('amphora') && facts.cpuCount > 1 ? facts.cpuCount - 1 : null;
}
