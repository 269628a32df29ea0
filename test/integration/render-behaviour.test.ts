// Rendered configs doing their job in a real haproxy, not only passing -c: an
// HTTP monitor takes a broken member out, HTTP_COOKIE pins a client, L7
// policies redirect and switch pools, TERMINATED_HTTPS answers with the
// certificate the client asked for by SNI.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import tls from 'node:tls';
import { join } from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { CHECK_PATH, TestBackend } from '../helpers/backend.js';
import { waitFor } from '../helpers/load.js';
import { serverStates, applyConfig, testEngine } from '../helpers/engine.js';
import { writeFixtureCerts } from '../helpers/fixture-certs.js';
import { testPorts } from '../helpers/ports.js';
import { haproxyCapabilities } from '../../agent/haproxy/process/capabilities.js';
import { validateSpec } from '../../agent/model/spec/validate.js';
import { renderLoadBalancer } from '../../agent/render/render.js';
import { DEFAULT_RENDER_SETTINGS } from '../../agent/render/settings.js';
import type { HaproxyEngine } from '../../agent/haproxy/apply/engine.js';

const PORTS = testPorts('render-behaviour');
const [HTTP_PORT, TLS_PORT] = [PORTS.one(), PORTS.one()];
const BACKENDS = HAPROXIES.map(() => PORTS.range(4));

const LB = 'lb-behaviour';
const REDIRECT = 'https://new.example/landing?x=1&y=a#top';

function spec(vip: string, web: TestBackend[], api: TestBackend) {
  const member = (b: TestBackend) => ({ id: b.name, address: b.host, protocol_port: b.port });
  const monitor = { type: 'HTTP', delay: 1, timeout: 1, max_retries: 1, max_retries_down: 1, url_path: CHECK_PATH, expected_codes: '200' };
  return validateSpec({
    id: LB,
    project_id: 'behaviour',
    vip_address: vip,
    pools: [{ id: 'p-api', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', healthmonitor: monitor, members: [member(api)] }],
    listeners: [
      {
        id: 'l-http',
        protocol: 'HTTP',
        protocol_port: HTTP_PORT,
        connection_limit: 1000,
        default_pool: {
          id: 'p-web',
          protocol: 'HTTP',
          lb_algorithm: 'ROUND_ROBIN',
          session_persistence: { type: 'HTTP_COOKIE' },
          healthmonitor: monitor,
          members: web.map(member),
        },
        l7policies: [
          {
            id: 'to-api',
            action: 'REDIRECT_TO_POOL',
            redirect_pool_id: 'p-api',
            position: 1,
            rules: [{ id: 'is-api', type: 'PATH', compare_type: 'STARTS_WITH', value: '/api/' }],
          },
          {
            id: 'moved',
            action: 'REDIRECT_TO_URL',
            redirect_url: REDIRECT,
            redirect_http_code: 301,
            position: 2,
            rules: [{ id: 'is-old', type: 'PATH', compare_type: 'EQUAL_TO', value: '/old' }],
          },
        ],
      },
      {
        id: 'l-tls',
        protocol: 'TERMINATED_HTTPS',
        protocol_port: TLS_PORT,
        connection_limit: 1000,
        default_tls_container_ref: 'server.pem',
        sni_container_refs: ['sni-a.pem', 'sni-b.pem'],
        default_pool_id: 'p-api',
      },
    ],
  });
}

interface Reply {
  status: number;
  member: string;
  headers: http.IncomingHttpHeaders;
}

function get(host: string, path: string, cookie?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host, port: HTTP_PORT, path, agent: false, headers: cookie ? { cookie } : {} }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, member: String(res.headers['x-member'] ?? ''), headers: res.headers }));
    });
    req.setTimeout(3000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

function certificateFor(host: string, servername: string | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = tls.connect({ host, port: TLS_PORT, rejectUnauthorized: false, ...(servername ? { servername } : {}) }, () => {
      const cn = sock.getPeerCertificate().subject?.CN;
      sock.destroy();
      resolve(Array.isArray(cn) ? cn.join(',') : String(cn));
    });
    sock.setTimeout(3000, () => sock.destroy(new Error('timeout')));
    sock.on('error', reject);
  });
}

