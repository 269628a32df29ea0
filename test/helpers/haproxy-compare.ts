// Semantic comparison of two haproxy configurations, for parity tests against
// Octavia's renderer. Two configs are "the same" when haproxy would read them the
// same way, as far as these rules go:
//
// * Lines are split into words the way haproxy's parse_line does (quotes,
//   backslash escapes, '#' comments), then written back in one canonical form:
//   whitespace runs, `"a b"` vs `a\ b` and comments make no difference.
// * Sections are keyed "<keyword> <name>" (`global`, `defaults`, `peers X`,
//   `frontend X`, `backend X`, ...); section order does not matter.
// * Inside a section lines compare as multisets, except that the relative order
//   of lines with the same first keyword among acl, http-request, redirect,
//   use_backend and server must be the same (haproxy evaluates those in order).
// * Server lines compare by server name, address and options, whatever the
//   option order; a repeated option keeps its last value, as in haproxy
//   (Octavia writes `verify none` and later `verify required`).
// * `http-check expect rstatus A|B|C` compares the alternatives as a set
//   (Octavia builds the list from a Python set).
//
// diffConfigs(ours, theirs) reports what `ours` lacks ('missing-*') or has in
// addition ('extra-*') compared with `theirs` (the reference).

import { tokenizeLine } from '../../agent/haproxy/config/tokenizer.js';

export type DifferenceKind = 'missing-section' | 'extra-section' | 'missing-line' | 'extra-line' | 'server-option' | 'order';

export interface Difference {
  section: string;
  kind: DifferenceKind;
  detail: string;
}

export interface ServerLine {
  name: string;
  address: string;
  /** Option keyword -> its arguments (none for a flag). */
  options: Map<string, string[]>;
}

export interface Directive {
  /** First word. */
  keyword: string;
  /** The normalised line. */
  text: string;
  server?: ServerLine;
}

export interface Section {
  /** "<keyword> <name>", or just the keyword (global, defaults). */
  key: string;
  directives: Directive[];
}

/** Sections by key, in file order. */
export type HaproxyConfig = Map<string, Section>;

const SECTION_KEYWORDS = new Set([
  'global',
  'defaults',
  'frontend',
  'backend',
  'listen',
  'peers',
  'resolvers',
  'userlist',
  'mailers',
  'cache',
  'program',
  'http-errors',
  'ring',
  'log-forward',
]);

/** Lines whose relative order (among lines of the same keyword) matters to haproxy. */
const ORDERED_KEYWORDS = ['acl', 'http-request', 'redirect', 'use_backend', 'server'];

/**
 * Number of arguments of the server keywords (Octavia's and a few common others).
 * A keyword not listed is taken as a flag: a following argument then shows up as
 * a flag of its own, which still compares, only less readably.
 */
const SERVER_KEYWORD_ARGS: Record<string, number> = {
  weight: 1,
  check: 0,
  'check-ssl': 0,
  inter: 1,
  fastinter: 1,
  downinter: 1,
  fall: 1,
  rise: 1,
  addr: 1,
  port: 1,
  cookie: 1,
  'send-proxy': 0,
  'send-proxy-v2': 0,
  'send-proxy-v2-ssl-cn': 0,
  'send-proxy-v2-ssl': 0,
  backup: 0,
  disabled: 0,
  enabled: 0,
  ssl: 0,
  'no-ssl': 0,
  crt: 1,
  'ca-file': 1,
  'crl-file': 1,
  verify: 1,
  verifyhost: 1,
  sni: 1,
  'check-sni': 1,
  ciphers: 1,
  ciphersuites: 1,
  'no-sslv3': 0,
  'no-tlsv10': 0,
  'no-tlsv11': 0,
  'no-tlsv12': 0,
  'no-tlsv13': 0,
  'ssl-min-ver': 1,
  'ssl-max-ver': 1,
  alpn: 1,
  'check-alpn': 1,
  'check-proto': 1,
  proto: 1,
  'init-state': 1,
  maxconn: 1,
  minconn: 1,
  maxqueue: 1,
  slowstart: 1,
  id: 1,
  observe: 1,
  'on-error': 1,
  'on-marked-down': 1,
  'on-marked-up': 1,
  'error-limit': 1,
  'agent-check': 0,
  'agent-port': 1,
  'agent-inter': 1,
  'agent-addr': 1,
  'agent-send': 1,
  resolvers: 1,
  'resolve-prefer': 1,
  source: 1,
  track: 1,
  redir: 1,
  'non-stick': 0,
  tfo: 0,
  'pool-max-conn': 1,
  'pool-purge-delay': 1,
  namespace: 1,
  'check-send-proxy': 0,
};

