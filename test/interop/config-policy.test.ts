// The config policy (agent/haproxy/config/policy/haproxy-config.ts) against real Octavia and
// real haproxy:
//  - every config the JinjaTemplater of Octavia 11, 16 and 19 renders for the
//    fixture load balancers passes it;
//  - OSSA-2026-039 injections, rendered by Octavia 11.0.0's templater without
//    the fix (a newline in an L7 rule value, in a redirect URL, in
//    tls_ciphers), each adding a program section, an errorfile on the agent's
//    server.pem, a `return file` of it, an admin stats socket on the VIP, a
//    Lua load, and issue 26's class 2 (a bind in another network namespace,
//    the env() fetch, `uid -0`, logs to the network, a `.diag`): API 1.0 answers every upload 400 naming the line and the
//    directive, and haproxy keeps serving the previous config, never the key
//    (on every haproxy of the matrix);
//  - with `config_policy = false` the same upload goes through and haproxy
//    serves server.pem: the threat is real and the switch works.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import net from 'node:net';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { testPorts } from '../helpers/ports.js';
import { HAPROXIES, OCTAVIAS, testDir, type HaproxyUnderTest } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { apiRequest } from '../helpers/api-client.js';
import { TestBackend } from '../helpers/backend.js';
import { waitFor } from '../helpers/load.js';
import { forOctavia, OctaviaRenderer, octaviaSettings, type OctaviaSettings } from '../helpers/octavia-render.js';
import { checkConfigPolicy } from '../../agent/haproxy/config/policy/haproxy-config.js';
import { DEFAULT_RENDER_SETTINGS } from '../../agent/render/settings.js';
import { validateSpec } from '../../agent/model/spec/validate.js';
import type { LoadBalancerSpec } from '../../agent/model/spec/types.js';

const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'specs');
const fixtures = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json'))
  .sort();
const LB = 'lb-policy';
const ports = testPorts('config-policy');
const backendPort = ports.range(HAPROXIES.length + 1);
const agentPort = ports.range(HAPROXIES.length + 1);
const MARKER = `/tmp/config-policy-pwned-${process.pid}`;

const t = suite('config policy: Octavia 11/16/19 renders pass; advisory injections are refused, haproxy keeps serving');
const renderers = new Map<string, OctaviaRenderer>();
let network: TestNetwork;
let dir: string;

t.before(
  loud(async () => {
    for (const o of OCTAVIAS) renderers.set(o.label, await OctaviaRenderer.start(o));
    network = createTestNetwork();
    dir = await testDir('pol');
  }),
);

t.after(async () => {
  for (const r of renderers.values()) await r.close();
  network?.destroy();
});

t(`every fixture (${fixtures.length}) as Octavia 11, 16 and 19 render it passes the policy, with default and other directories`, async () => {
  assert.is(renderers.size, 3);
  let checked = 0;
  const dirs: OctaviaSettings[] = [{}, { base_path: '/srv/amp', base_cert_dir: '/srv/amp/tls' }];
  for (const file of fixtures) {
    const spec = validateSpec(JSON.parse(readFileSync(join(FIXTURES, file), 'utf8')));
    for (const [release, r] of renderers) {
      for (const d of dirs) {
        const settings = { ...octaviaSettings(DEFAULT_RENDER_SETTINGS), ...d };
        for (const version of ['2.6', '3.2']) {
          const amp = { cpu_count: 4, memory: { free: 600000, buffers: 20000, cached: 180000 }, active_tuned_profiles: 'amphora' };
          const cfg = (await r.render(forOctavia(spec), version, settings, amp)).haproxy;
          if (cfg === null) continue;
          checked++;
          const v = checkConfigPolicy(cfg, {
            lbId: spec.id,
            basePath: settings.base_path!,
            baseCertDir: settings.base_cert_dir!,
            protectedFiles: ['/etc/octavia/certs/server.pem', '/etc/octavia/certs/client_ca.pem', '/etc/octavia/amphora-agent.conf'],
          });
          assert.equal(v, [], `${release} ${file} (haproxy ${version}, ${settings.base_path}) refused:\n${cfg}`);
        }
      }
    }
  }
  assert.ok(checked >= 200, `${checked} renders`);
});

