// tokenizeLine (agent/haproxy/config/tokenizer.ts) against haproxy 2.6, 3.0, 3.2
// and 3.4 themselves: each line below is read by a real haproxy as an ACL's
// patterns (test/helpers/haproxy-words.ts) and the words it reads are
// compared with the tokenizer's.
//  - lines the tokenizer reads (quotes, every escape inside and outside
//    double and single quotes, comments, separators, non-ASCII, \x bytes that
//    make UTF-8, CLI metacharacters, long words, the most words haproxy
//    takes): haproxy reads exactly the same words;
//  - lines it marks unreadable because haproxy refuses them (unclosed quotes,
//    \x without two hex digits, "$" with no name, a 65th word): haproxy refuses
//    them too;
//  - lines it marks unreadable because haproxy reads them otherwise than any
//    word list here could say (a NUL raw or escaped, "${NAME}", an empty
//    word, \x bytes that are not UTF-8): haproxy's words differ from the naive
//    reading, which is why they are refused;
//  - lines with raw control characters (refused): their words (\v and \f
//    separate, others are characters of a word; CR ends the line, above).
// No listener, no port: haproxy only loads the config and answers on a unix socket.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { ACL_PREFIX, answerIs, readByHaproxy, showAnswer } from '../helpers/haproxy-words.js';
import { MAX_WORDS, tokenizeLine } from '../../agent/haproxy/config/tokenizer.js';

/** The six words before each line under test (haproxy-words.ts), which count towards haproxy's 64. */
const PREFIX_WORDS = 6;
/** ${HOME}, written so that no linter takes it for a template placeholder. */
const BRACED = `${'$'}{HOME}`;
const words = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `w${i + from}`).join(' ');

/** Lines the tokenizer reads: haproxy must read the same words. */
const READ = [
  'a b\tc   d',
  '\t  leading and trailing  \t ',
  `"a b" 'c d' e"f g"h 'i"j' "k'l" a"b"c 'a'"b"c`,
  // Escapes outside quotes, and backslashes that are not escapes.
  'a\\ b c\\\\d e\\#f g\\\'h i\\"j k\\tl m\\nn o\\rp \\x41\\x7e q\\$r \\q \\1 \\x41b',
  '\\"a b\\" \\\'c d\\\'',
  // Inside double quotes: \$ too.
  '"a\\ b" "c\\\\d" "e\\#f" "g\\\'h" "i\\"j" "k\\tl" "m\\nn" "o\\rp" "\\x41" "q\\$r" "\\q"',
  // Inside single quotes: nothing is an escape, a backslash before the closing quote included.
  "'a\\ b' 'c\\\\d' 'e\\#f' 'k\\tl' '\\x41' 'q\\$r' 'i\\\"j' 'm\\' '#' '\"'",
  // Comments: an unquoted # ends the line even inside a word.
  'a#b c',
  '"a#b" \'c#d\' e\\#f # tail',
  '#whole line',
  '   # indented comment',
  // No line continuation: a trailing backslash is part of the last word.
  'a b\\',
  'a b \\',
  // Non-ASCII is never a separator (U+00A0, U+0085, U+2028, U+FEFF included).
  'é ü€ 😀 a\u00a0b a\u0085b a\u2028b a\ufeffb',
  // \x bytes above 0x7f make UTF-8 together, across quotes.
  '\\xc3\\xa9 "\\xe2\\x82\\xac" a\\xc3"\\xa9"b \\xf0\\x9f\\x98\\x80',
  // Escaped control characters are characters of the word.
  '\\x01 \\x1f \\x7f a\\x09b \\x20',
  // $ is plain outside double quotes, and escaped inside.
  `$HOME ${BRACED} '$HOME' "\\$HOME" "\\${BRACED}" a$`,
  // What the master CLI would read otherwise.
  'a;b @1 c x;@!y "s;t" show\\ info',
  '%[env(HOME)] map(/etc/passwd) -i -- -m',
  `${'x'.repeat(4000)} "${'y '.repeat(1000)}"`,
  words(MAX_WORDS - PREFIX_WORDS),
  // A line of about 100,000 characters: haproxy's reader grows its buffer (no length limit in 2.6 to 3.4).
  Array.from({ length: MAX_WORDS - PREFIX_WORDS }, (_, i) => `${i}`.padEnd(1700, 'x')).join(' '),
];

