// Class 4 of issue 26, indirection through certificate files, on every
// haproxy: a certificate upload whose body is a path (the agent's own
// server.pem) used as a crt-list made the VIP present the agent's
// certificate and key. Now that upload is a 400 and stores nothing; a file
// of that form already on disk (stored by an agent before the fix), or a
// link to the agent's certificate, makes the config that names it a 400;
// the VIP keeps presenting the tenant's certificate and haproxy keeps
// serving the previous config. Octavia's own TERMINATED_HTTPS upload (its
// release's build_pem bundle and crt-list form) passes and serves.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import { loud } from '../helpers/hooks.js';
import { INTEROP_PAIRS, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { apiRequest, type ApiReply } from '../helpers/api-client.js';
import { octaviaStyleConfig } from '../helpers/octavia-config.js';
import { waitFor } from '../helpers/load.js';
import { issue, makeCa } from '../helpers/certs.js';
import { testPorts } from '../helpers/ports.js';

const PORTS = testPorts('policy-files');
const [LISTENERS, MEMBER, AGENT] = [PORTS.range(2 * INTEROP_PAIRS.length), PORTS.range(INTEROP_PAIRS.length), PORTS.range(INTEROP_PAIRS.length)];

const LB = '6f1c2a3e-8d4b-4c5a-9e7f-0a1b2c3d4e5f';
const LISTENER = '0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b';
const TENANT_CN = 'lb.example.test';

/** Octavia's build_pem on certificate, key and intermediates, as its REST driver's _process_tls_certificates uploads it. */
const BUILD_PEM = [
  'import sys',
  'from octavia.common import data_models',
  'from octavia.common.tls_utils import cert_parser',
  'r = lambda p: open(p, "rb").read()',
  'c = data_models.TLSContainer(id="x", certificate=r(sys.argv[1]), private_key=cert_parser.prepare_private_key(r(sys.argv[2])),',
  '    intermediates=list(cert_parser.get_intermediates_pems(r(sys.argv[3]))))',
  'sys.stdout.buffer.write(cert_parser.build_pem(c))',
].join('\n');

INTEROP_PAIRS.forEach(({ haproxy: h, octavia: o }, hi) => {
  const PORT_A = LISTENERS(2 * hi);
  const PORT_B = LISTENERS(2 * hi + 1);
  const t = suite(`certificate files (${h.label}, ${o.label}): PEM uploads only, crt-lists of the load balancer's own certificates`);
  let net: TestNetwork;
  let dir: string;
  let agent: AgentUnderTest;
  let member: TestBackend;
  let agentCert: string;
  let agentCn: string;
  let lbCerts: string;
  let bundleName: string;

  const config = (bind: string, generation: number) =>
    octaviaStyleConfig({
      lbId: LB,
      baseDir: agent.basePath,
      bind,
      monitor: null,
      generation,
      members: [{ id: 'm1', address: member.address }],
    });
  const crtListBind = (port: number, file: string) => `${net.nsIp}:${port} ssl crt-list ${join(lbCerts, file)}`;
  const upload = (text: string) => apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${LB}/haproxy`, { raw: text });
  const putCert = (name: string, body: string | Buffer) => apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/certificates/${name}`, { raw: body });

  /** The CN of the certificate the VIP presents on `port`, or null when nothing answers. */
  const presented = (port: number) =>
    new Promise<string | null>((resolve) => {
      const sock = tls.connect({ host: net.nsIp, port, servername: TENANT_CN, rejectUnauthorized: false, timeout: 3000 }, () => {
        const cn = String(sock.getPeerCertificate().subject?.CN);
        sock.destroy();
        resolve(cn);
      });
      sock.on('timeout', () => sock.destroy());
      sock.on('error', () => resolve(null));
    });
  const refused = (r: ApiReply, why: RegExp) => {
    assert.is(r.status, 400, r.text);
    assert.match(String(r.json?.details ?? r.json?.message ?? r.text), why);
  };

  t.before(
    loud(async () => {
      net = createTestNetwork();
      dir = await testDir('policy-files');
      member = await new TestBackend('member', net.hostIp, MEMBER(hi)).start();
      agent = await startAgent(h, dir, net.netns, AGENT(hi));
      agentCert = join(dir, 'pki', 'agent-combined.pem');
      agentCn = agent.amphoraId;
      assert.ok(existsSync(agentCert), `the agent's certificate is not at ${agentCert}`);
      lbCerts = join(agent.certDir, LB);
    }),
  );

  t.after(async () => {
    await apiRequest(agent, 'DELETE', `/1.0/listeners/${LB}`).catch(() => undefined);
    await agent?.stop();
    await member?.stop();
    net?.destroy();
  });

  t(`Octavia's TERMINATED_HTTPS upload (${o.label}'s build_pem bundle, then its crt-list) is stored and served`, async () => {
    mkdirSync(join(dir, 'tenant'));
    const ca = makeCa(join(dir, 'tenant'), 'tenant-ca');
    const leaf = issue(ca, 'tenant', { dnsName: TENANT_CN, usage: 'serverAuth' });
    const bundle = execFileSync(o.python, ['-c', BUILD_PEM, leaf.cert, leaf.key, ca.cert]);
    // Octavia names the bundle after the certificate's sha1 and the crt-list after the listener.
    bundleName = `${createHash('sha1').update(readFileSync(leaf.cert)).digest('hex')}.pem`;
    const stored = await putCert(bundleName, bundle);
    assert.is(stored.status, 200, stored.text);
    const list = await putCert(`${LISTENER}.pem`, `${join(lbCerts, bundleName)}\n`);
    assert.is(list.status, 200, list.text);
    const up = await upload(config(crtListBind(PORT_A, `${LISTENER}.pem`), 1));
    assert.is(up.status, 202, up.text);
    assert.is((await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/start`)).status, 202);
    await waitFor('the VIP to present the tenant certificate', async () => (await presented(PORT_A)) === TENANT_CN);
  });

  t('a certificate upload whose body is a path, text or binary is a 400, and nothing is stored', async () => {
    refused(await putCert('evil.pem', agentCert), /Invalid certificate file|outside the load balancer's certificate directory/);
    refused(await putCert('evil.pem', `${agentCert}\n`), /server|outside/);
    refused(await putCert('evil.pem', '/etc/shadow\n'), /outside/);
    refused(await putCert('evil.pem', 'hello\n'), /not an absolute path/);
    refused(await putCert('evil.pem', Buffer.from([0x30, 0x82, 0x01, 0x0a, 0x02])), /byte 0x82/);
    // PEM with text beside it is a certificate file (haproxy skips the text); named as a crt-list it would be read line by line.
    const texted = await putCert('texted.pem', Buffer.concat([readFileSync(agentCert), Buffer.from(`${agentCert}\n`)]));
    assert.is(texted.status, 200, texted.text);
    assert.is((await apiRequest(agent, 'DELETE', `/1.0/loadbalancer/${LB}/certificates/texted.pem`)).status, 200);
    assert.is((await apiRequest(agent, 'GET', `/1.0/loadbalancer/${LB}/certificates/evil.pem`)).status, 404);
    assert.not.ok(existsSync(join(lbCerts, 'evil.pem')));
    const v2 = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}/certificates/evil.pem`, { raw: `${agentCert}\n` });
    assert.is(v2.status, 400, v2.text);
    assert.is(v2.json?.error, 'invalid_certificate');
    assert.not.ok(existsSync(join(lbCerts, 'evil.pem')));
  });

  t(
    "a config naming a crt-list that points at the agent's certificate (stored before the fix, or by a link) is a 400; the VIP keeps the tenant's",
    async () => {
      // What an agent before the fix stored with 200 for a body that was a path.
      writeFileSync(join(lbCerts, 'legacy.pem'), `${agentCert}\n`, { mode: 0o600 });
      refused(await upload(config(crtListBind(PORT_B, 'legacy.pem'), 2)), /crt-list .*legacy\.pem" line 1: certificate ".*agent-combined\.pem" is outside/);
      symlinkSync(agentCert, join(lbCerts, 'link.pem'));
      writeFileSync(join(lbCerts, 'via-link.pem'), `${join(lbCerts, 'link.pem')}\n`, { mode: 0o600 });
      refused(await upload(config(crtListBind(PORT_B, 'via-link.pem'), 3)), /link\.pem" leads to ".*agent-combined\.pem", outside/);
      // Octavia binds certificates through crt-lists only: a `crt` on a bind is refused by the words, before its link is followed.
      refused(await upload(config(`${net.nsIp}:${PORT_B} ssl crt ${join(lbCerts, 'link.pem')}`, 4)), /"crt" is not an option of bind lines/);
      // The accepted config is still the first one, and a reload keeps serving it.
      assert.is((await apiRequest(agent, 'GET', `/1.0/loadbalancer/${LB}/haproxy`)).text, config(crtListBind(PORT_A, `${LISTENER}.pem`), 1));
      assert.is((await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/reload`)).status, 202);
      await waitFor('the reloaded haproxy to serve', async () => (await presented(PORT_A)) === TENANT_CN);
      assert.is.not(await presented(PORT_A), agentCn);
      assert.is(await presented(PORT_B), null, 'a refused config is listening');
    },
  );

  t.run();
});
