import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readConfig, tokenizeLine } from '../../agent/haproxy/config-reader.js';

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
    assert.equal(fast.words, slow.words.filter((w) => w !== ''), JSON.stringify(plain));
    assert.is(fast.codeEnd, plain.trimEnd().length, JSON.stringify(plain));
  }
});

test('reads backends, servers, checks and the server-state settings', () => {
  const info = readConfig([
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
  ].join('\n'));
  assert.is(info.serverStateFile, '/var/lib/octavia/lb/servers-state');
  const a = info.backends.get('pool-a:listener-1')!;
  assert.is(a.loadServerState, 'global');
  assert.equal(a.servers.map((s) => [s.name, s.checked, s.tracked]), [['m1', true, false], ['m2', false, false], ['m3', false, true]]);
  const b = info.backends.get('pool-b')!;
  assert.is(b.loadServerState, 'none');
  assert.equal(b.servers.map((s) => [s.name, s.checked, s.initStateOnLine]), [['n1', true, false], ['n2', false, false], ['n3', true, true]]);
  assert.is(b.servers[0]!.address, '[2001:db8::1]:80');
  assert.is(b.servers[0]!.line, 11);
});

test('defaults: load-server-state-from-file and default-server check are inherited, named defaults via from', () => {
  const info = readConfig([
    'defaults base',
    '    load-server-state-from-file global',
    '    default-server check',
    'defaults',
    '    mode http',
    'backend plain',
    '    server s 1.2.3.4:80',
    'backend derived from base',
    '    server s 1.2.3.4:80',
  ].join('\n'));
  assert.is(info.backends.get('plain')!.loadServerState, 'none');
  assert.is(info.backends.get('plain')!.servers[0]!.checked, false);
  assert.is(info.backends.get('derived')!.loadServerState, 'global');
  assert.is(info.backends.get('derived')!.servers[0]!.checked, true);
});

test("a backend's default-server adds to the defaults section's, and each server line sees the words before it", () => {
  const info = readConfig([
    'defaults',
    '    default-server check',
    'backend b',
    '    default-server inter 2s',
    '    server s1 1.2.3.4:80',
    '    default-server no-check',
    '    server s2 1.2.3.5:80',
  ].join('\n'));
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
