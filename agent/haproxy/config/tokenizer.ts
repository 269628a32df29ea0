// The one reader of haproxy's words: how haproxy 2.6 to 3.4 split a config
// line (quotes, escapes, comments, its limits), and the keywords that open a
// section. Every part that reads haproxy syntax (the config reader, the
// policies, the runtime plan, the legacy-form translation) reads it here, so
// no two parts can disagree on what a line says. Pure.
/** The keywords that open a section: the line starting with one ends the section above it. */
export const SECTION_KEYWORDS = new Set([
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

export interface Tokenized {
  words: string[];
  /**
   * Why haproxy may read this line otherwise than these words say, or refuses
   * it, or reads it by rules this reader does not follow: a policy refuses such
   * a line whatever its words are. See tokenizeLine.
   */
  unreadable?: string;
  /** Column where the code ends (start of a comment, or line length), before trailing whitespace. */
  codeEnd: number;
}

/** haproxy's separators (C isspace); '\n' and '\r' end its line before they can separate. */
const SPACE = /[ \t\n\v\f\r]/;
const SPACES = /[ \t\n\v\f\r]+/;
/** Quotes, escapes and comments: a line without them is words between spaces. */
const NEEDS_RESOLVING = /["'\\#]/;
/** Backslash sequences haproxy resolves outside single quotes (\$ only inside double quotes, \xHH apart). */
const ESCAPES = new Map([
  [' ', ' '],
  ['\\', '\\'],
  ['#', '#'],
  ["'", "'"],
  ['"', '"'],
  ['t', '\t'],
  ['n', '\n'],
  ['r', '\r'],
]);
/** haproxy's MAX_LINE_ARGS: a 65th word is a fatal "too many words" in 2.6 to 3.4. */
export const MAX_WORDS = 64;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this looks for
const RAW_CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;
const ESCAPED_NUL = /\\x00/;
const HEX2 = /^[0-9a-fA-F]{2}$/;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Split one line into the words haproxy 2.6 to 3.4 read (measured against
 * each by test/interop/tokenizer-haproxy.test.ts): single quotes take
 * everything literally; double quotes group; outside single quotes \\, \<space>,
 * \#, \', \", \t, \n, \r and \xHH resolve, \$ only inside double quotes, any
 * other backslash stays; an unquoted '#' starts a comment even inside a word;
 * space, tab, \v and \f separate. There is no line continuation: a trailing
 * backslash is a character of the last word.
 *
 * `unreadable` says why the words cannot be trusted (they are then only good
 * for naming the line in a refusal), for lines haproxy refuses
 * or reads by rules this does not follow: a NUL (raw or \x00) ends haproxy's C
 * string inside a word; a raw control character other than tab ends the line
 * or separates words for some of its parsers; an unclosed quote, a \x without
 * two hex digits and a 65th word are haproxy errors; "$NAME" and "${NAME}"
 * expand the environment of the haproxy that reads it; an empty word ("" or '')
 * ends the argument list of every keyword (2.6 and 3.0 drop the words after it
 * silently, 3.2 warns, 3.4 refuses it); \x escapes that do not make UTF-8 are
 * bytes no string here can hold; a line starting with '[' is a scope, not words.
 */
export function tokenizeLine(line: string): Tokenized {
  const raw = RAW_CONTROL.exec(line);
  if (raw) {
    const code = raw[0].charCodeAt(0).toString(16).padStart(4, '0').toUpperCase();
    // haproxy's reader stops at a NUL, CR or LF; the words go on past it here, for the refusal to name the line's keyword.
    return { ...tokenizeWords(line), unreadable: `contains the control character U+${code}` };
  }
  const read = tokenizeWords(line);
  if (read.unreadable) return read;
  if (ESCAPED_NUL.test(line)) return { ...read, unreadable: 'contains an escaped NUL (\\x00), which ends the word where haproxy reads it' };
  if (read.words.length > MAX_WORDS) return { ...read, unreadable: `has ${read.words.length} words; haproxy reads at most ${MAX_WORDS}` };
  if (/^[ \t]*\[/.test(line)) return { ...read, unreadable: "starts with '[', which haproxy reads as a scope, not as words" };
  return read;
}

function tokenizeWords(line: string): Tokenized {
  // Most lines (every server line) have nothing to resolve: split them natively.
  if (!NEEDS_RESOLVING.test(line)) return { words: splitPlain(line), codeEnd: codeEndOf(line, line.length) };
  const words: string[] = [];
  let unreadable: string | undefined;
  let word = '';
  let inWord = false;
  let squote = false;
  let dquote = false;
  // Bytes of \xHH escapes above 0x7f: they make UTF-8 characters only together.
  let bytes: number[] = [];
  const flushBytes = () => {
    if (bytes.length === 0) return;
    try {
      word += UTF8.decode(Uint8Array.from(bytes));
    } catch {
      unreadable ??= '\\x escapes make bytes that are not UTF-8';
      word += '\uFFFD';
    }
    bytes = [];
  };
  const emit = (s: string) => {
    flushBytes();
    word += s;
    inWord = true;
  };
  let i = 0;
  for (; i < line.length; i++) {
    const c = line[i]!;
    if (squote) {
      if (c === "'") squote = false;
      else emit(c);
      continue;
    }
    if (c === '#' && !dquote) break;
    if (c === '"') {
      dquote = !dquote;
      inWord = true;
    } else if (c === "'" && !dquote) {
      squote = true;
      inWord = true;
    } else if (c === '\\') {
      const next = line[i + 1];
      const escaped = next === undefined ? undefined : ESCAPES.get(next);
      if (escaped !== undefined) {
        emit(escaped);
        i++;
      } else if (next === '$' && dquote) {
        emit('$');
        i++;
      } else if (next === 'x') {
        const hex = line.slice(i + 2, i + 4);
        if (!HEX2.test(hex)) {
          unreadable ??= `has "\\x" without two hex digits after it, which haproxy refuses`;
          emit('\\');
          continue;
        }
        const byte = parseInt(hex, 16);
        if (byte < 0x80) emit(String.fromCharCode(byte));
        else {
          bytes.push(byte);
          inWord = true;
        }
        i += 3;
      } else {
        emit('\\'); // not an escape sequence: haproxy keeps the backslash and reads the next character as it is
      }
    } else if (SPACE.test(c) && !dquote) {
      flushBytes();
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      if (c === '$' && dquote) unreadable ??= 'expands an environment variable ("$NAME" in double quotes)';
      emit(c);
    }
  }
  flushBytes();
  if (inWord) words.push(word);
  if (squote || dquote) unreadable ??= `has an unclosed ${squote ? 'single' : 'double'} quote, which haproxy refuses`;
  if (words.includes('')) unreadable ??= 'has an empty word ("" or \'\'), which ends the argument list where haproxy reads it';
  const read: Tokenized = { words, codeEnd: codeEndOf(line, i) };
  if (unreadable) read.unreadable = unreadable;
  return read;
}

/** Words between spaces: a split leaves an empty word only at either end. */
function splitPlain(line: string): string[] {
  const words = line.split(SPACES);
  if (words[words.length - 1] === '') words.pop();
  if (words[0] === '') words.shift();
  return words;
}

/** `end` moved back over trailing whitespace (haproxy's separators). */
function codeEndOf(line: string, end: number): number {
  let codeEnd = end;
  while (codeEnd > 0 && SPACE.test(line[codeEnd - 1]!)) codeEnd--;
  return codeEnd;
}