/** Lines the tokenizer marks unreadable because haproxy refuses them. */
const REFUSED = ['"a b', "'a b", 'a "b c" "d', '\\x4g', 'a \\x4', '"$"', '"a $1"', words(MAX_WORDS - PREFIX_WORDS + 1)];

/** Lines haproxy reads otherwise than their naive words: [line, words a reader unaware of it would say]. */
const MISREAD: [string, string[]][] = [
  ['a\\x00b c', ['a\0b', 'c']],
  ['"a\\x00b" c', ['a\0b', 'c']],
  [`"${BRACED}" x`, [BRACED, 'x']],
  ['"$PATH"', ['$PATH']],
  ['\\xff \\xc3', ['\u00ff', '\u00c3']],
  // A raw CR ends haproxy's line (the tokenizer refuses it as a control character).
  ['a\rb c', ['a', 'b', 'c']],
];

/** An empty word: 2.6 to 3.2 drop the words after it, 3.4 refuses the line. */
const EMPTY_WORD = ['a "" b', "a '' b", 'a ""'];

/** Raw control characters (refused): how far haproxy reads and how it splits. */
const RAW_CONTROL = ['a\vb\fc', 'a\x01b \x1b[0m', 'a\x7fb'];

const t = suite('tokenizer against haproxy 2.6, 3.0, 3.2 and 3.4: the same words, or a refusal where haproxy refuses or reads otherwise');
let dir: string;

t.before(
  loud(async () => {
    dir = await testDir('tk');
  }),
);

t('the tokenizer reads the READ lines and refuses the others, each after the ACL words haproxy reads it after', () => {
  for (const l of READ) assert.is(tokenizeLine(ACL_PREFIX + l).unreadable, undefined, JSON.stringify(l));
  for (const l of [...REFUSED, ...MISREAD.map(([l]) => l), ...EMPTY_WORD, ...RAW_CONTROL]) {
    const read = tokenizeLine(ACL_PREFIX + l);
    assert.ok(read.unreadable, `${JSON.stringify(l)} is read as ${JSON.stringify(read.words)}`);
  }
});

for (const [i, h] of HAPROXIES.entries()) {
  t(
    `${h.label}: reads every READ line with the tokenizer's words`,
    loud(async () => {
      const lines = [...READ, ...RAW_CONTROL];
      const { answers, output } = await readByHaproxy(h, dir, `read${i}`, lines);
      assert.ok(answers, `${h.label} refused the config: ${output}`);
      const differ = lines.flatMap((l, k) =>
        answerIs(answers[k]!, tokenizeLine(l).words)
          ? []
          : [`${JSON.stringify(l)}: tokenizer ${JSON.stringify(tokenizeLine(l).words)}, haproxy ${showAnswer(answers[k]!)}`],
      );
      assert.equal(differ, [], differ.join('\n'));
    }),
  );

  t(
    `${h.label}: refuses every REFUSED line`,
    loud(async () => {
      for (const [k, l] of REFUSED.entries()) {
        const { answers } = await readByHaproxy(h, dir, `refused${i}-${k}`, [l]);
        assert.is(answers, null, `${h.label} loads ${JSON.stringify(l)}: ${answers && showAnswer(answers[0]!)}`);
      }
    }),
  );

  t(
    `${h.label}: reads every MISREAD line otherwise than its naive words; an empty word ends the words or is refused`,
    loud(async () => {
      const { answers, output } = await readByHaproxy(
        h,
        dir,
        `misread${i}`,
        MISREAD.map(([l]) => l),
      );
      assert.ok(answers, `${h.label} refused the config: ${output}`);
      for (const [k, [l, naive]] of MISREAD.entries()) {
        assert.not.ok(answerIs(answers[k]!, naive), `${h.label} reads ${JSON.stringify(l)} as ${JSON.stringify(naive)}: nothing to refuse`);
      }
      for (const [k, l] of EMPTY_WORD.entries()) {
        const read = await readByHaproxy(h, dir, `empty${i}-${k}`, [l]);
        if (h.label === 'haproxy-3.4') assert.is(read.answers, null, `${h.label} loads ${JSON.stringify(l)}`);
        else
          assert.ok(
            read.answers && answerIs(read.answers[0]!, ['a']),
            `${h.label} reads ${JSON.stringify(l)} as ${read.answers && showAnswer(read.answers[0]!)}`,
          );
      }
    }),
  );
}

t.run();
