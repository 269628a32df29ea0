import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readConfig } from '../../agent/haproxy/config/config-reader.js';
import { MAX_WORDS, tokenizeLine } from '../../agent/haproxy/config/tokenizer.js';

test('tokenizer: quotes group words, backslash escapes, # starts a comment', () => {
  const t = tokenizeLine('  http-request set-header X-A "a b" # comment');
  assert.equal(t.words, ['http-request', 'set-header', 'X-A', 'a b']);
  assert.is(t.codeEnd, 'http-request set-header X-A "a b"'.length + 2);
  assert.equal(tokenizeLine('acl x path_beg /a\\#b').words, ['acl', 'x', 'path_beg', '/a#b']);
  assert.equal(tokenizeLine("  log-format 'x y'").words, ['log-format', 'x y']);
});

test('tokenizer: a plain line (split natively) reads as the quote-aware path reads it', () => {
  // The same words with a quote that changes nothing sends the line through the character loop.
  for (const plain of ['\tserver  m1 10.0.0.1:80\tweight 1 check   ', '    bind 10.0.0.5:80', '', '   ', 'backend p:l\r']) {
    const slow = tokenizeLine(`${plain}""`);
    const fast = tokenizeLine(plain);
    assert.equal(
      fast.words,
      slow.words.filter((w) => w !== ''),
      JSON.stringify(plain),
    );
    assert.is(fast.codeEnd, plain.trimEnd().length, JSON.stringify(plain));
  }
});

// The words below are haproxy's own (test/interop/tokenizer-haproxy.test.ts reads the same lines with 2.6 to 3.4).
const readAs: [string, string[]][] = [
  [
    'a\\ b c\\\\d e\\#f g\\\'h i\\"j k\\tl m\\nn o\\rp \\x41 q\\$r \\q a\\',
    ['a b', 'c\\d', 'e#f', "g'h", 'i"j', 'k\tl', 'm\nn', 'o\rp', 'A', 'q\\$r', '\\q', 'a\\'],
  ],
  ['"a\\ b" "e\\#f" "g\\\'h" "i\\"j" "q\\$r" "\\q" "\'"', ['a b', 'e#f', "g'h", 'i"j', 'q$r', '\\q', "'"]],
  ["'a\\ b' 'e\\#f' 'q\\$r' 'm\\' '\"'", ['a\\ b', 'e\\#f', 'q\\$r', 'm\\', '"']],
  ['a#b c', ['a']],
  ['"a#b" \'c#d\' # tail', ['a#b', 'c#d']],
  ['\\xc3\\xa9 a\\xc3"\\xa9"b', ['é', 'aéb']],
  ['a\u00a0b a\u2028b', ['a\u00a0b', 'a\u2028b']],
  ['$HOME a;b @1', ['$HOME', 'a;b', '@1']],
];

test('tokenizer: escapes inside and outside double and single quotes, comments, \\x bytes, non-ASCII', () => {
  for (const [line, words] of readAs) {
    const t = tokenizeLine(line);
    assert.equal(t.words, words, JSON.stringify(line));
    assert.is(t.unreadable, undefined, JSON.stringify(line));
  }
});

test('tokenizer: no line continuation, a trailing backslash stays in the word', () => {
  assert.equal(tokenizeLine('    bind :80 \\').words, ['bind', ':80', '\\']);
});

test('tokenizer: lines haproxy refuses or reads otherwise are unreadable, each with its reason', () => {
  const cases: [string, RegExp][] = [
    ['a\0b', /control character U\+0000/],
    ['a\\x00b', /escaped NUL/],
    ["'a\\x00b'", /escaped NUL/], // literal text to haproxy, but a NUL in any form is refused
    ['a\rb', /U\+000D/],
    ['a\x1bb', /U\+001B/],
    ['"a b', /unclosed double quote/],
    ["a 'b", /unclosed single quote/],
    ['\\x4g', /without two hex digits/],
    ['a\\x4', /without two hex digits/],
    ['"$HOME"', /environment variable/],
    [`"$${'{'}HOME}"`, /environment variable/],
    ['a "" b', /empty word/],
    ["a ''", /empty word/],
    ['\\xff', /not UTF-8/],
    ['\\xc3 x', /not UTF-8/],
    ['  [scope]', /scope/],
    [Array.from({ length: MAX_WORDS + 1 }, (_, i) => `w${i}`).join(' '), /65 words/],
  ];
  for (const [line, reason] of cases) assert.match(tokenizeLine(line).unreadable ?? '', reason, JSON.stringify(line));
  assert.is(tokenizeLine(Array.from({ length: MAX_WORDS }, (_, i) => `w${i}`).join(' ')).unreadable, undefined);
  // A raw NUL or CR ends haproxy's line; the words go on, for a refusal that names the keyword.
  assert.equal(tokenizeLine('\0server x').words, ['\0server', 'x']);
});

