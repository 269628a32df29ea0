// An uploaded keepalived config read as keepalived 2.2 and 2.3 read it
// (lib/parser.c: read_line, decomment, alloc_strvec), or refused where the
// two could differ. keepalived's reader does much more than split words:
// `include` reads other files, `$NAME=` defines and `$NAME` expands text,
// `@id` / `@^id` keep a line only on some hosts, `~SEQ` / `~LST` repeat lines,
// `\` escapes characters (\x00, \c@...) and continues definitions, `'` quotes
// like `"` in words but not in comments, lines longer than its 1024-byte
// buffer are cut in two, and a `{` or `}` anywhere outside `"` splits a line.
// Rather than imitate all of it, the reader accepts the subset Octavia's
// templates and the agent's render use, where every reading is the same:
// printable ASCII and tabs, `"` quotes that close on their line, `!` and `#`
// comments, a `{` only at the end of a line and a `}` only alone on its line.
// Everything else is refused with the line and the reason.
import type { PolicyViolation } from '../haproxy/config/policy/types.js';

/** One line as keepalived hands it to a keyword: its words with quotes removed. */
export interface KeepalivedStatement {
  /** 1-based line number. */
  line: number;
  words: string[];
  /** The line ends with `{`: the words open a block (the `{` itself is not among them). */
  opens: boolean;
  /** The line is a lone `}`: it closes the innermost block (words is empty). */
  closes: boolean;
}

export interface KeepalivedReading {
  statements: KeepalivedStatement[];
  /** Lines read differently by some keepalived, or not as plain words: never judged further. */
  unreadable: PolicyViolation[];
}

/** fgets() into keepalived's MAXBUF (1024) keeps 1022 characters, a newline and the NUL; a longer line is read as two. */
export const MAX_LINE = 1022;

/** Printable ASCII and tabs; `\` (escapes, continuation), `'` (a second quote) and `$` (definitions) are left out on purpose. */
const PLAIN = /^[\t\x20-\x23\x25\x26\x28-\x5b\x5d-\x7e]*$/;

/** Why a character is refused, for the ones keepalived gives a meaning. */
function badCharacter(text: string): string {
  const c = [...text].find((ch) => !PLAIN.test(ch))!;
  if (c === '\\') return "'\\' escapes characters or continues a line in keepalived";
  if (c === "'") return "' quotes words in keepalived's words but not in its comments";
  if (c === '$') return "'$' defines or expands a keepalived definition";
  if (c === '\0') return 'a NUL ends the line early in keepalived';
  return `character U+${c.codePointAt(0)!.toString(16).padStart(4, '0')} is not printable ASCII`;
}

/** decomment(): the line without leading blanks, without its `!`/`#` comment outside quotes, without trailing blanks. */
function decomment(text: string): { code: string; unterminated: boolean } {
  let quoted = false;
  let end = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') quoted = !quoted;
    else if (!quoted && (c === '!' || c === '#')) {
      end = i;
      break;
    }
  }
  return { code: text.slice(0, end).trim(), unterminated: quoted };
}

/** alloc_strvec(): words split at blanks outside quotes; a quote joins, and is dropped from, the word it is in. */
function words(code: string): string[] {
  const out: string[] = [];
  let word: string | null = null;
  let quoted = false;
  for (const c of code) {
    if (c === '"') {
      quoted = !quoted;
      word ??= '';
    } else if (!quoted && (c === ' ' || c === '\t')) {
      if (word !== null) out.push(word);
      word = null;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== null) out.push(word);
  return out;
}

/**
 * A quote that does not start a word or is not followed by a blank: keepalived
 * (alloc_strvec_r) ends a word at a quote, so `inter"face"` is two words there
 * and one to words() above. Octavia's templates quote whole words only.
 */
function quoteInsideWord(code: string): boolean {
  let quoted = false;
  for (let i = 0; i < code.length; i++) {
    if (code[i] !== '"') continue;
    const neighbour = quoted ? code[i + 1] : code[i - 1];
    if (neighbour !== undefined && neighbour !== ' ' && neighbour !== '\t') return true;
    quoted = !quoted;
  }
  return false;
}

/** keepalived's include, includer, includem... (is_include()): the first word starts with "include". */
const INCLUDE = /^include[rmwba]?(\s|$)/;

/** Why keepalived could read the line other than as plain words, or null. */
function unreadableReason(raw: string): string | null {
  if (raw.length > MAX_LINE) return `longer than ${MAX_LINE} characters: keepalived reads it as two lines`;
  if (!PLAIN.test(raw)) return badCharacter(raw);
  const { code, unterminated } = decomment(raw);
  if (unterminated) return 'a quote is not closed on its line';
  if (quoteInsideWord(code)) return 'a quote inside a word: keepalived ends the word at the quote';
  if (code.startsWith('@')) return "'@' keeps a line only on some hosts (a keepalived conditional)";
  if (code.startsWith('~')) return "'~' repeats lines (keepalived ~SEQ, ~LST)";
  if (INCLUDE.test(code)) return 'reads another file (keepalived include)';
  return null;
}

/** The directive a refusal names: the line's first word as written. */
const firstWord = (text: string) => (text.trim().split(/[ \t]+/)[0] || '(line)').replace(/[^\x20-\x7e]/g, '?');

export function readKeepalivedConfig(text: string): KeepalivedReading {
  const statements: KeepalivedStatement[] = [];
  const unreadable: PolicyViolation[] = [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (const [i, raw] of lines.entries()) {
    const line = i + 1;
    const reason = unreadableReason(raw);
    if (reason !== null) {
      unreadable.push({ line, directive: firstWord(raw), reason });
      continue;
    }
    const code = decomment(raw).code;
    if (code === '') continue;
    if (code === '}') {
      statements.push({ line, words: [], closes: true, opens: false });
      continue;
    }
    // A brace elsewhere, even in quotes (which keepalived skips only when
    // looking for braces, not when it meets one first), would split the line.
    const opens = code.endsWith('{');
    const body = opens ? code.slice(0, -1).trimEnd() : code;
    if (/[{}]/.test(body)) {
      unreadable.push({
        line,
        directive: firstWord(code),
        reason: "a '{' only ends a line and a '}' only stands alone on one (keepalived splits lines at braces)",
      });
      continue;
    }
    const w = words(body);
    if (w.length === 0) {
      unreadable.push({ line, directive: '{', reason: "a '{' without the keyword that opens the block on its line" });
      continue;
    }
    statements.push({ line, words: w, opens, closes: false });
  }
  return { statements, unreadable };
}