/** The words haproxy reads from one line (quotes and escapes resolved, comment dropped): the agent's own tokenizer. */
export function haproxyWords(line: string): string[] {
  return tokenizeLine(line).words;
}

/** One canonical spelling of a word: backslash escapes only, no quotes. */
export function canonicalWord(value: string): string {
  if (value === '') return '""';
  let out = '';
  for (const c of value) {
    const code = c.charCodeAt(0);
    if (c === '\\' || c === ' ' || c === '#' || c === '"' || c === "'") out += `\\${c}`;
    else if (c === '\t') out += '\\t';
    else if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += c;
  }
  return out;
}

function parseServer(words: string[]): ServerLine {
  const [, name = '', address = '', ...rest] = words;
  const options = new Map<string, string[]>();
  for (let i = 0; i < rest.length; ) {
    const keyword = rest[i]!;
    const n = SERVER_KEYWORD_ARGS[keyword] ?? 0;
    options.set(keyword, rest.slice(i + 1, i + 1 + n)); // a repeated keyword keeps its last value
    i += 1 + n;
  }
  return { name, address, options };
}

/** `http-check expect [!] rstatus 204|200|202` -> alternatives sorted (when the regex is a plain alternation). */
function sortRstatus(words: string[]): string[] {
  const at = words.indexOf('rstatus');
  if (words[0] !== 'http-check' || words[1] !== 'expect' || at < 0 || at !== words.length - 2) return words;
  const regex = words[at + 1]!;
  if (/[()[\]]/.test(regex)) return words;
  return [...words.slice(0, at + 1), [...new Set(regex.split('|'))].sort().join('|')];
}

export function parseHaproxyConfig(text: string): HaproxyConfig {
  const sections: HaproxyConfig = new Map();
  let current: Section | null = null;
  for (const raw of text.split('\n')) {
    const words = haproxyWords(raw);
    if (words.length === 0) continue;
    const encoded = words.map(canonicalWord);
    const keyword = words[0]!;
    if (SECTION_KEYWORDS.has(keyword)) {
      const key = encoded.join(' ');
      current = sections.get(key) ?? { key, directives: [] };
      sections.set(key, current);
      continue;
    }
    if (!current) {
      current = { key: '(before any section)', directives: [] };
      sections.set(current.key, current);
    }
    const directive: Directive = { keyword, text: sortRstatus(encoded).join(' ') };
    if (keyword === 'server') directive.server = parseServer(encoded);
    current.directives.push(directive);
  }
  return sections;
}

function counts(items: string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const i of items) m.set(i, (m.get(i) ?? 0) + 1);
  return m;
}

/** Items of `list` (in order) that are left after taking away what `other` lacks. */
function commonInOrder(list: string[], other: string[]): string[] {
  const budget = counts(other);
  const out: string[] = [];
  for (const item of list) {
    const n = budget.get(item) ?? 0;
    if (n > 0) {
      out.push(item);
      budget.set(item, n - 1);
    }
  }
  return out;
}

/** Entries of `list` not matched by one in `other`, counting repeats. */
function unmatched(list: string[], other: string[]): string[] {
  const budget = counts(other);
  const out: string[] = [];
  for (const item of list) {
    const n = budget.get(item) ?? 0;
    if (n > 0) budget.set(item, n - 1);
    else out.push(item);
  }
  return out;
}

function serverText(s: ServerLine): string {
  return ['server', s.name, s.address, ...[...s.options].flatMap(([k, v]) => [k, ...v])].join(' ');
}