test("tokenizer: Unicode spaces are word characters to haproxy, where JavaScript's \\s splits (runtime-plan reads server words with it)", () => {
  const cases: [string, number][] = [
    ['    server m1 10.0.0.1:80 check\u00a0disabled', 4],
    ['\tserver m\u2028x 10.0.0.1:80 ', 3],
    ['    server m1\ufeff10.0.0.1:80', 2],
  ];
  for (const [line, count] of cases) {
    assert.is(tokenizeLine(line).words.length, count, JSON.stringify(line));
    assert.is.not(line.trim().split(/\s+/).length, count, JSON.stringify(line));
  }
  assert.equal(tokenizeLine('    server m1 10.0.0.1:80 weight 1 check').words, ['server', 'm1', '10.0.0.1:80', 'weight', '1', 'check']);
});

test('reads backends, servers, checks and the server-state settings', () => {
  const info = readConfig(
    [
      'global',
      '    server-state-file /var/lib/octavia/lb/servers-state',
      'defaults',
      '    retries 3',
      'backend pool-a:listener-1',
      '    load-server-state-from-file global',
      '    server m1 10.0.0.1:80 weight 1 check inter 5s fall 3 rise 2',
      '    server m2 10.0.0.2:80 weight 1',
      '    server m3 10.0.0.3:80 track pool-a:listener-1/m1',
      'backend pool-b',
      '    default-server check',
      '    server n1 [2001:db8::1]:80 # inherits check',
      '    server n2 10.0.0.9:80 no-check',
      '    server n3 10.0.0.8:80 check init-state fully-down',
    ].join('\n'),
  );
  assert.is(info.serverStateFile, '/var/lib/octavia/lb/servers-state');
  const a = info.backends.get('pool-a:listener-1')!;
  assert.is(a.loadServerState, 'global');
  assert.equal(
    a.servers.map((s) => [s.name, s.checked, s.tracked]),
    [
      ['m1', true, false],
      ['m2', false, false],
      ['m3', false, true],
    ],
  );
  const b = info.backends.get('pool-b')!;
  assert.is(b.loadServerState, 'none');
  assert.equal(
    b.servers.map((s) => [s.name, s.checked, s.initStateOnLine]),
    [
      ['n1', true, false],
      ['n2', false, false],
      ['n3', true, true],
    ],
  );
  assert.is(b.servers[0]!.address, '[2001:db8::1]:80');
  assert.is(b.servers[0]!.line, 11);
});

test('defaults: load-server-state-from-file and default-server check are inherited, named defaults via from', () => {
  const info = readConfig(
    [
      'defaults base',
      '    load-server-state-from-file global',
      '    default-server check',
      'defaults',
      '    mode http',
      'backend plain',
      '    server s 1.2.3.4:80',
      'backend derived from base',
      '    server s 1.2.3.4:80',
    ].join('\n'),
  );
  assert.is(info.backends.get('plain')!.loadServerState, 'none');
  assert.is(info.backends.get('plain')!.servers[0]!.checked, false);
  assert.is(info.backends.get('derived')!.loadServerState, 'global');
  assert.is(info.backends.get('derived')!.servers[0]!.checked, true);
});

test("a backend's default-server adds to the defaults section's, and each server line sees the words before it", () => {
  const info = readConfig(
    [
      'defaults',
      '    default-server check',
      'backend b',
      '    default-server inter 2s',
      '    server s1 1.2.3.4:80',
      '    default-server no-check',
      '    server s2 1.2.3.5:80',
    ].join('\n'),
  );
  const [s1, s2] = info.backends.get('b')!.servers;
  assert.equal([s1!.checked, s1!.defaultServer], [true, ['check', 'inter', '2s']]);
  assert.equal([s2!.checked, s2!.defaultServer], [false, ['check', 'inter', '2s', 'no-check']]);
});

test('listen sections count as backends; a relative state file joins server-state-base', () => {
  const info = readConfig('global\n  server-state-base /var/state/\n  server-state-file lb1\nlisten web\n  bind :80\n  server a 1.1.1.1:80 check\n');
  assert.is(info.serverStateFile, '/var/state/lb1');
  assert.equal([...info.backends.keys()], ['web']);
});

test.run();
