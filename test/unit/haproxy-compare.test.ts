import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { diffConfigs, formatDifferences, haproxyWords, parseHaproxyConfig } from '../helpers/haproxy-compare.js';

// Shaped like Octavia's 11.0.0 output (double spaces, 8-space ACL indents).
const OCTAVIA = `# Configuration for loadbalancer lb1
global
    daemon
    user nobody
    maxconn 50000

defaults
    log global
    retries 3

peers lb1_peers
    peer amp_a 10.0.1.4:1025
    peer amp_b 10.0.1.5:1025

frontend l1
    maxconn 50000
    bind 10.0.0.1:443 ssl crt-list /var/lib/octavia/certs/lb1/l1.pem ca-file /var/lib/octavia/certs/lb1/ca.pem verify required  ciphers ECDHE-RSA-AES256-GCM-SHA384
    mode http
        acl r1 path -m beg /api
    use_backend p2:l1 if r1
        acl r2 req.hdr(host) -i -m str example.com
    use_backend p3:l1 if r2
    default_backend p1:l1
    timeout client 50000
    log-format 12345\\ lb1\\ %f\\ %ci

backend p1:l1
    mode http
    balance roundrobin
    timeout check 3s
    option httpchk GET /healthz
    http-check expect rstatus 204|202|200|203|201
    server m1 10.0.0.5:80 weight 1 check inter 5s fall 3 rise 2 cookie m1
    server m2 10.0.0.6:80 weight 1 check inter 5s fall 3 rise 2 cookie m2

backend p2:l1
    mode http
    balance roundrobin
    server m3 10.0.0.7:443 weight 1 check check-ssl verify none inter 5s fall 3 rise 2 ssl ca-file /c/ca.pem crl-file /c/crl.pem verify required sni ssl_fc_sni

backend p3:l1
    mode http
    balance leastconn
    server m4 10.0.0.8:80 weight 1
`;

test('parse: sections by keyword and name, comments and blank lines dropped', () => {
  const cfg = parseHaproxyConfig(OCTAVIA);
  assert.equal([...cfg.keys()], ['global', 'defaults', 'peers lb1_peers', 'frontend l1', 'backend p1:l1', 'backend p2:l1', 'backend p3:l1']);
  assert.equal(
    cfg.get('global')!.directives.map((d) => d.text),
    ['daemon', 'user nobody', 'maxconn 50000'],
  );
  const server = cfg.get('backend p1:l1')!.directives.find((d) => d.keyword === 'server')!.server!;
  assert.equal(server.name, 'm1');
  assert.equal(server.address, '10.0.0.5:80');
  assert.equal(server.options.get('inter'), ['5s']);
  assert.equal(server.options.get('check'), []);
  assert.equal(server.options.get('cookie'), ['m1']);
});

test('the same config compares equal to itself', () => {
  assert.equal(diffConfigs(OCTAVIA, OCTAVIA), []);
});

test('whitespace runs, tabs, indents and comments do not matter', () => {
  const ours = OCTAVIA.replace('verify required  ciphers', 'verify required ciphers')
    .replace('        acl r1 path', '\tacl   r1\tpath')
    .replace('    maxconn 50000\n\ndefaults', '    maxconn    50000   # sum of the listeners\n\n# defaults follow\ndefaults');
  assert.equal(diffConfigs(ours, OCTAVIA), [], formatDifferences(diffConfigs(ours, OCTAVIA)));
});

test('quoted and backslash-escaped words are the same word', () => {
  assert.equal(haproxyWords('acl a path -m str "/a b"'), ['acl', 'a', 'path', '-m', 'str', '/a b']);
  assert.equal(haproxyWords("acl a path -m str '/a\\ b'"), ['acl', 'a', 'path', '-m', 'str', '/a\\ b']);
  assert.equal(haproxyWords('acl a path -m reg \\\\d+\\#x # comment'), ['acl', 'a', 'path', '-m', 'reg', '\\d+#x']);
  const a = 'frontend f\n    acl a path -m str "/a b"\n';
  const b = 'frontend f\n    acl a path -m str /a\\ b\n';
  assert.equal(diffConfigs(a, b), []);
});

test('server options compare whatever their order', () => {
  const ours = OCTAVIA.replace(
    'server m1 10.0.0.5:80 weight 1 check inter 5s fall 3 rise 2 cookie m1',
    'server m1 10.0.0.5:80 cookie m1 rise 2 fall 3   inter 5s check weight 1',
  );
  assert.equal(diffConfigs(ours, OCTAVIA), []);
});

test('a repeated server option keeps its last value, as in haproxy', () => {
  // Octavia writes "check-ssl verify none" and later "verify required": haproxy keeps "required".
  const ours = OCTAVIA.replace(
    'check check-ssl verify none inter 5s fall 3 rise 2 ssl ca-file /c/ca.pem crl-file /c/crl.pem verify required sni ssl_fc_sni',
    'ssl verify required sni ssl_fc_sni ca-file /c/ca.pem crl-file /c/crl.pem check check-ssl inter 5s fall 3 rise 2',
  );
  assert.equal(diffConfigs(ours, OCTAVIA), []);
  const wrong = ours.replace('ssl verify required', 'ssl verify none');
  assert.equal(diffConfigs(wrong, OCTAVIA), [
    { section: 'backend p2:l1', kind: 'server-option', detail: 'server m3: verify none (ours) vs verify required (theirs)' },
  ]);
});

