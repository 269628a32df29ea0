// What an uploaded haproxy config may say: only what Octavia's templates say.
//
// API 1.0 takes raw configs rendered by the controller. When the controller
// lets tenant values carry newlines into the text (OSSA-2026-039: TLS
// ciphers, L7 redirect URLs, L7 rule values in Octavia before the fix), a
// tenant can add any directive to its amphora's haproxy, which runs as root
// until it drops to `user`. A deny-list of dangerous words missed keywords
// (`bind ... namespace`, `env()`, `uid -0`) and whole classes of lines; so a
// line is accepted only when its section, keyword and argument shape are
// among those Octavia 11, 16 and 19 and the agent's own renderer produce
// (haproxy-allowed.ts), with every argument word of its slot's type:
// numbers, addresses, names, files in the load balancer's own directories,
// the fixed system paths Octavia names, and tenant text without control
// characters. Sample fetches and converters inside expressions are
// allow-listed too. On top of the shapes:
//  - files a line names must be in the load balancer's directories (and are
//    returned for files.ts to check on disk);
//  - the stats socket is this load balancer's unix socket, the log target the
//    amphora's syslog socket, the health-check program Octavia's PING wrapper,
//    and `insecure-fork-wanted` only comes with that check;
//  - `user` is not root; binds and servers are on IP addresses only.
// Pure: text and the load balancer's directories in, the violations out
// (1-based line numbers). Words are read as haproxy reads them
// (tokenizer.ts tokenizeLine: quotes, escapes, comments). This module
// matches the lines; the compiled list is haproxy-allow-list.ts and what a
// slot word may be is haproxy-slots.ts.
import { posix } from 'node:path';
import { certificateDir, pingWrapper, serverStateFile, statsSocket } from '../../../config/layout.js';
import { loadBalancerFiles } from '../../layout.js';
import type { FileReference, PolicyContext, PolicyViolation } from './types.js';
import { SECTION_KEYWORDS, tokenizeLine } from '../tokenizer.js';
import { allowListFor, type Pattern, type Token } from './haproxy-allow-list.js';
import { expressionProblem, logFormatProblem, NAME, PRINTABLE, WORD_SLOTS } from './haproxy-slots.js';

/** The PING health check's program, as Octavia's templates (11 to 19) name it. */
export const OCTAVIA_PING_WRAPPER = '/var/lib/octavia/ping-wrapper.sh';

/** The syslog sockets Octavia's templates (11 to 19) send haproxy's logs to. */
export const LOCAL_LOG_TARGETS = ['/run/rsyslog/octavia/log', '/dev/log'];

const stripSlash = (d: string) => posix.normalize(d).replace(/\/+$/, '');

/** `path` is an absolute path inside one of `dirs` (after resolving `.` and `..`). */
export function insideDirs(path: string, dirs: string[]): boolean {
  if (!path.startsWith('/') || path.includes('\0')) return false;
  const p = posix.normalize(path);
  return dirs.some((d) => p.startsWith(`${stripSlash(d)}/`));
}

/** Keywords whose second word is part of the directive's name in a refusal (`stats socket`, `http-request return`). */
const TWO_WORD_DIRECTIVES = new Set([
  'option',
  'no',
  'timeout',
  'stats',
  'http-request',
  'http-response',
  'http-after-response',
  'http-check',
  'tcp-request',
  'tcp-response',
  'redirect',
  'stick',
  'external-check',
  'http-error',
  'tcp-check',
]);

/** A failed match: how far it got (the furthest match gives the reason) and why it stopped. */
interface Miss {
  at: number;
  why: string;
}

/** The violations of a config's words. */
export function checkConfigPolicy(text: string, ctx: PolicyContext): PolicyViolation[] {
  return readConfigPolicy(text, ctx).violations;
}

/**
 * The violations of a config's words, and the files it names (for files.ts).
 * `allowed`: another list than Octavia's and the context's extension (the test that regenerates the list).
 */
