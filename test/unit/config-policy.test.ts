// The config policy (agent/haproxy/config/policy/haproxy-config.ts), pure: every refused
// directive is refused with its line, what Octavia renders is not, and the
// agent's own 2.0 renderer never emits a refused directive for any fixture.
// Octavia's own renders (11, 16, 19) and the API 1.0 route are in
// test/interop/config-policy.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isPlainServerLine } from '../../agent/haproxy/config/policy/haproxy-allow-list.js';
import { checkConfigPolicy, insideDirs, readConfigPolicy } from '../../agent/haproxy/config/policy/haproxy-config.js';
import { parsePolicyExtension, PolicyExtensionError, readPolicyExtension } from '../../agent/haproxy/config/policy/haproxy-allowed-extension.js';
import { parseAgentConfig } from '../../agent/config/agent-config.js';
import type { PolicyContext } from '../../agent/haproxy/config/policy/types.js';
import { renderLoadBalancer } from '../../agent/render/render.js';
import { DEFAULT_RENDER_SETTINGS, type RenderSettings } from '../../agent/render/settings.js';
import { validateSpec } from '../../agent/model/spec/validate.js';

const LB = '7e4e5c6a-1111-4222-8333-444455556666';
const CTX: PolicyContext = {
  lbId: LB,
  basePath: '/var/lib/octavia',
  baseCertDir: '/var/lib/octavia/certs',
  protectedFiles: ['/etc/octavia/certs/server.pem', '/etc/octavia/certs/client_ca.pem', '/etc/octavia/amphora-agent.conf'],
};
const CERTS = `/var/lib/octavia/certs/${LB}`;

/** An Octavia 11-style config (abridged) with `extra` lines appended to a section. */
function config(extra: { global?: string[]; frontend?: string[]; backend?: string[]; tail?: string[] } = {}): string {
  return [
    `# Configuration for loadbalancer ${LB}`,
    'global',
    '    daemon',
    '    user nobody',
    '    log /run/rsyslog/octavia/log local0',
    '    log /run/rsyslog/octavia/log local1 notice',
    `    stats socket /var/lib/octavia/${LB}.sock mode 0666 level user`,
    `    server-state-file /var/lib/octavia/${LB}/servers-state`,
    '    maxconn 50000',
    '    external-check',
    '    insecure-fork-wanted',
    ...(extra.global ?? []),
    '',
    'defaults',
    '    log global',
    '    retries 3',
    '',
    'frontend listener-1',
    '    maxconn 50000',
    '    redirect scheme https if !{ ssl_fc }',
    `    bind 203.0.113.10:443 ssl crt-list ${CERTS}/listener-1.pem ca-file ${CERTS}/ca.pem verify required crl-file ${CERTS}/crl.pem ciphers ECDHE-RSA-AES256-GCM-SHA384 no-sslv3`,
    '    mode http',
    '        acl rule-1 path -m beg /api',
    '        acl rule-2 req.hdr(host) -i -m str www.example.com',
    '    redirect code 302 location https://example.com/a?b=1&amp;c=2 if rule-1',
    '    default_backend pool-1:listener-1',
    '    log-format 12345\\ %f\\ %ci\\ %cp',
    ...(extra.frontend ?? []),
    '',
    'backend pool-1:listener-1',
    '    mode http',
    '    balance roundrobin',
    '    load-server-state-from-file global',
    '    option external-check',
    '    external-check command /var/lib/octavia/ping-wrapper.sh',
    '    fullconn 50000',
    `    server m-1 192.0.2.10:80 weight 1 check inter 5s fall 3 rise 2 ssl crt ${CERTS}/client.pem ca-file ${CERTS}/ca.pem crl-file ${CERTS}/crl.pem verify required sni ssl_fc_sni`,
    '    server m-2 2001:db8::10:80 weight 1 check inter 5s fall 3 rise 2 backup disabled',
    ...(extra.backend ?? []),
    '',
    ...(extra.tail ?? []),
  ].join('\n');
}

