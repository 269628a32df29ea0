import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tokenizeLine } from '../../agent/haproxy/config/tokenizer.js';
import { translateLegacyHttpchk } from '../../agent/haproxy/config/legacy-httpchk.js';

// The lines as Octavia 11 to 16 render them (backslashes as in the file).
const V10 = String.raw`    option httpchk HEAD /status?full=1 HTTP/1.0\r\n`;
const HOST11 = String.raw`    option httpchk POST /check HTTP/1.1\r\nHost:\ health.example.test`;

const backend = (check: string) =>
  [
    'backend pool-1:listener-1',
    '    mode http',
    '    balance roundrobin',
    check,
    '    http-check expect rstatus 200',
    '    server m1 10.0.0.1:80 weight 1 check inter 1s fall 2 rise 2',
    '',
  ].join('\n');

test('HTTP/1.0 with an empty header block: option httpchk + http-check send meth/uri/ver', () => {
  assert.is(translateLegacyHttpchk(backend(V10)), backend('    option httpchk\n    http-check send meth HEAD uri /status?full=1 ver HTTP/1.0'));
});

test('HTTP/1.1 with Host: the header goes to hdr, as Octavia 17+ sends it', () => {
  assert.is(
    translateLegacyHttpchk(backend(HOST11)),
    backend('    option httpchk\n    http-check send meth POST uri /check ver HTTP/1.1 hdr Host health.example.test'),
  );
});

test('every other line stays byte for byte; a trailing comment stays on the option line', () => {
  const text = `global\n  daemon\n${backend(`${HOST11}  # monitor hm-1`)}`;
  const out = translateLegacyHttpchk(text).split('\n');
  assert.is(out[5], '    option httpchk  # monitor hm-1');
  assert.equal([...out.slice(0, 5), ...out.slice(7)], [...text.split('\n').slice(0, 5), ...text.split('\n').slice(6)]);
});

test('several headers, a body, spaces and percent signs read back as the same request', () => {
  const line = String.raw`  option httpchk GET "/a b" HTTP/1.1\r\nHost:\ a.test\r\nX-Ratio:\ 50%\ off\r\n\r\n{\"k\":1}`;
  const [opt, send] = translateLegacyHttpchk(line).split('\n');
  assert.equal(tokenizeLine(opt!).words, ['option', 'httpchk']);
  assert.equal(tokenizeLine(send!).words, [
    'http-check',
    'send',
    'meth',
    'GET',
    'uri',
    '/a b',
    'ver',
    'HTTP/1.1',
    'hdr',
    'Host',
    'a.test',
    'hdr',
    'X-Ratio',
    '50%% off',
    'body',
    '{"k":1}',
  ]);
});

test('configs that are not the legacy form are returned unchanged', () => {
  for (const text of [
    backend('    option httpchk GET /healthz'),
    backend('    option httpchk GET /healthz HTTP/1.1\n    http-check send hdr Host a.test'), // Octavia 17+
    backend('    option httpchk'),
    backend(String.raw`    option httpchk GET / HTTP/1.1\r\nno-colon-here`), // not a header: haproxy -c says why
    backend(String.raw`    # option httpchk GET / HTTP/1.0\r\n`),
  ]) {
    assert.is(translateLegacyHttpchk(text), text);
  }
});

test.run();
