// Octavia 11 to 16 put an HTTP health monitor's version and Host header into
// `option httpchk`'s version word (`GET /path HTTP/1.1\r\nHost:\ name`).
// haproxy 2.7+ refuses that ("hiding headers or body at the end of the
// version string is unsupported", Octavia bug 2119489, fixed in Octavia 17),
// so such a controller could not load any config on the image's haproxy 3.0.
// This rewrites those lines into the form haproxy documents since 2.2, which
// sends the same request:
//   option httpchk
//   http-check send meth GET uri /path ver HTTP/1.1 hdr Host name
// Pure: text in, text out; every other line is left byte for byte.
import { tokenizeLine } from './tokenizer.js';

/** `text` with every legacy `option httpchk` line rewritten; lines that cannot be rewritten stay as they are (haproxy -c then says why). */
export function translateLegacyHttpchk(text: string): string {
  // Only the lines that name the option are looked at: splitting a
  // 5,000-member config into lines on every apply cost 13 ms.
  let out = '';
  let copied = 0;
  let at = text.indexOf('httpchk');
  while (at >= 0) {
    const start = text.lastIndexOf('\n', at) + 1;
    const newline = text.indexOf('\n', at);
    const end = newline < 0 ? text.length : newline;
    const line = text.slice(start, end);
    const translated = translateLine(line);
    if (translated !== line) {
      out += text.slice(copied, start) + translated;
      copied = end;
    }
    at = text.indexOf('httpchk', end);
  }
  return out === '' ? text : out + text.slice(copied);
}

interface LegacyCheck {
  method: string;
  uri: string;
  version: string;
  headers: [string, string][];
  body: string | null;
}

function translateLine(line: string): string {
  const parts = legacyParts(line);
  if (!parts) return line;
  const indent = /^\s*/.exec(line)![0];
  const { codeEnd } = tokenizeLine(line);
  const send = ['http-check send', 'meth', word(parts.method), 'uri', word(parts.uri), 'ver', word(parts.version)];
  // hdr values are log-format strings: a literal '%' is written '%%'.
  for (const [name, value] of parts.headers) send.push('hdr', word(name), word(value.replace(/%/g, '%%')));
  if (parts.body !== null) send.push('body', word(parts.body));
  return `${indent}option httpchk${line.slice(codeEnd)}\n${indent}${send.join(' ')}`;
}

/** The request a legacy line describes, or null when the line is not one (or is one this cannot express). */
function legacyParts(line: string): LegacyCheck | null {
  const { words } = tokenizeLine(line);
  if (words.length !== 5 || words[0] !== 'option' || words[1] !== 'httpchk') return null;
  const [method, uri, versionWord] = words.slice(2) as [string, string, string];
  if (!/[\r\n]/.test(versionWord)) return null;
  // "HTTP/1.1\r\nHost: a\r\nX: b\r\n\r\nbody": the version, header lines, then (after an empty line) a body.
  const segments = versionWord.split(/\r?\n/);
  const version = segments.shift()!;
  if (version === '' || /\s/.test(version)) return null;
  const headers: [string, string][] = [];
  let body: string | null = null;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg === '') {
      const rest = segments.slice(i + 1).join('\r\n');
      if (rest !== '') body = rest;
      break;
    }
    const colon = seg.indexOf(':');
    if (colon <= 0) return null;
    headers.push([seg.slice(0, colon).trim(), seg.slice(colon + 1).trim()]);
  }
  return { method, uri, version, headers, body };
}

/** One word as haproxy's tokenizer reads it back: bare when it can be, else single-quoted (literal), else double-quoted. */
function word(w: string): string {
  if (/^[^\s"'\\#$]+$/.test(w)) return w;
  if (!w.includes("'") && !/[\r\n]/.test(w)) return `'${w}'`;
  return `"${w
    .replace(/[\\"$]/g, (c) => `\\${c}`)
    .replace(/\r/g, '\\r')
    .replace(/\n/g, '\\n')}"`;
}