test('rstatus alternatives compare as a set', () => {
  const ours = OCTAVIA.replace('rstatus 204|202|200|203|201', 'rstatus 200|201|202|203|204');
  assert.equal(diffConfigs(ours, OCTAVIA), []);
  const fewer = OCTAVIA.replace('rstatus 204|202|200|203|201', 'rstatus 200|201|202');
  assert.equal(diffConfigs(fewer, OCTAVIA), [
    { section: 'backend p1:l1', kind: 'missing-line', detail: 'http-check expect rstatus 200|201|202|203|204' },
    { section: 'backend p1:l1', kind: 'extra-line', detail: 'http-check expect rstatus 200|201|202' },
  ]);
});

test('lines other than acl/http-request/redirect/use_backend/server may move', () => {
  const ours = OCTAVIA.replace('    mode http\n    balance leastconn\n', '    balance leastconn\n    mode http\n');
  assert.equal(diffConfigs(ours, OCTAVIA), []);
});

test('a changed weight is a server-option difference', () => {
  const ours = OCTAVIA.replace('server m2 10.0.0.6:80 weight 1', 'server m2 10.0.0.6:80 weight 2');
  assert.equal(diffConfigs(ours, OCTAVIA), [{ section: 'backend p1:l1', kind: 'server-option', detail: 'server m2: weight 2 (ours) vs weight 1 (theirs)' }]);
});

test('missing and extra server options, a changed address and a missing server', () => {
  const ours = OCTAVIA.replace(
    'server m1 10.0.0.5:80 weight 1 check inter 5s fall 3 rise 2 cookie m1',
    'server m1 10.0.0.9:80 weight 1 check inter 5s fall 3 rise 2 backup',
  ).replace('    server m2 10.0.0.6:80 weight 1 check inter 5s fall 3 rise 2 cookie m2\n', '');
  assert.equal(diffConfigs(ours, OCTAVIA), [
    { section: 'backend p1:l1', kind: 'missing-line', detail: 'server m2 10.0.0.6:80 weight 1 check inter 5s fall 3 rise 2 cookie m2' },
    { section: 'backend p1:l1', kind: 'server-option', detail: 'server m1: address 10.0.0.9:80 (ours) vs 10.0.0.5:80 (theirs)' },
    { section: 'backend p1:l1', kind: 'server-option', detail: 'server m1: missing option cookie m1' },
    { section: 'backend p1:l1', kind: 'server-option', detail: 'server m1: extra option backup' },
  ]);
});

test('a missing backend and an extra one are section differences', () => {
  const start = OCTAVIA.indexOf('\nbackend p3:l1') + 1;
  const ours = `${OCTAVIA.slice(0, start)}backend p4:l1\n    mode tcp\n`;
  assert.equal(diffConfigs(ours, OCTAVIA), [
    { section: 'backend p3:l1', kind: 'missing-section', detail: 'backend p3:l1 (3 lines)' },
    { section: 'backend p4:l1', kind: 'extra-section', detail: 'backend p4:l1 (1 lines)' },
  ]);
});

test('reordered use_backend lines are an order difference', () => {
  const ours = OCTAVIA.replace('    use_backend p2:l1 if r1\n', '').replace(
    '    use_backend p3:l1 if r2\n',
    '    use_backend p3:l1 if r2\n    use_backend p2:l1 if r1\n',
  );
  assert.equal(diffConfigs(ours, OCTAVIA), [
    {
      section: 'frontend l1',
      kind: 'order',
      detail: 'use_backend lines in another order: #1 is "use_backend p3:l1 if r2" in ours, "use_backend p2:l1 if r1" in theirs',
    },
  ]);
});

test('reordered servers are an order difference', () => {
  const m1 = '    server m1 10.0.0.5:80 weight 1 check inter 5s fall 3 rise 2 cookie m1\n';
  const ours = OCTAVIA.replace(m1, '').replace('cookie m2\n', `cookie m2\n${m1}`);
  assert.equal(
    diffConfigs(ours, OCTAVIA).map((d) => d.kind),
    ['order'],
  );
});

test('lines of different ordered keywords may interleave differently', () => {
  // haproxy runs http-request, then redirect, then use_backend rules whatever the config order.
  const a = 'frontend f\n    redirect prefix /x if r1\n    use_backend b if r2\n';
  const b = 'frontend f\n    use_backend b if r2\n    redirect prefix /x if r1\n';
  assert.equal(diffConfigs(a, b), []);
});

test('a line added or changed outside servers is reported once, with its section', () => {
  const ours = OCTAVIA.replace('    timeout client 50000\n', '    timeout client 60000\n    option forwardfor\n');
  assert.equal(diffConfigs(ours, OCTAVIA), [
    { section: 'frontend l1', kind: 'missing-line', detail: 'timeout client 50000' },
    { section: 'frontend l1', kind: 'extra-line', detail: 'timeout client 60000' },
    { section: 'frontend l1', kind: 'extra-line', detail: 'option forwardfor' },
  ]);
});

test.run();
