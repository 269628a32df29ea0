// Server-line words spliced into master CLI commands (issue 26, class 3): a
// word the CLI would split or interpret sends the member change down the
// reload path, one test per metacharacter of haproxy's CLI parser.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isCliWord } from '../../agent/haproxy/process/cli-words.js';
import { planRuntime } from '../../agent/haproxy/apply/runtime-plan.js';
import { RuntimeApi, RuntimeCommandError } from '../../agent/haproxy/process/runtime-api.js';

const cfg = (servers: string[]) =>
  [
    'global',
    '    maxconn 100',
    '',
    'frontend listener1',
    '    bind 127.0.0.1:80',
    '    default_backend pool1',
    '',
    'backend pool1',
    '    balance roundrobin',
    ...servers.map((s) => `    server ${s}`),
    '',
  ].join('\n');
const RUNNING = cfg(['m1 10.0.0.1:80 weight 1 check inter 2s']);

/** The plan for adding m2 with `words` after its address, as the line is written in the config. */
const addWith = (words: string) => planRuntime(RUNNING, cfg(['m1 10.0.0.1:80 weight 1 check inter 2s', `m2 10.0.0.2:80 weight 1 check ${words}`]));

// Each metacharacter: what haproxy's CLI does with it (cli.c, 2.6 to 3.4), and a config word that carries it.
const METACHARACTERS: [string, string][] = [
  ['";" ends a command at the master', 'check-sni "x;@1 disable frontend listener1"'],
  ['a newline ends a command', 'check-sni "x\\n@1 disable frontend listener1"'],
  ['a carriage return is dropped at the end of a command', 'check-sni "x\\r"'],
  ['NUL ends the word in C', 'check-sni "x\\x00y"'],
  ['a backslash escapes the next character', 'check-sni "x\\\\;y"'],
  ['a space splits words', 'check-sni "x y"'],
  ['a tab splits words', 'check-sni "x\\ty"'],
  ['a double quote is literal on the CLI, removed by the config parser', "check-sni 'a\"b'"],
  ['a single quote is literal on the CLI, removed by the config parser', 'check-sni "a\'b"'],
  ['"#" is literal on the CLI, a comment in the config', 'check-sni "a#b"'],
  ['"$" is literal on the CLI, an environment variable in the config', 'check-sni "a$HOME"'],
  ['a leading "@" names a process when the word comes first', 'check-sni "@1"'],
  ['"<<" opens a payload as the last word', 'check-sni "<<"'],
  ['an empty word disappears', 'check-sni ""'],
];

for (const [what, words] of METACHARACTERS) {
  test(`${what}: the member comes in with a reload`, () => {
    const plan = addWith(words);
    assert.equal(plan.steps, []);
    assert.match(plan.reloadReason ?? '', /member pool1\/m2: .* would not reach haproxy's CLI as one word/);
  });
}

test('the words of real server lines go to the CLI: an added member is a runtime step', () => {
  const plan = addWith('rise 2 fall 3 ssl verify required ca-file /var/lib/octavia/certs/lb/ca.pem sni req.hdr(host) alpn h2,http/1.1 check-sni a.example');
  assert.is(plan.reloadReason, null);
  assert.equal(
    plan.steps.map((s) => s.kind),
    ['add'],
  );
  for (const w of ['10.0.0.1:80', 'ipv4@10.0.0.1:80', 'unix@/run/x.sock', '2001:db8::1', '[2001:db8::1]:80', '5s', 'crc32c,ssl', 'name=v%20']) {
    assert.ok(isCliWord(w), w);
  }
});

test('a weight or admin change of a member whose name the CLI would split is a reload', () => {
  const before = cfg(['m;x 10.0.0.1:80 weight 1']);
  const plan = planRuntime(before, cfg(['m;x 10.0.0.1:80 weight 2']));
  assert.equal(plan.steps, []);
  assert.match(plan.reloadReason ?? '', /would not reach/);
});

test('the runtime API refuses such a command itself, before the socket', async () => {
  const api = new RuntimeApi('/nonexistent/master.sock', 1000);
  try {
    await api.command('add server pool1/m2 10.0.0.2:80 check-sni x;@1 disable frontend listener1');
    assert.unreachable('sent');
  } catch (err) {
    assert.instance(err, RuntimeCommandError, String(err));
    assert.match((err as Error).message, /"x;@1"/);
  }
});

test.run();