interface Reply {
  status: number;
  location: string | undefined;
  body: string;
}

function get(host: string, port: number, path: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host, port, path, agent: false, timeout: 5000, headers: { connection: 'close' } }, (res) => {
      let body = '';
      res.setEncoding('latin1');
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: timeout`)));
    req.on('error', reject);
  });
}

/** Whether anything accepts a TCP connection on host:port. */
function listening(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: 2000 });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });
}

const agentCert = (a: AgentUnderTest) => /^agent_server_cert = (.*)$/m.exec(readFileSync(a.configFile, 'utf8'))![1]!;

/** The load balancer: an HTTP listener with a redirect policy, optionally a TERMINATED_HTTPS one. */
function lbSpec(vip: string, port: number, member: TestBackend, tls: boolean): LoadBalancerSpec {
  const pool = (id: string) => ({
    id,
    protocol: 'HTTP',
    lb_algorithm: 'ROUND_ROBIN',
    members: [{ id: `${id}-m1`, address: member.host, protocol_port: member.port }],
  });
  return validateSpec({
    id: LB,
    vip_address: vip,
    project_id: 'tenant',
    listeners: [
      {
        id: 'l-web',
        protocol: 'HTTP',
        protocol_port: port,
        connection_limit: 1000,
        default_pool: pool('p-web'),
        l7policies: [
          {
            id: 'pol-moved',
            action: 'REDIRECT_TO_URL',
            redirect_http_code: 302,
            redirect_url: 'https://www.example.test/moved',
            rules: [{ id: 'r-old', type: 'PATH', compare_type: 'STARTS_WITH', value: '/old' }],
          },
        ],
      },
      ...(tls
        ? [
            {
              id: 'l-tls',
              protocol: 'TERMINATED_HTTPS',
              protocol_port: port + 1,
              connection_limit: 1000,
              default_tls_container_ref: 'server.pem',
              tls_ciphers: 'ECDHE-RSA-AES128-GCM-SHA256',
              default_pool: pool('p-tls'),
            },
          ]
        : []),
    ],
  });
}

type Vector = 'l7 rule value' | 'redirect url' | 'tls_ciphers';
const VECTORS: Vector[] = ['l7 rule value', 'redirect url', 'tls_ciphers'];

/**
 * The spec with `payload` lines smuggled after a newline, as a tenant would
 * through Octavia's API before the fix. Spaces in an L7 rule value are
 * escaped (`\ `) by the templater, so there the payload separates words with
 * tabs; elsewhere a trailing `#` comments out the rest of the template line.
 */
function injected(base: (tls: boolean) => LoadBalancerSpec, vector: Vector, payload: string[]): LoadBalancerSpec {
  const spec = base(vector === 'tls_ciphers');
  const l = spec.listeners[0]!;
  if (vector === 'l7 rule value') l.l7policies[0]!.rules[0]!.value = `/old\n${payload.map((p) => p.replace(/ +/g, '\t')).join('\n')}`;
  if (vector === 'redirect url') l.l7policies[0]!.redirect_url = `https://www.example.test/moved\n${payload.join('\n')}\n#`;
  if (vector === 'tls_ciphers') spec.listeners[1]!.tls_ciphers = `ECDHE-RSA-AES128-GCM-SHA256\n${payload.join('\n')}\n#`;
  return spec;
}

interface Payload {
  name: string;
  lines: (a: AgentUnderTest, vip: string) => string[];
  /** The violation the details must name, and which of `lines` it is on. */
  directive: string;
  at: number;
}

const PAYLOADS: Payload[] = [
  { name: 'a program section', lines: () => ['program pwn', `    command /usr/bin/touch ${MARKER}`], directive: 'program', at: 0 },
  { name: 'an errorfile on server.pem', lines: (a) => [`    errorfile 503 ${agentCert(a)}`], directive: 'errorfile', at: 0 },
  {
    name: 'a return of server.pem',
    lines: (a) => [`    http-request return status 200 content-type text/plain file ${agentCert(a)}`],
    directive: 'http-request return',
    at: 0,
  },
  {
    name: 'an admin stats socket on the VIP',
    lines: (_a, vip) => ['global', `    stats socket ipv4@${vip}:9999 level admin`, 'frontend resumed'],
    directive: 'stats socket',
    at: 1,
  },
  { name: 'a Lua load', lines: () => ['global', `    lua-load ${MARKER}.lua`, 'frontend resumed'], directive: 'lua-load', at: 1 },
  // Issue 26, class 2: keywords and fetches a deny-list never looked at.
  { name: 'a bind in the management namespace', lines: (_a, vip) => [`    bind ${vip}:9998 namespace /proc/1/ns/net`], directive: 'bind', at: 0 },
  { name: 'the environment in a header', lines: () => ['    http-response set-header X-Env %[env(PATH)]'], directive: 'http-response set-header', at: 0 },
  { name: 'workers as uid -0', lines: () => ['global', '    uid -0', 'frontend resumed'], directive: 'uid', at: 1 },
  { name: 'logs to the network', lines: (_a, vip) => ['global', `    log ${vip}:514 local0`, 'frontend resumed'], directive: 'log', at: 1 },
  { name: 'a .diag directive', lines: () => ['.diag pwned'], directive: '.diag', at: 0 },
];

const KEY_TEXT = /PRIVATE KEY|BEGIN CERTIFICATE/;

async function injectionRound(h: HaproxyUnderTest, index: number): Promise<void> {
  const o11 = renderers.get('octavia-11')!;
  const backend = await new TestBackend(`member-${h.label}`, network.hostIp, backendPort(index)).start();
  const agent = await startAgent(h, join(dir, `h${index}`), network.netns, agentPort(index));
  try {
    const vip = network.nsIp;
    const port = 18080 + index * 10;
    const settings = { ...octaviaSettings(DEFAULT_RENDER_SETTINGS), base_path: agent.basePath, base_cert_dir: agent.certDir };
    const base = (tls: boolean) => lbSpec(vip, port, backend, tls);
    const render = async (spec: LoadBalancerSpec, unpatched: boolean) => (await o11.render(forOctavia(spec), '2.6', settings, null, { unpatched })).haproxy!;
    const upload = (cfg: string) => apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${LB}/haproxy`, { raw: cfg });

    // The previous config: accepted, running, serving.
    const good = await render(base(false), true);
    const first = await upload(good);
    assert.is(first.status, 202, `${first.text}\n${agent.output().slice(-3000)}`);
    const started = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/start`);
    assert.is(started.status, 202, started.text);
    const served = (await waitFor('the member through haproxy', async () => {
      const r = await get(vip, port, '/').catch(() => null);
      return r?.status === 200 ? r : null;
    }))!;
    assert.is(served.body, `${backend.name}\n`);

    const refusals: string[] = [];
    for (const payload of PAYLOADS) {
      for (const vector of VECTORS) {
        const lines = payload.lines(agent, vip);
        const evil = await render(injected(base, vector, lines), true);
        // The unpatched templater put the payload on lines of its own; the fixed one does not.
        const key = lines[payload.at]!.trim();
        const same = (l: string) => l.trim().replace(/\t/g, ' ') === key;
        const at = evil.split('\n').findIndex(same);
        assert.ok(at >= 0, `${vector}: the unpatched templater did not render "${key}" on a line:\n${evil}`);
        const fixed = await render(injected(base, vector, lines), false);
        assert.not.ok(fixed.split('\n').some(same), `${vector}: the fixed templater rendered the payload`);

        const r = await upload(evil);
        const what = `${payload.name} through ${vector}`;
        assert.is(r.status, 400, `${what}: ${r.status} ${r.text}`);
        assert.is(r.json?.message, 'Invalid request', what);
        const details = String(r.json?.details ?? '');
        assert.match(details, /config policy/, what);
        // The line and the directive of the payload (the one the payload adds; others may follow).
        const directiveLine = at + 1;
        assert.ok(
          details.includes(`line ${directiveLine}: ${payload.directive}:`),
          `${what}: details do not name line ${directiveLine} and ${payload.directive}:\n${details}`,
        );
        refusals.push(what);
        const accepted = await apiRequest(agent, 'GET', `/1.0/loadbalancer/${LB}/haproxy`);
        assert.is(accepted.text, good, `${what}: the accepted config changed`);
      }
    }
    assert.is(refusals.length, PAYLOADS.length * VECTORS.length);

    // A reload runs the accepted (previous) config: still serving, the policy's redirect intact, no key anywhere.
    assert.is((await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/reload`)).status, 202);
    const after = await get(vip, port, '/');
    assert.is(after.status, 200);
    assert.is(after.body, `${backend.name}\n`);
    const moved = await get(vip, port, '/old/page');
    assert.is(moved.status, 302);
    assert.is(moved.location, 'https://www.example.test/moved');
    for (const path of ['/', '/old', '/x', '/../etc/octavia/certs/server.pem']) {
      assert.not.match((await get(vip, port, path)).body, KEY_TEXT, `${path} served key material`);
    }
    await backend.setMode('refused'); // a 503 would be the errorfile's turn
    const down = await get(vip, port, '/').catch(() => null);
    assert.not.match(down?.body ?? '', KEY_TEXT, 'an error page served key material');
    assert.not.ok(await listening(vip, 9999), 'something listens on the VIP port 9999');
    assert.not.ok(existsSync(MARKER), 'the program ran');
    assert.is(agent.process.exitCode, null, 'the agent died');
  } finally {
    await agent.stop();
    await backend.stop();
  }
}

for (const [i, h] of HAPROXIES.entries()) {
  t(
    `${h.label}: ${PAYLOADS.length} payloads x ${VECTORS.length} vectors from unpatched Octavia 11.0.0: 400 naming line and directive, previous config serving`,
    loud(() => injectionRound(h, i)),
  );
}

t(
  'config_policy = false: the same return-file injection is accepted and haproxy serves server.pem (the threat is real)',
  loud(async () => {
    const h = HAPROXIES[0]!;
    const backend = await new TestBackend('member-off', network.hostIp, backendPort(HAPROXIES.length)).start();
    const agent = await startAgent(h, join(dir, 'off'), network.netns, agentPort(HAPROXIES.length), undefined, ['config_policy = false']);
    try {
      const vip = network.nsIp;
      const port = 18180;
      const settings = { ...octaviaSettings(DEFAULT_RENDER_SETTINGS), base_path: agent.basePath, base_cert_dir: agent.certDir };
      const spec = injected((tls) => lbSpec(vip, port, backend, tls), 'redirect url', [
        `    http-request return status 200 content-type text/plain file ${agentCert(agent)} if { path /leak }`,
      ]);
      const evil = (await renderers.get('octavia-11')!.render(forOctavia(spec), '2.6', settings, null, { unpatched: true })).haproxy!;
      const up = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${LB}/haproxy`, { raw: evil });
      assert.is(up.status, 202, up.text);
      assert.is((await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/start`)).status, 202);
      const leak = (await waitFor('haproxy to answer', async () => get(vip, port, '/leak').catch(() => null)))!;
      assert.is(leak.status, 200);
      assert.match(leak.body, KEY_TEXT, 'haproxy did not serve server.pem: the control case does not show the threat');
    } finally {
      await agent.stop();
      await backend.stop();
    }
  }),
);

t.run();
