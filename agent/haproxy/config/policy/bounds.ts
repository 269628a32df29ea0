// What haproxy reserves when it starts (cache sizes, the TLS session cache,
// threads), bounded by the amphora's CPU count and memory so that a reload,
// which holds the old and the new worker at once, cannot exhaust it.
// Pure: text and facts in, violations out.
//
// Measured (RSS of the worker right after start, and the size of the mapping
// it makes, haproxy 2.6.12 / 3.0.11 / 3.2.26 / 3.4.7, one thread, maxconn 5000):
//  - tune.ssl.cachesize: one mapping of 248 B a session (242,188 kB for
//    1,000,000), touched at start by 2.6, 3.2 and 3.4 (+238 MB RSS), by 3.0
//    as sessions come; either way held until the worker exits. Counted at
//    the 248 B measured (Octavia 16 assumes 200, 19 250), haproxy's default
//    of 20,000 when a bind has `ssl` and the directive is absent.
//  - cache `total-max-size`: one mapping of 1.047 times the size (548,868 kB
//    for 512 MB), touched at start by 3.2 and 3.4 (+550 MB RSS), filled by
//    traffic on 2.6 and 3.0 and then held. Counted at 1.05 times.
//  - ring `size`: a buffer of that size (+14 MB RSS at start for 256 MB on
//    3.2), filled by the logs it carries and held. Counted whole.
//  - nbthread: 0.2 (2.6), 0.3 (3.0, 3.2) and 0.57 MB (3.4) a thread; no
//    throughput past one thread a CPU. `thread-groups` likewise.
//  - Not reserved at start, left as sent: maxconn (1,000 and 9,000 within
//    0.2 MB), stick-table size (100m entries: +0.1 MB), tune.bufsize (16 MB:
//    +0.4 MB); they cap what traffic may use later.
import { tokenizeLine } from '../tokenizer.js';
import type { AmphoraFacts } from '../../../render/settings.js';
import type { PolicyContext, PolicyViolation } from './types.js';

/** kB a TLS session takes in tune.ssl.cachesize (measured on all four haproxy series). */
export const SSL_SESSION_KB = 248 / 1024;
/** haproxy's tune.ssl.cachesize when a bind uses TLS and the directive is absent. */
export const DEFAULT_SSL_CACHESIZE = 20000;
/** A cache section's mapping over its total-max-size (measured 1.047). */
export const CACHE_OVERHEAD = 1.05;
/**
 * Memory kept out of the budget for what a reload starts besides the
 * reservations: the new worker itself (9 to 29 MB RSS measured, 3.4 the
 * largest) and its threads (0.57 MB each at most). At most a tenth of the
 * memory, so that Octavia 19's TLS session cache (2/5 of it, LP #2119987)
 * fits on any amphora with a margin of a twentieth for memory that moved
 * between the controller's /1.0/details and its upload.
 */
export const RELOAD_FLOOR_KB = 64 * 1024;

/** Sections of haproxy's config: a `cache` or `ring` section ends at the next of them. */
const SECTIONS = new Set([
  'global',
  'defaults',
  'frontend',
  'backend',
  'listen',
  'peers',
  'userlist',
  'resolvers',
  'mailers',
  'program',
  'http-errors',
  'ring',
  'cache',
  'crt-store',
  'traces',
  'log-forward',
  'fcgi-app',
  'dynamic-update',
  'acme',
]);

