// crt-list files read as haproxy reads them (ssl_crtlist.c, 2.6 to 3.4): one
// entry a line, `<path> [<ssl options>] <sni filters>`; a line that starts
// with `#` is a comment, an empty one is skipped; words are split at
// whitespace and at `[` and `]` wherever they are, with no quoting or escape.
// Octavia's controller (11 to 19) uploads a crt-list as the listener's
// `<listener_id>.pem`: the absolute paths of its certificates, one a line,
// no options and no filters; the agent's 2.0 renderer writes the same form.
// Pure: text in, the entries and what is wrong with them out.
import { posix } from 'node:path';

export interface CrtListEntry {
  /** 1-based line in the crt-list. */
  line: number;
  /** The certificate file. */
  path: string;
  /** Files the entry's ssl options name (ca-file, crl-file...): PEM, like the certificate. */
  optionFiles: { option: string; path: string }[];
}

export interface CrtListProblem {
  line: number;
  reason: string;
}

/**
 * The ssl options a crt-list entry may carry, with the number of words each
 * takes. Those that name a file are in FILE_OPTIONS; any other option (the
 * crt-store words `key`, `ocsp`, `issuer`, `sctl` of 3.x among them) is
 * refused.
 */
const OPTIONS = new Map([
  ['alpn', 1],
  ['no-alpn', 0],
  ['npn', 1],
  ['ciphers', 1],
  ['ciphersuites', 1],
  ['curves', 1],
  ['ecdhe', 1],
  ['sigalgs', 1],
  ['client-sigalgs', 1],
  ['verify', 1],
  ['no-ca-names', 0],
  ['allow-0rtt', 0],
  ['ssl-min-ver', 1],
  ['ssl-max-ver', 1],
  ['ocsp-update', 1],
  ['ca-file', 1],
  ['ca-verify-file', 1],
  ['crl-file', 1],
]);
const FILE_OPTIONS = new Set(['ca-file', 'ca-verify-file', 'crl-file']);

/** haproxy's isspace(): the characters that end a word of a crt-list line. */
const SPACE = new Set([' ', '\t', '\n', '\v', '\f', '\r']);

/** The entries of a crt-list, and the lines that cannot be read or use an option not allowed. */
export function parseCrtList(text: string): { entries: CrtListEntry[]; problems: CrtListProblem[] } {
  const entries: CrtListEntry[] = [];
  const problems: CrtListProblem[] = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = i + 1;
    if (raw === '' || raw.startsWith('#') || raw.startsWith('\r')) continue;
    // haproxy reads lines with fgets and strlen: a NUL cuts the line where the policy would not.
    if (raw.includes('\0')) {
      problems.push({ line, reason: 'holds a NUL character' });
      continue;
    }
    const read = splitLine(raw);
    if ('reason' in read) {
      problems.push({ line, reason: read.reason });
      continue;
    }
    const { words, optionsFrom, optionsTo } = read;
    if (words.length === 0) continue;
    const entry: CrtListEntry = { line, path: words[0]!, optionFiles: [] };
    for (let j = optionsFrom; j < optionsTo; j++) {
      const option = words[j]!;
      const takes = OPTIONS.get(option);
      if (takes === undefined) {
        problems.push({ line, reason: `ssl option ${JSON.stringify(option)} is not one a crt-list entry may use (${[...OPTIONS.keys()].join(', ')})` });
        break;
      }
      if (j + takes >= optionsTo && takes > 0) {
        problems.push({ line, reason: `ssl option ${option} has no value inside the brackets` });
        break;
      }
      if (FILE_OPTIONS.has(option)) entry.optionFiles.push({ option, path: words[j + 1]! });
      j += takes;
    }
    entries.push(entry);
  }
  return { entries, problems };
}

/** The words of a line, and where its bracketed options are (half-open word range). */
function splitLine(raw: string): { words: string[]; optionsFrom: number; optionsTo: number } | { reason: string } {
  const words: string[] = [];
  let word = '';
  let open = -1;
  let close = -1;
  const flush = () => {
    if (word !== '') words.push(word);
    word = '';
  };
  for (const c of raw) {
    if (SPACE.has(c)) {
      flush();
    } else if (c === '[') {
      flush();
      if (open >= 0) return { reason: "has more than one '['" };
      if (words.length === 0) return { reason: "starts with '[' instead of a certificate file" };
      open = words.length;
    } else if (c === ']') {
      flush();
      if (close >= 0) return { reason: "has more than one ']'" };
      if (open < 0) return { reason: "has ']' without '['" };
      close = words.length;
    } else {
      word += c;
    }
  }
  flush();
  if (open < 0) return { words, optionsFrom: 0, optionsTo: 0 };
  if (close < 0) return { reason: "has '[' without ']'" };
  return { words, optionsFrom: open, optionsTo: close };
}

/**
 * What is wrong with the files a crt-list names, read as text: each must be
 * an absolute path inside `certDir` (haproxy reads a relative one against
 * crt-base or its working directory, neither of which is the load
 * balancer's) and none of `protectedFiles`. Links are resolved on disk by
 * files.ts.
 */
export function crtListPathProblems(entries: CrtListEntry[], certDir: string, protectedFiles: string[]): CrtListProblem[] {
  const dir = `${posix.normalize(certDir).replace(/\/+$/, '')}/`;
  const protect = new Set(protectedFiles.map((f) => posix.normalize(f)));
  const problems: CrtListProblem[] = [];
  for (const e of entries) {
    for (const [what, path] of [['certificate', e.path] as const, ...e.optionFiles.map((f) => [f.option, f.path] as const)]) {
      if (!path.startsWith('/')) {
        problems.push({ line: e.line, reason: `${what} ${JSON.stringify(path)} is not an absolute path in ${dir}` });
      } else if (!posix.normalize(path).startsWith(dir) || protect.has(posix.normalize(path))) {
        problems.push({ line: e.line, reason: `${what} ${JSON.stringify(path)} is outside the load balancer's certificate directory (${dir})` });
      }
    }
  }
  return problems;
}