const refused = (c: string) => checkConfigPolicy(c, CTX);
/** The one violation of `c`: its directive and (1-based) line text. */
function only(c: string): { directive: string; text: string; reason: string } {
  const v = refused(c);
  assert.is(v.length, 1, `expected exactly one violation, got:\n${JSON.stringify(v, null, 1)}`);
  return { directive: v[0]!.directive, text: c.split('\n')[v[0]!.line - 1]!, reason: v[0]!.reason };
}

test('an Octavia-style config passes', () => {
  assert.equal(refused(config()), []);
});

test('paths: absolute, inside after resolving .., not a prefix match', () => {
  assert.ok(insideDirs(`${CERTS}/a.pem`, [CERTS]));
  assert.ok(insideDirs(`${CERTS}/./x/../a.pem`, [CERTS]));
  assert.not.ok(insideDirs(`${CERTS}/../../../../etc/octavia/certs/server.pem`, [CERTS]));
  assert.not.ok(insideDirs(`${CERTS}-other/a.pem`, [CERTS]));
  assert.not.ok(insideDirs('a.pem', [CERTS]));
  assert.not.ok(insideDirs(CERTS, [CERTS]));
});

const SHADOW = '/etc/shadow';
// [name, added lines, the refusal's directive, what its reason says]
const cases: [string, Parameters<typeof config>[0], string, RegExp][] = [
  // Class 1 of issue 26: an escaped NUL hid the keyword from exact matches.
  ['program section behind an escaped NUL', { tail: ['prog\\x00ram evil', '    command /bin/sh -c id'] }, 'prog\\x00ram', /NUL/],
  ['return file behind an escaped NUL', { frontend: [`    http-request return status 200 file /etc/sh\\x00adow`] }, 'http-request', /NUL/],
  ['program section', { tail: ['program evil', '    command /bin/sh -c id'] }, 'program', /not a section/],
  ['program section in quotes', { tail: ['"program" evil'] }, 'program', /not a section/],
  [
    'http-request return file /etc/shadow',
    { frontend: [`    http-request return status 200 content-type text/plain file ${SHADOW}`] },
    'http-request return',
    /"return"/,
  ],
  [
    'http-request return lf-file',
    { frontend: ['    http-request return status 200 lf-file /etc/octavia/amphora-agent.conf if TRUE'] },
    'http-request return',
    /"return"/,
  ],
  ['an admin stats socket on TCP', { global: ['    stats socket ipv4@203.0.113.10:9999 level admin'] }, 'stats socket', /only \/var\/lib\/octavia\//],
  ['a stats socket on ip:port', { global: ['    stats socket 203.0.113.10:9999 mode 666 level user'] }, 'stats socket', /listens on/],
  ['a stats socket elsewhere', { global: ['    stats socket /tmp/x.sock mode 666 level user'] }, 'stats socket', /listens on/],
  ['the master socket as stats socket', { global: [`    stats socket /var/lib/octavia/${LB}/master.sock mode 666 level user`] }, 'stats socket', /listens on/],
  ['the own stats socket at level admin', { global: [`    stats socket /var/lib/octavia/${LB}.sock mode 0666 level admin`] }, 'stats socket', /"admin"/],
  [
    'the own stats socket with expose-fd',
    { global: [`    stats socket /var/lib/octavia/${LB}.sock mode 0666 level user expose-fd listeners`] },
    'stats socket',
    /more than/,
  ],
  ['stats admin', { frontend: ['    stats admin if TRUE'] }, 'stats admin', /not a keyword/],
  ['log to any address', { global: ['    log 198.51.100.1:514 local0'] }, 'log', /sends logs to/],
  ['log to stdout', { global: ['    log stdout format raw local0'] }, 'log', /sends logs to/],
  ['log in a frontend', { frontend: ['    log /dev/log local0'] }, 'log', /not a keyword/],
  ['user root', { global: ['    user root'] }, 'user', /<user>/],
  ['user root in a second global section', { tail: ['global', '    user root'] }, 'user', /<user>/],
  // Class 2: keywords the deny-list never looked at.
  ['bind in another network namespace', { frontend: ['    bind 203.0.113.10:80 namespace /proc/1/ns/net'] }, 'bind', /"namespace" is not an option of bind/],
  ['the env() fetch in a header', { backend: ['    http-request set-header X-Env %[env(HOME)]'] }, 'http-request set-header', /fetch env\(\)/],
  ['the env() fetch in a log-format', { frontend: ['    log-format %{+Q}[env(PATH)]'] }, 'log-format', /fetch env\(\)/],
  ['the env() fetch in an acl', { frontend: ['    acl e env(HOME) -m found'] }, 'acl', /fetch env\(\)/],
  ['the env() fetch in an anonymous acl', { frontend: ['    use_backend pool-1:listener-1 if { env(X) -m found }'] }, 'use_backend', /fetch env\(\)/],
  ['the env() fetch in a redirect', { frontend: ['    redirect location https://x.test/%[env(HOME)] if rule-1'] }, 'redirect location', /fetch env\(\)/],
  ['the env() fetch in stick on', { backend: ['    stick on env(HOME)'] }, 'stick on', /fetch env\(\)/],
  ['uid 0', { global: ['    uid 0'] }, 'uid', /not a keyword/],
  ['uid -0', { global: ['    uid -0'] }, 'uid', /not a keyword/],
  ['gid 0', { global: ['    gid 0'] }, 'gid', /not a keyword/],
  ['group root', { global: ['    group root'] }, 'group', /not a keyword/],
  ['server-state-file-name', { backend: ['    server-state-file-name /etc/octavia/certs/server.pem'] }, 'server-state-file-name', /not a keyword/],
  ['server-state-base', { global: ['    server-state-base /etc/octavia/certs'] }, 'server-state-base', /not a keyword/],
  ['server-state-file outside', { global: ['    server-state-file /etc/octavia/amphora-agent.conf'] }, 'server-state-file', /the server state file is/],
  ['an unknown keyword', { frontend: ['    frobnicate 1'] }, 'frobnicate', /not a keyword Octavia's templates render in frontend/],
  ['.if', { tail: ['.if defined(HAPROXY_MWORKER)', '.endif'] }, '.if', /not a keyword/],
  ['.diag', { frontend: ['.diag "x"'] }, '.diag', /not a keyword/],
  ['.notice', { global: ['.notice "x"'] }, '.notice', /not a keyword/],
  ['.warning', { global: ['.warning "x"'] }, '.warning', /not a keyword/],
  // More.
  ['lua-load', { global: ['    lua-load /tmp/x.lua'] }, 'lua-load', /not a keyword/],
  ['lua-load escaped', { global: ['    lua\\x2dload /tmp/x.lua'] }, 'lua-load', /not a keyword/],
  ['external-check command /bin/sh', { backend: ['    external-check command /bin/sh'] }, 'external-check command', /only Octavia's/],
  [
    'external-check command with arguments',
    { backend: ['    external-check command /var/lib/octavia/ping-wrapper.sh -x'] },
    'external-check command',
    /more than/,
  ],
  ['external-check path', { backend: ['    external-check path /tmp'] }, 'external-check path', /"path"/],
  ['errorfile', { backend: [`    errorfile 503 ${SHADOW}`] }, 'errorfile', /not a keyword/],
  ['acl -f', { frontend: ['    acl k req.hdr(x) -f /etc/octavia/certs/server.pem'] }, 'acl', /flag "-f"/],
  ['acl -f after -m', { frontend: ['    acl k path -m str -f /etc/octavia/certs/server.pem'] }, 'acl', /flag "-f"/],
  ['acl value with an escaped newline', { frontend: ['    acl k path -m str "a\\nlua-load /x"'] }, 'acl', /control character/],
  [
    'map converter',
    { backend: ['    http-request set-header X %[req.hdr(x),map_beg(/etc/octavia/certs/server.pem)]'] },
    'http-request set-header',
    /converter map_beg/,
  ],
  ['an unterminated %[', { backend: ['    http-request set-header X %[req.hdr(x)'] }, 'http-request set-header', /unterminated/],
  ['balance hdr()', { backend: ['    balance hdr(host)'] }, 'balance', /one of/],
  ['bind crt-list outside', { frontend: ['    bind 203.0.113.10:8443 ssl crt-list /etc/octavia/certs/server.pem'] }, 'bind', /outside/],
  ['bind crt-list in the base dir', { frontend: ['    bind 203.0.113.10:8443 ssl crt-list /var/lib/octavia/x.pem'] }, 'bind', /outside/],
  ['bind crt (not rendered)', { frontend: [`    bind 203.0.113.10:8443 ssl crt ${CERTS}/x.pem`] }, 'bind', /"crt" is not an option of bind/],
  ['bind on a unix socket', { frontend: ['    bind /var/lib/octavia/x.sock'] }, 'bind', /<addr>/],
  ['bind on an abstract socket', { frontend: ['    bind abns@x'] }, 'bind', /<addr>/],
  ['bind on two addresses', { frontend: ['    bind 203.0.113.10:80,203.0.113.11:80'] }, 'bind', /<addr>/],
  ['server ca-file outside', { backend: ['    server x 192.0.2.1:443 ssl ca-file /etc/octavia/certs/client_ca.pem'] }, 'server', /outside/],
  ['server on a unix socket', { backend: [`    server x unix@/var/lib/octavia/${LB}/master.sock`] }, 'server', /<addr>/],
  ['server check-sni with a semicolon', { backend: ['    server x 192.0.2.1:443 check-sni "x;@1 disable frontend l"'] }, 'server', /"check-sni"/],
  ['peer on a unix socket', { tail: ['peers p', `    peer x unix@/var/lib/octavia/${LB}/master.sock`] }, 'peer', /<addr>/],
  ['a resolvers section', { tail: ['resolvers r', '    nameserver x 192.0.2.53:53'] }, 'resolvers', /not a section/],
  ['a listen section', { tail: ['listen l', '    bind 203.0.113.10:81'] }, 'listen', /not a section/],
  ['a keyword of another section', { frontend: ['    daemon'] }, 'daemon', /in frontend/],
  ['chroot', { global: ['    chroot /'] }, 'chroot', /not a keyword/],
  ['setenv', { global: ['    setenv X /etc'] }, 'setenv', /not a keyword/],
  ['environment expansion', { backend: [`    option httpchk GET "$\{HOME}/x"`] }, 'option', /environment/],
  ['environment expansion in a keyword', { backend: ['    "$LUA"-load /tmp/x.lua'] }, '$LUA-load', /environment/],
  ['ssl-engine', { global: ['    ssl-engine rdrand'] }, 'ssl-engine', /not a keyword/],
  ['filter spoe', { frontend: ['    filter spoe engine x config /etc/octavia/amphora-agent.conf'] }, 'filter', /not a keyword/],
  ['pidfile', { global: ['    pidfile /etc/octavia/amphora-agent.conf'] }, 'pidfile', /not a keyword/],
  ['a timeout that is not a time', { frontend: ['    timeout client 5s;x'] }, 'timeout client', /<time>/],
  ['a header name with a space', { backend: ['    http-request set-header "X A" b'] }, 'http-request set-header', /<header>/],
  ['a cipher list with a space', { frontend: [`    bind 203.0.113.10:8443 ssl crt-list ${CERTS}/l.pem ciphers "A B"`] }, 'bind', /<ciphers>/],
  [
    'an httpchk Host header with more headers',
    { backend: ['    option httpchk GET / "HTTP/1.1\\r\\nHost: a\\r\\nX: y"'] },
    'option httpchk',
    /<httpchk-version>/,
  ],
];
for (const [name, extra, directive, reason] of cases) {
  test(`refused: ${name}`, () => {
    const c = config(extra);
    const v = refused(c);
    assert.ok(v.length >= 1, 'not refused');
    const lines = [...(extra?.global ?? []), ...(extra?.frontend ?? []), ...(extra?.backend ?? []), ...(extra?.tail ?? [])];
    const hit = v.find((x) => x.directive === directive);
    assert.ok(hit, `no refusal of ${directive}: ${JSON.stringify(v)}`);
    assert.match(hit!.reason, reason);
    for (const x of v) assert.ok(lines.includes(c.split('\n')[x.line - 1]!), `line ${x.line} is not an added line`);
  });
}

test('insecure-fork-wanted without the PING wrapper is refused, on its line', () => {
  const c = config()
    .replace('    external-check command /var/lib/octavia/ping-wrapper.sh\n', '')
    .replace('    external-check\n', '')
    .replace('    option external-check\n', '');
  const v = only(c);
  assert.is(v.directive, 'insecure-fork-wanted');
  assert.is(v.text.trim(), 'insecure-fork-wanted');
});

test('a line an escaped newline cannot hide: each physical line is read on its own', () => {
  const v = only(config({ frontend: ['        acl r path -m str /x', 'program p'] }));
  assert.is(v.directive, 'program');
});

test('accepted: the syslog socket as unix@, a .sock in the LB dir, a protected file only refused by name', () => {
  assert.equal(
    refused(
      config({
        global: ['    log unix@/run/rsyslog/octavia/log local0', `    stats socket /var/lib/octavia/${LB}/extra.sock mode 0600 level user`],
        frontend: ['    use_backend pool-1:listener-1 if rule-1 || !rule-2 or { path_end -m str .x }'],
      }),
    ),
    [],
  );
  assert.equal(refused(config({ backend: [`    server x 192.0.2.1:443 ssl ca-file ${CERTS}/agent.pem`] })), []);
  const own = checkConfigPolicy(config({ backend: [`    server x 192.0.2.1:443 ssl ca-file ${CERTS}/agent.pem`] }), {
    ...CTX,
    protectedFiles: [`${CERTS}/agent.pem`],
  });
  assert.match(own[0]?.reason ?? '', /agent's own files/);
});

test('the files a config names are returned for the check on disk, with their kind', () => {
  const { files } = readConfigPolicy(config(), CTX);
  assert.equal(
    files.map((f) => [f.directive, f.kind, f.path.replace(CERTS, 'C').replace(`/var/lib/octavia/${LB}`, 'L')]),
    [
      ['server-state-file', 'file', 'L/servers-state'],
      ['bind', 'crt-list', 'C/listener-1.pem'],
      ['bind', 'certificate', 'C/ca.pem'],
      ['bind', 'certificate', 'C/crl.pem'],
      ['server', 'certificate', 'C/client.pem'],
      ['server', 'certificate', 'C/ca.pem'],
      ['server', 'certificate', 'C/crl.pem'],
    ],
  );
});

test('an operator extension allows more lines, options and fetches, and nothing else', () => {
  const ext = parsePolicyExtension(
    [
      '# custom template lines',
      'line frontend http-request set-header <header> <log-format>',
      'server-option maxconn <int>',
      'bind-option accept-proxy',
      'fetch req.ver',
      'converter lower',
    ].join('\n'),
    'ext.conf',
  );
  const extra = {
    frontend: ['    http-request set-header X-Ver %[req.ver,lower]', '    bind 203.0.113.10:81 accept-proxy'],
    backend: ['    server x 192.0.2.1:80 maxconn 10'],
  };
  assert.equal(
    refused(config(extra)).map((x) => x.directive),
    ['http-request set-header', 'bind', 'server'],
    'refused without the extension',
  );
  assert.equal(checkConfigPolicy(config(extra), { ...CTX, allowExtension: ext }), []);
  const env = checkConfigPolicy(config({ frontend: ['    http-request set-header X %[env(HOME)]'] }), { ...CTX, allowExtension: ext });
  assert.match(env[0]?.reason ?? '', /env\(\)/);
  for (const bad of ['line frontend x <nope>', 'fetch env(', 'server-option a b c', 'allow everything']) {
    assert.throws(
      () => parsePolicyExtension(bad, 'ext.conf'),
      (e: Error) => e instanceof PolicyExtensionError && /ext\.conf line 1/.test(e.message),
      bad,
    );
  }
});

test('[amphora_agent] config_policy_extension names the file; it is read as written, and a missing one says so', () => {
  assert.is(parseAgentConfig('').amphoraAgent.configPolicyExtension, null);
  const path = join(mkdtempSync(join(tmpdir(), 'policy-ext-')), 'extension.conf');
  assert.is(parseAgentConfig(`[amphora_agent]\nconfig_policy_extension = ${path}\n`).amphoraAgent.configPolicyExtension, path);
  assert.throws(
    () => readPolicyExtension(path),
    (e: Error) => e instanceof PolicyExtensionError && e.message.includes(path),
  );
  writeFileSync(path, 'fetch req.ver\n');
  assert.equal(readPolicyExtension(path).fetches, ['req.ver']);
});

// The 2.0 renderer: no fixture, in any of its render modes, yields a refused directive.
const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'specs');
const fixtures = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json'))
  .sort();
const otherDirs: RenderSettings = { ...DEFAULT_RENDER_SETTINGS, basePath: '/srv/amp', baseCertDir: '/srv/amp-certs' };

test(`the 2.0 renderer never emits a refused directive (${fixtures.length} fixtures x 2 settings x 2 targets)`, () => {
  assert.ok(fixtures.length >= 20);
  let rendered = 0;
  for (const file of fixtures) {
    const spec = validateSpec(JSON.parse(readFileSync(join(FIXTURES, file), 'utf8')));
    for (const settings of [DEFAULT_RENDER_SETTINGS, otherDirs]) {
      for (const target of [
        { initStateAtStartup: true },
        { initStateAtStartup: false, amphora: { cpuCount: 4, tunedProfiles: ['amphora'], memoryKb: { free: 600000, buffers: 20000, cached: 180000 } } },
      ]) {
        const cfg = renderLoadBalancer(spec, settings, target).haproxyConfig;
        if (cfg === null) continue;
        rendered++;
        const ctx = { ...CTX, lbId: spec.id, basePath: settings.basePath, baseCertDir: settings.baseCertDir };
        assert.equal(checkConfigPolicy(cfg, ctx), [], `${file} (${settings.basePath})`);
        // and the policy does look at these directories: move them and the same text is refused
        assert.ok(checkConfigPolicy(cfg, { ...ctx, basePath: '/elsewhere' }).length > 0, `${file}: a config outside base_path passed`);
      }
    }
  }
  assert.ok(rendered >= 80, `${rendered} configs`);
});

test('2.0 specs: the advisory newlines are refused by the schema; printable tricks render to nothing the policy refuses', () => {
  const spec = (value: string, url: string, ciphers = 'ECDHE-RSA-AES128-GCM-SHA256') => ({
    id: 'lb-tricks',
    vip_address: '203.0.113.9',
    listeners: [
      {
        id: 'l',
        protocol: 'HTTP',
        protocol_port: 80,
        default_pool: { id: 'p', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ id: 'm', address: '192.0.2.1', protocol_port: 80 }] },
        l7policies: [
          { id: 'p1', action: 'REDIRECT_TO_URL', redirect_url: url, rules: [{ id: 'r1', type: 'PATH', compare_type: 'STARTS_WITH', value }] },
          { id: 'p2', action: 'REJECT', rules: [{ id: 'r2', type: 'HEADER', compare_type: 'EQUAL_TO', key: 'X-K', value }] },
        ],
      },
      { id: 't', protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: 'server.pem', tls_ciphers: ciphers },
    ],
  });
  for (const [value, url, ciphers] of [
    ['/x\nprogram p', 'https://x.test/', undefined],
    ['/x', 'https://x.test/\nlua-load /tmp/x', undefined],
    ['/x', 'https://x.test/', 'ECDHE\nerrorfile 503 /etc/octavia/certs/server.pem'],
    ['/x\rlua-load /tmp/x', 'https://x.test/', undefined],
  ] as const) {
    assert.throws(() => validateSpec(spec(value, url, ciphers)), undefined, JSON.stringify([value, url, ciphers]));
  }
  const tricks = [
    '/x lua-load /tmp/x.lua',
    '/x" lua-load "/tmp/x',
    "/x' program p '",
    '/x # program p',
    '/x\\ lua-load',
    '"$HOME"/x',
    '"$' + '{HOME}"',
    `/x errorfile 503 /etc/octavia/certs/server.pem`,
    '/x\\x0alua-load /tmp/x',
    "'\\'' lua-load /x",
  ];
  for (const v of tricks) {
    const cfg = renderLoadBalancer(validateSpec(spec(v, `https://x.test/${v.replace(/ /g, '')}`)), DEFAULT_RENDER_SETTINGS, { initStateAtStartup: false })
      .haproxyConfig!;
    assert.equal(checkConfigPolicy(cfg, { ...CTX, lbId: 'lb-tricks' }), [], `${v}:\n${cfg}`);
  }
});

test('a plain server line skips the full read only where the full read refuses nothing', () => {
  // A trailing comment changes nothing haproxy reads but forces the full read.
  const cfg = (line: string) => `global\n    insecure-fork-wanted\nbackend b\n${line}\n`;
  const words = [
    'weight',
    '1',
    'check',
    'inter',
    '5s',
    'backup',
    'disabled',
    'verify',
    'none',
    'ssl',
    'sni',
    'ssl_fc_sni',
    ...['crt', 'crt-list', 'ca-file', 'crl-file', 'key', 'ocsp', 'issuer', 'sctl', 'ca-verify-file', 'ca-sign-file'],
    '-f',
    'external-check',
    'CRT',
    'crtx',
    'x-f',
    `${CERTS}/c.pem`,
    '/etc/passwd',
    'map(/etc/x)',
    '"$HOME"',
    '$HOME',
    "'q'",
    'a\\ b',
    'unix@/x',
    'abns@x',
    'fd@1',
    'agent-check',
    'addr',
    '10.0.0.9',
    '%ci',
  ];
  const addresses = ['10.0.0.1:80', '[2001:db8::1]:80', '2001:db8::1:80', '/run/x.sock', 'unix@/x', 'fd@1', 'ipv4@10.0.0.1:80', 'abc:80'];
  let seed = 11;
  const pick = <T>(xs: T[]): T => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return xs[seed % xs.length]!;
  };
  let plain = 0;
  for (let i = 0; i < 4000; i++) {
    const n = pick([0, 1, 2, 3, 5, 8]);
    const line = `    server ${pick(['m1', 'a-b.c', 'x$y'])} ${pick(addresses)} ${Array.from({ length: n }, () => pick(words)).join(' ')}`.trimEnd();
    if (isPlainServerLine(line)) plain++;
    assert.equal(refused(cfg(line)), refused(cfg(`${line} # full read`)), line);
  }
  assert.ok(plain > 400 && plain < 3600, `plain lines: ${plain} of 4000`);
  assert.ok(
    isPlainServerLine('    server 6b0b8a86-aa41-4c3b-8d8a-2b9d7f9e2c0d 10.0.1.5:8080 weight 1 check inter 5s fall 3 rise 2'),
    'an Octavia member line is plain',
  );
});