export function readConfigPolicy(text: string, ctx: PolicyContext, allowed = allowListFor(ctx)): { violations: PolicyViolation[]; files: FileReference[] } {
  const out: PolicyViolation[] = [];
  const files: FileReference[] = [];
  const { dir: lbDir, masterSocket } = loadBalancerFiles(ctx.basePath, ctx.lbId);
  const certDir = certificateDir(ctx.baseCertDir, ctx.lbId);
  const ownDirs = [lbDir, certDir];
  const protectedFiles = new Set(ctx.protectedFiles.map((f) => posix.normalize(f)));
  // Octavia's template names the wrapper by this fixed path, whatever base_path is.
  const ownPingWrapper = pingWrapper(ctx.basePath);
  const pingWrappers = [ownPingWrapper, OCTAVIA_PING_WRAPPER];
  const ownSocket = statsSocket(ctx.basePath, ctx.lbId);
  let pingCommand = false; // external checks (only Octavia's PING wrapper) are configured
  const forkLines: number[] = [];
  let section = '';

  let line = 0; // the line being read, 1-based
  let pending: FileReference[] = []; // the files of the line being matched, kept once it matches
  const refuse = (directive: string, reason: string) => out.push({ line, directive, reason });

  const file = (path: string, dirs: string[], where: string, kind: FileReference['kind']): string | null => {
    if (!insideDirs(path, dirs)) return `${JSON.stringify(path)} is outside ${where}`;
    if (protectedFiles.has(posix.normalize(path))) return `${JSON.stringify(path)} is one of the agent's own files`;
    pending.push({ line, directive: '', path, kind });
    return null;
  };

  const expression = (e: string): string | null => expressionProblem(e, allowed);
  const logFormat = (w: string): string | null => logFormatProblem(w, allowed);

  /** Why `w` does not fit the slot, or null when it does. */
  const slotWord = (slot: string, w: string): string | null => {
    switch (slot) {
      case 'lb-file':
        return file(w, ownDirs, `the load balancer's directories (${lbDir}/, ${certDir}/)`, 'file');
      case 'state-file': {
        // The agent writes the state dump there before each reload: any other name would let a config
        // overwrite the load balancer's own files (its accepted config, master socket, certificates).
        const stateFile = serverStateFile(ctx.basePath, ctx.lbId);
        return posix.normalize(w) === stateFile ? file(w, [lbDir], `${lbDir}/`, 'file') : `names ${JSON.stringify(w)}; the server state file is ${stateFile}`;
      }
      case 'cert-file':
        return file(w, [certDir], `the load balancer's certificate directory (${certDir}/)`, 'certificate');
      case 'crt-list':
        return file(w, [certDir], `the load balancer's certificate directory (${certDir}/)`, 'crt-list');
      case 'stats-socket': {
        const addr = w.replace(/^unix@/, '');
        const ok = addr === ownSocket || (insideDirs(addr, [lbDir]) && posix.normalize(addr) !== masterSocket && addr.endsWith('.sock'));
        return ok ? null : `listens on ${JSON.stringify(w)}; only ${ownSocket} or a .sock file in ${lbDir}/ may be used`;
      }
      case 'syslog':
        return LOCAL_LOG_TARGETS.includes(w.replace(/^unix@/, ''))
          ? null
          : `sends logs to ${JSON.stringify(w)}; only the amphora's syslog socket (${LOCAL_LOG_TARGETS.join(', ')}) may be used`;
      case 'ping-wrapper':
        return pingWrappers.includes(w) ? null : `runs ${JSON.stringify(w)}; only Octavia's ${ownPingWrapper} may run`;
      case 'fetch':
        return expression(w);
      case 'log-format':
        return logFormat(w);
      default: {
        const check = WORD_SLOTS[slot];
        if (!check) return `<${slot}> cannot be one word`;
        return check(w) ? null : `${JSON.stringify(w)} is not ${article(slot)} <${slot}>`;
      }
    }
  };

  /** One token against the word at i: the next index, or a miss. */
  const token = (t: Token, words: string[], i: number): number | Miss => {
    const w = words[i];
    if (w === undefined) return { at: i, why: `ends before ${describe(t)}` };
    if (t.kind === 'word' || t.kind === 'choice') {
      return t.words!.has(w) ? i + 1 : { at: i, why: `${JSON.stringify(w)} where ${describe(t)} is allowed` };
    }
    const why = slotWord(t.slot!, w);
    return why === null ? i + 1 : { at: i, why };
  };

  /** Options of server/bind lines: any allowed keyword, each followed by its value. */
  const optionList = (options: Map<string, Token | null>, what: string, words: string[], i: number): Miss | null => {
    while (i < words.length) {
      const w = words[i]!;
      if (!options.has(w)) return { at: i, why: `${JSON.stringify(w)} is not an option of ${what} lines Octavia's templates use` };
      const value = options.get(w);
      i++;
      if (value) {
        const next = token(value, words, i);
        if (typeof next !== 'number') return { at: next.at, why: `${w}: ${next.why}` };
        i = next;
      }
    }
    return null;
  };

  /** `<fetch> [-i] [-m method] [values...]`: the values are tenant text, never a flag. */
  const aclBody = (words: string[], i: number, end: number): Miss | null => {
    const f = words[i];
    if (f === undefined || i >= end) return { at: i, why: 'has no sample fetch' };
    const why = expression(f);
    if (why) return { at: i, why };
    i++;
    while (i < end && words[i]!.startsWith('-')) {
      const flag = words[i]!;
      if (flag === '-i') i++;
      else if (flag === '-m' && /^(?:beg|end|str|sub|reg|found|len|dir|dom|bool|int|ip)$/.test(words[i + 1] ?? '')) i += 2;
      else return { at: i, why: `the flag ${JSON.stringify(flag)} is not one Octavia's templates use (-i, -m)` };
    }
    for (; i < end; i++) if (!PRINTABLE.test(words[i]!)) return { at: i, why: 'a value has a control character' };
    return null;
  };

  /** `if|unless` then ACL names, negations, `||`/`or`, and `{ anonymous ACLs }`. */
  const condition = (words: string[], i: number): Miss | null => {
    if (i === words.length) return null;
    if (words[i] !== 'if' && words[i] !== 'unless') return { at: i, why: `${JSON.stringify(words[i])} where if/unless or the end is allowed` };
    i++;
    if (i === words.length) return { at: i, why: 'has an empty condition' };
    while (i < words.length) {
      const w = words[i]!;
      if (w === '{' || w === '!{') {
        const close = words.indexOf('}', i + 1);
        if (close < 0) return { at: i, why: 'an anonymous ACL has no closing }' };
        const miss = aclBody(words, i + 1, close);
        if (miss) return miss;
        i = close + 1;
      } else if (w === '||' || w === 'or' || w === '!' || NAME.test(w.replace(/^!/, ''))) {
        i++;
      } else {
        return { at: i, why: `${JSON.stringify(w)} is not an ACL name` };
      }
    }
    return null;
  };

  const rest = (t: Token, words: string[], i: number): Miss | null => {
    switch (t.slot) {
      case 'server-options':
        return optionList(allowed.serverOptions, 'server', words, i);
      case 'bind-options':
        return optionList(allowed.bindOptions, 'bind', words, i);
      case 'acl':
        return aclBody(words, i, words.length);
      default:
        return condition(words, i);
    }
  };

  /** The whole line against one pattern, from word `from` on. */
  const match = (p: Pattern, words: string[], from: number): Miss | null => {
    let i = from;
    for (const t of p.tokens) {
      if (t.kind === 'rest') return rest(t, words, i);
      if (t.optional && i === words.length) continue;
      const next = token(t, words, i);
      if (typeof next !== 'number') return next;
      i = next;
    }
    return i === words.length ? null : { at: i, why: `${JSON.stringify(words[i])} is more than the line takes` };
  };

  for (const raw of text.split('\n')) {
    line++;
    if (section === 'backend' && allowed.plainServer(raw)) continue;
    const { words, unreadable } = tokenizeLine(raw);
    if (unreadable) {
      // A line that starts with a control character has no first word to name: show its start.
      refuse(printable(words[0] || raw.trimStart()).slice(0, 40) || '(control characters)', unreadable);
      continue;
    }
    if (words.length === 0) continue;
    const kw = words[0]!;
    if (SECTION_KEYWORDS.has(kw)) {
      section = kw;
      if (!allowed.patterns.has(`${kw} ${kw}`)) {
        refuse(kw, `${JSON.stringify(kw)} is not a section Octavia's templates render`);
        continue;
      }
    }
    // As a refusal names it: an empty first word (`""`) shows as such.
    const directive = (TWO_WORD_DIRECTIVES.has(kw) && words[1] !== undefined ? `${kw} ${words[1]}` : kw) || '""';
    const candidates = allowed.patterns.get(`${section} ${kw}`);
    if (!candidates) {
      refuse(directive, `${JSON.stringify(kw)} is not a keyword Octavia's templates render in ${section || 'this place'}`);
      continue;
    }
    let best: Miss | null = null;
    let ok = false;
    for (const p of candidates) {
      pending = [];
      const miss = match(p, words, 1);
      if (miss === null) {
        ok = true;
        break;
      }
      if (best === null || miss.at > best.at) best = miss;
    }
    if (!ok) {
      refuse(directive, `${best!.why} (word ${best!.at + 1}; allowed: ${candidates.map((c) => c.text).join(' | ')})`);
      continue;
    }
    for (const f of pending) files.push({ ...f, directive });

    if (kw === 'insecure-fork-wanted') forkLines.push(line);
    if (kw === 'external-check' || (kw === 'cpu-map' && words.includes('external-check'))) pingCommand = true;
  }
  // Forking is for Octavia's PING check: the only external-check command allowed above.
  if (!pingCommand) {
    for (const line of forkLines)
      out.push({ line, directive: 'insecure-fork-wanted', reason: `lets workers fork without Octavia's external PING check (${ownPingWrapper})` });
  }
  return { violations: out.sort((a, b) => a.line - b.line), files };
}

/** A word as a refusal can show it: control characters (a NUL) as \\xHH. */
function printable(w: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this shows
  return w.replace(/[\x00-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

function article(slot: string): string {
  return /^[aeiou]/.test(slot) ? 'an' : 'a';
}

function describe(t: Token): string {
  if (t.kind === 'word') return JSON.stringify([...t.words!][0]);
  if (t.kind === 'choice') return `one of ${[...t.words!].join(', ')}`;
  return `<${t.slot}>`;
}
