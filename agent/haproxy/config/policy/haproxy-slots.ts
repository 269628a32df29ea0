// What one argument word of an allowed line may be: the word slots of the
// allow-list (`<int>`, `<addr>`, `<header>`...), checked word by word, and
// the sample expressions and log-format strings, checked against the
// allow-list's fetches and converters. Kept apart from the line matching
// (haproxy-config.ts) and the list's compilation (haproxy-allow-list.ts),
// which both ask these questions. Slots that need the load balancer's
// directories (files, sockets) are checked by the reader. Pure.
import { isIP } from 'node:net';
import { isPlainIp } from '../../../net/ip.js';

/** Printable text: tenant values (L7 values, header values, URLs, ciphers) never carry control characters. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
export const PRINTABLE = /^[^\x00-\x1f\x7f]+$/;
export const NAME = /^[A-Za-z0-9_.:-]{1,255}$/;
const HEADER = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,255}$/;

/** What one slot word may be; false, or a reason, refuses it. Files are checked by the reader (they need the context). */
export const WORD_SLOTS: Record<string, (w: string) => boolean> = {
  int: (w) => /^[0-9]{1,10}$/.test(w),
  time: (w) => /^[0-9]{1,10}(?:us|ms|s|m|h|d)?$/.test(w),
  size: (w) => /^[0-9]{1,10}[kmg]?$/i.test(w),
  id: (w) => NAME.test(w),
  user: (w) => /^[a-z_][a-z0-9_-]{0,31}$/.test(w) && w !== 'root',
  header: (w) => HEADER.test(w),
  ip: (w) => isPlainIp(w.replace(/^\[(.*)\]$/, '$1')),
  addr: (w) => isAddress(w),
  facility: (w) => /^(?:local[0-7]|kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|auth2|ftp|ntp|audit|alert|cron2)$/.test(w),
  level: (w) => /^(?:emerg|alert|crit|err|warning|notice|info|debug)$/.test(w),
  'cpu-map': (w) => /^(?:auto:)?[0-9]{1,4}(?:-[0-9]{1,4})?(?:\/[0-9]{1,4}(?:-[0-9]{1,4})?)?$/.test(w),
  'cpu-set': (w) => /^[0-9]{1,4}(?:-[0-9]{1,4})?$/.test(w),
  statuses: (w) => /^[0-9]{3}(?:\|[0-9]{3})*$/.test(w),
  method: (w) => /^(?:GET|HEAD|POST|PUT|DELETE|OPTIONS|PATCH|TRACE|CONNECT)$/.test(w),
  uri: (w) => w.startsWith('/') && PRINTABLE.test(w),
  // Octavia 11 and 16 put the health check's Host header after the version, joined by an escaped CRLF.
  'httpchk-version': (w) => /^HTTP\/1\.[01](?:\r\n(?:Host:[\x20-\x7e]+)?)?$/.test(w),
  ciphers: (w) => /^[A-Za-z0-9_:+!@=.-]{1,4096}$/.test(w),
  alpn: (w) => /^[A-Za-z0-9./-]{1,64}(?:,[A-Za-z0-9./-]{1,64})*$/.test(w),
  text: (w) => PRINTABLE.test(w),
};
/** Slots read with the load balancer's context (files, sockets, expressions). */
const CONTEXT_SLOTS = ['state-file', 'lb-file', 'cert-file', 'crt-list', 'stats-socket', 'syslog', 'ping-wrapper', 'fetch', 'log-format'];
export const REST_SLOTS = ['server-options', 'bind-options', 'acl', 'cond'];
/** Every slot name, for extensions. */
export const SLOT_NAMES = new Set([...Object.keys(WORD_SLOTS), ...CONTEXT_SLOTS, ...REST_SLOTS]);

/** `host[:port]` with a plain IP address (IPv6 in brackets when a port follows). */
export function isAddress(w: string): boolean {
  const bracketed = /^\[([^\]]+)\](?::([0-9]{1,5}))?$/.exec(w);
  if (bracketed) return isPlainIp(bracketed[1]!) && isIP(bracketed[1]!) === 6 && (bracketed[2] === undefined || Number(bracketed[2]) <= 65535);
  if (isPlainIp(w)) return true;
  const colon = w.lastIndexOf(':');
  const port = w.slice(colon + 1);
  return colon > 0 && /^[0-9]{1,5}$/.test(port) && Number(port) <= 65535 && isPlainIp(w.slice(0, colon));
}

/** The fetches and converters an expression may use (the compiled allow-list's). */
export interface SampleAllowList {
  fetches: Set<string>;
  converters: Set<string>;
}

/** A sample expression: an allowed fetch, then allowed converters; arguments are plain text. Why not, else null. */
export function expressionProblem(e: string, allowed: SampleAllowList): string | null {
  const parts = splitExpression(e);
  if (parts === null) return `${JSON.stringify(e)} is not a sample expression`;
  const [fetch, ...converters] = parts;
  if (!allowed.fetches.has(fetch!.name)) return `the sample fetch ${fetch!.name}() is not one Octavia's templates use`;
  for (const c of converters) if (!allowed.converters.has(c.name)) return `the converter ${c.name}() is not one Octavia's templates use`;
  for (const p of parts) if (p.args !== undefined && !/^[A-Za-z0-9_.:@ -]*$/.test(p.args)) return `the arguments of ${p.name}() are not plain names`;
  return null;
}

/** A log-format string (log-format, set-header values, redirect targets): printable, every `%[...]` an allowed expression. */
export function logFormatProblem(w: string, allowed: SampleAllowList): string | null {
  if (!PRINTABLE.test(w)) return 'has a control character';
  let rest = w;
  for (const m of w.matchAll(/%(?:\{[^}]*\})?\[([^\]]*)\]/g)) {
    const why = expressionProblem(m[1]!, allowed);
    if (why) return why;
    rest = rest.replace(m[0], '');
  }
  if (/%(?:\{[^}]*\})?\[/.test(rest)) return 'has an unterminated %[ expression';
  return null;
}

/** `fetch(args),conv(args),conv`: its parts, or null when it is not that shape. */
function splitExpression(e: string): { name: string; args?: string }[] | null {
  const parts: { name: string; args?: string }[] = [];
  const re = /([a-z0-9_.]+)(?:\(([^()]*)\))?(,|$)/gy;
  let m: RegExpExecArray | null;
  let end = 0;
  while (end < e.length && (m = re.exec(e)) !== null) {
    parts.push({ name: m[1]!, args: m[2] });
    end = re.lastIndex;
    if (m[3] === '') break;
  }
  return parts.length > 0 && end === e.length && !e.endsWith(',') ? parts : null;
}