test('a NUL in any form, or a raw control character, is refused on its line', () => {
  for (const line of [
    '  prog\\x00ram x',
    'program\\x00 x',
    '  http-request return status 200 file /etc/shad\\x00ow',
    'global\x00',
    '  log\x0b127.0.0.1:514 local0',
    '  bind 10.0.0.5:80\r',
  ]) {
    const v = checkConfigPolicy(`global\n${line}\n`, CTX);
    assert.equal(
      v.map((x) => x.line),
      [2],
      JSON.stringify(line),
    );
  }
});

test("the server state file is the one Octavia names: not the load balancer's other files", () => {
  for (const name of ['master.sock', 'haproxy.cfg', 'applied.json', `../${LB}.pid`, '../certs/x.pem']) {
    const c = config().replace(`server-state-file /var/lib/octavia/${LB}/servers-state`, `server-state-file /var/lib/octavia/${LB}/${name}`);
    assert.match(only(c).reason, /the server state file is/, name);
  }
});

test('addresses are digits only: an IPv6 zone id (a name haproxy resolves) is refused', () => {
  assert.is(only(config({ backend: ['    server m-3 fe80::1%eth0:80 weight 1'] })).directive, 'server');
  assert.is(only(config({ frontend: ['    bind fe80::1%lo:8080'] })).directive, 'bind');
  assert.is(refused(config({ backend: ['    server m-3 [2001:db8::1]:80 weight 1'] })).length, 0);
});

test.run();