HAPROXIES.forEach((h, hi) => {
  const t = suite(`rendered configs in a real haproxy (${h.label})`);
  let net: TestNetwork;
  let dir: string;
  let engine: HaproxyEngine;
  let web: TestBackend[];
  let api: TestBackend;

  const state = async (server: string) => (await serverStates(engine, LB)).find((s) => s.server === server && s.backend === 'p-web:l-http')?.opState;

  t.before(
    loud(async () => {
      net = createTestNetwork();
      dir = await testDir('behaviour');
      const base = BACKENDS[hi]!;
      web = await Promise.all([1, 2].map((n) => new TestBackend(`web${n}`, net.hostIp, base(n)).start()));
      api = await new TestBackend('api', net.hostIp, base(3)).start();
      const certDir = join(dir, 'certs', LB);
      mkdirSync(certDir, { recursive: true });
      writeFixtureCerts(certDir);
      const caps = await haproxyCapabilities(h.command, dir);
      const settings = { ...DEFAULT_RENDER_SETTINGS, basePath: dir, baseCertDir: join(dir, 'certs') };
      const out = renderLoadBalancer(spec(net.nsIp, web, api), settings, { initStateAtStartup: caps.initStateAtStartup });
      for (const f of out.crtLists) writeFileSync(f.path, f.content);
      engine = testEngine(h, dir, net.netns);
      await applyConfig(engine, LB, 'amp', out.haproxyConfig!);
      await waitFor('every member UP', async () => (await serverStates(engine, LB)).every((s) => s.opState === 2));
    }),
  );

  t.after(async () => {
    await engine?.stop(LB).catch(() => undefined);
    await Promise.all([...(web ?? []), api].filter(Boolean).map((b) => b.stop()));
    net?.destroy();
  });

  t('an HTTP monitor marks a broken member DOWN and traffic avoids it; it comes back when healthy', async () => {
    await web[1]!.setMode('not-ready');
    await waitFor('web2 DOWN', async () => (await state('web2')) === 0, 8000);
    const before = web[1]!.requests;
    const members = new Set<string>();
    for (let i = 0; i < 10; i++) members.add((await get(net.nsIp, '/')).member);
    assert.equal([...members], ['web1'], 'only the healthy member serves');
    assert.is(web[1]!.requests, before, 'no request reached the DOWN member');
    await web[1]!.setMode('ready');
    await waitFor('web2 UP again', async () => (await state('web2')) === 2, 8000);
  });

  t('HTTP_COOKIE persistence pins a client to its member', async () => {
    const first = await get(net.nsIp, '/');
    const setCookie = (first.headers['set-cookie'] ?? []).find((c) => c.startsWith('SRV='));
    assert.ok(setCookie, `haproxy sets its SRV cookie (got ${JSON.stringify(first.headers['set-cookie'])})`);
    const cookie = setCookie!.split(';')[0]!;
    assert.is(cookie, `SRV=${first.member}`);
    for (let i = 0; i < 10; i++) assert.is((await get(net.nsIp, '/', cookie)).member, first.member, `request ${i} with ${cookie}`);
    // Without the cookie round robin spreads requests over both members.
    const spread = new Set<string>();
    for (let i = 0; i < 6; i++) spread.add((await get(net.nsIp, '/')).member);
    assert.is(spread.size, 2, 'without the cookie both members serve');
  });

  t('L7: a path policy switches pool, another redirects with the URL intact', async () => {
    for (let i = 0; i < 3; i++) assert.is((await get(net.nsIp, '/api/items')).member, 'api');
    assert.not.equal((await get(net.nsIp, '/apix')).member, 'api', 'STARTS_WITH /api/ does not match /apix');
    const moved = await get(net.nsIp, '/old');
    assert.is(moved.status, 301);
    assert.is(moved.headers.location, REDIRECT, "'&' and '#' reach haproxy unescaped for HTML and intact for haproxy");
    assert.is((await get(net.nsIp, '/old/x')).status, 200, 'EQUAL_TO matches the whole path only');
  });

  t('TERMINATED_HTTPS picks the certificate by SNI, the default one otherwise', async () => {
    assert.is(await certificateFor(net.nsIp, 'a.example.test'), 'a.example.test');
    assert.is(await certificateFor(net.nsIp, 'b.example.test'), 'b.example.test');
    assert.is(await certificateFor(net.nsIp, 'other.example.test'), 'www.example.test');
    assert.is(await certificateFor(net.nsIp, undefined), 'www.example.test');
  });

  t.run();
});