function serversByName(section: Section): Map<string, ServerLine> {
  const m = new Map<string, ServerLine>();
  for (const d of section.directives) {
    if (!d.server) continue;
    let name = d.server.name;
    for (let n = 2; m.has(name); n++) name = `${d.server.name} (${n})`;
    m.set(name, d.server);
  }
  return m;
}

function diffServers(key: string, ours: Section, theirs: Section, out: Difference[]): void {
  const a = serversByName(ours);
  const b = serversByName(theirs);
  for (const [name, s] of b) if (!a.has(name)) out.push({ section: key, kind: 'missing-line', detail: serverText(s) });
  for (const [name, s] of a) if (!b.has(name)) out.push({ section: key, kind: 'extra-line', detail: serverText(s) });
  for (const [name, theirsServer] of b) {
    const oursServer = a.get(name);
    if (!oursServer) continue;
    const report = (detail: string) => out.push({ section: key, kind: 'server-option', detail: `server ${name}: ${detail}` });
    if (oursServer.address !== theirsServer.address) report(`address ${oursServer.address} (ours) vs ${theirsServer.address} (theirs)`);
    for (const [opt, args] of theirsServer.options) {
      const mine = oursServer.options.get(opt);
      if (!mine) report(`missing option ${[opt, ...args].join(' ')}`);
      else if (mine.join(' ') !== args.join(' ')) report(`${opt} ${mine.join(' ')} (ours) vs ${opt} ${args.join(' ')} (theirs)`);
    }
    for (const [opt, args] of oursServer.options) {
      if (!theirsServer.options.has(opt)) report(`extra option ${[opt, ...args].join(' ')}`);
    }
  }
}

function diffOrder(key: string, ours: Section, theirs: Section, out: Difference[]): void {
  for (const keyword of ORDERED_KEYWORDS) {
    const seq = (s: Section) => s.directives.filter((d) => d.keyword === keyword).map((d) => d.server?.name ?? d.text);
    const a = seq(ours);
    const b = seq(theirs);
    const ca = commonInOrder(a, b);
    const cb = commonInOrder(b, a);
    const at = ca.findIndex((item, i) => item !== cb[i]);
    if (at >= 0) {
      out.push({
        section: key,
        kind: 'order',
        detail: `${keyword} lines in another order: #${at + 1} is "${ca[at]}" in ours, "${cb[at]}" in theirs`,
      });
    }
  }
}

function diffSection(key: string, ours: Section, theirs: Section, out: Difference[]): void {
  const plain = (s: Section) => s.directives.filter((d) => !d.server).map((d) => d.text);
  for (const line of unmatched(plain(theirs), plain(ours))) out.push({ section: key, kind: 'missing-line', detail: line });
  for (const line of unmatched(plain(ours), plain(theirs))) out.push({ section: key, kind: 'extra-line', detail: line });
  diffServers(key, ours, theirs, out);
  diffOrder(key, ours, theirs, out);
}

/** Differences of `ours` against `theirs` (the reference); empty when they are equivalent. */
export function diffConfigs(ours: string | HaproxyConfig, theirs: string | HaproxyConfig): Difference[] {
  const a = typeof ours === 'string' ? parseHaproxyConfig(ours) : ours;
  const b = typeof theirs === 'string' ? parseHaproxyConfig(theirs) : theirs;
  const out: Difference[] = [];
  for (const [key, section] of b) {
    const mine = a.get(key);
    if (mine) diffSection(key, mine, section, out);
    else out.push({ section: key, kind: 'missing-section', detail: `${key} (${section.directives.length} lines)` });
  }
  for (const [key, section] of a) {
    if (!b.has(key)) out.push({ section: key, kind: 'extra-section', detail: `${key} (${section.directives.length} lines)` });
  }
  return out;
}

/** One line per difference, for assertion messages. */
export function formatDifferences(diffs: Difference[]): string {
  return diffs.map((d) => `[${d.section}] ${d.kind}: ${d.detail}`).join('\n');
}