/** Keywords bounded here; with SECTIONS, the first words of the lines that matter. */
const BOUNDED_WORDS = ['nbthread', 'thread-groups', 'tune.ssl.cachesize', 'total-max-size', 'size', 'bind'];
const FIRST_WORDS = new Set([...SECTIONS, ...BOUNDED_WORDS]);
/** A quote or an escape, which could spell a keyword otherwise. */
const QUOTED = /["'\\]/;

/** Whether a line may matter here; the others (most of a 10,000-member config) skip the full read. */
function mayMatter(raw: string): boolean {
  let start = 0;
  while (raw[start] === ' ' || raw[start] === '\t') start++;
  let end = start;
  while (end < raw.length && raw[end] !== ' ' && raw[end] !== '\t' && raw[end] !== '#') end++;
  return FIRST_WORDS.has(raw.slice(start, end).toLowerCase()) || QUOTED.test(raw);
}

/** The memory the agent reads, as Octavia 19 sizes from it (/1.0/details: free + buffers + cached, kB). */
export function availableKb(facts: AmphoraFacts): number {
  const { free, buffers, cached } = facts.memoryKb;
  return free + buffers + cached;
}

/**
 * What haproxy may reserve, kB: half of the memory less the floor. Half,
 * because a reload holds the old worker's reservations and the new one's at
 * once, and the reading may already count the old one's as available: 3.x
 * maps its caches shared, which /proc/meminfo counts in Cached (2.6 maps its
 * TLS session cache private, which only makes this bound stricter).
 */
export function reserveBoundKb(facts: AmphoraFacts): number {
  const memory = availableKb(facts);
  return Math.max(0, Math.floor((memory - reloadFloorKb(memory)) / 2));
}

function reloadFloorKb(memory: number): number {
  return Math.min(RELOAD_FLOOR_KB, Math.floor(memory / 10));
}

const mb = (kb: number) => `${Math.round(kb / 1024)} MB`;

interface Reservation {
  line: number;
  directive: string;
  value: string;
  kb: number;
}

export function checkBounds(text: string, ctx: PolicyContext): PolicyViolation[] {
  const facts = ctx.amphora;
  if (!facts) return []; // judged elsewhere than on an amphora (the CLI, tests): nothing to bound by
  const out: PolicyViolation[] = [];
  const reserved: Reservation[] = [];
  let section = '';
  let sslCacheSet = false;
  let firstTlsBind = 0;

  let line = 0;
  const decimal = (directive: string, word: string | undefined): number | null => {
    if (word === undefined) return null; // haproxy -c refuses the missing argument
    if (/^\d+$/.test(word)) return Number(word);
    out.push({ line, directive, reason: `${JSON.stringify(word)} is not a plain decimal number, which the bound on it needs` });
    return null;
  };
  const perCpu = (directive: string, word: string | undefined, what: string) => {
    const n = decimal(directive, word);
    // os.cpus() can be empty in some containers: no count, no bound.
    if (n !== null && facts.cpuCount >= 1 && n > facts.cpuCount) {
      out.push({ line, directive, reason: `${n} ${what} on an amphora with ${facts.cpuCount} CPU(s): at most ${facts.cpuCount}, one a CPU` });
    }
  };

  for (const raw of text.split('\n')) {
    line++;
    if (!mayMatter(raw)) continue;
    const { words, unreadable } = tokenizeLine(raw);
    if (unreadable || words.length === 0) continue; // the words' policy refuses unreadable lines
    const kw = words[0]!.toLowerCase();
    if (SECTIONS.has(kw)) section = kw;
    if (section === 'global') {
      if (kw === 'nbthread') perCpu('nbthread', words[1], 'threads');
      if (kw === 'thread-groups') perCpu('thread-groups', words[1], 'thread groups');
      if (kw === 'tune.ssl.cachesize') {
        sslCacheSet = true;
        const n = decimal(kw, words[1]);
        if (n !== null) reserved.push({ line, directive: kw, value: `${n} sessions`, kb: n * SSL_SESSION_KB });
      }
    } else if (section === 'cache' && kw === 'total-max-size') {
      const n = decimal(`cache ${kw}`, words[1]);
      if (n !== null) reserved.push({ line, directive: `cache ${kw}`, value: `${n} MB`, kb: n * 1024 * CACHE_OVERHEAD });
    } else if (section === 'ring' && kw === 'size') {
      const n = decimal('ring size', words[1]);
      if (n !== null) reserved.push({ line, directive: 'ring size', value: `${n} bytes`, kb: n / 1024 });
    } else if (kw === 'bind' && firstTlsBind === 0 && words.includes('ssl')) {
      firstTlsBind = line;
    }
  }
  if (!sslCacheSet && firstTlsBind > 0) {
    const kb = DEFAULT_SSL_CACHESIZE * SSL_SESSION_KB;
    reserved.push({ line: firstTlsBind, directive: 'bind ssl', value: `haproxy's default TLS session cache (${DEFAULT_SSL_CACHESIZE} sessions)`, kb });
  }

  const memory = availableKb(facts);
  if (memory <= 0) return out; // /proc/meminfo unreadable: no memory to bound by
  const bound = reserveBoundKb(facts);
  const why =
    `the bound for this amphora is ${mb(bound)}: half of the ${mb(memory)} it has free, in buffers and cached, ` +
    `less ${mb(reloadFloorKb(memory))} for the new worker, so the old and the new worker of a reload both fit`;
  const total = reserved.reduce((sum, r) => sum + r.kb, 0);
  if (total <= bound) return out;
  // The reservations from the one that crosses the bound on, each with its share and the total.
  let sum = 0;
  for (const r of reserved.sort((a, b) => a.line - b.line)) {
    sum += r.kb;
    if (sum > bound) {
      out.push({ line: r.line, directive: r.directive, reason: `${r.value} reserves ${mb(r.kb)}, of ${mb(total)} haproxy would reserve at start; ${why}` });
    }
  }
  return out;
}
