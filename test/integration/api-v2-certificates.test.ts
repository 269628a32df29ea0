// API 2.0 certificates: the PEM files a spec's *_ref fields name. A missing
// file is a 409, garbage is a 400, and a changed file makes the next PUT of
// the same spec reload (haproxy reads certificates only when it loads).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { testPorts } from '../helpers/ports.js';
import { apiRequest } from '../helpers/api-client.js';
import { makeCa, issue } from '../helpers/certs.js';

const PORTS = testPorts('api-v2-certificates');
const [MEMBER, AGENT] = [PORTS.range(HAPROXIES.length), PORTS.range(HAPROXIES.length)];

const LB = 'lb-tls';
const PORT = 8443;

HAPROXIES.forEach((h, hi) => {
  const t = suite(`API 2.0 certificates (${h.label})`);
  let net: TestNetwork;
  let dir: string;
  let agent: AgentUnderTest;
  let member: TestBackend;
  const pem = (name: string, cn: string) => {
    const ca = makeCa(dir, `ca-${name}`);
    return readFileSync(issue(ca, name, { dnsName: cn, usage: 'serverAuth' }).pem);
  };
  const spec = () => ({
    id: LB,
    vip_address: net.nsIp,
    listeners: [
      {
        id: 'l-tls',
        protocol: 'TERMINATED_HTTPS',
        protocol_port: PORT,
        connection_limit: 500,
        default_tls_container_ref: 'server.pem',
        default_pool: { id: 'p', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ id: 'm', address: member.host, protocol_port: member.port }] },
      },
    ],
  });
  const served = () =>
    new Promise<string>((resolve, reject) => {
      const sock = tls.connect({ host: net.nsIp, port: PORT, rejectUnauthorized: false }, () => {
        const cn = String(sock.getPeerCertificate().subject?.CN);
        sock.destroy();
        resolve(cn);
      });
      sock.on('error', reject);
    });

  t.before(
    loud(async () => {
      net = createTestNetwork();
      dir = await testDir('v2-tls');
      member = await new TestBackend('m', net.hostIp, MEMBER(hi)).start();
      agent = await startAgent(h, dir, net.netns, AGENT(hi));
    }),
  );

  t.after(async () => {
    await apiRequest(agent, 'DELETE', `/2.0/loadbalancers/${LB}`).catch(() => undefined);
    await agent?.stop();
    await member?.stop();
    net?.destroy();
  });

  t('a spec naming a certificate not uploaded is 409; garbage is not a certificate (400)', async () => {
    const missing = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, { body: spec() });
    assert.is(missing.status, 409, missing.text);
    assert.is(missing.json.error, 'missing_certificate');
    assert.match(missing.json.message, /server\.pem/);
    const garbage = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}/certificates/server.pem`, { raw: 'not a pem' });
    assert.is(garbage.status, 400);
  });

  t('upload, apply, and a replaced certificate reloads on the next PUT of the same spec', async () => {
    const up = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}/certificates/server.pem`, { raw: pem('first', 'first.example.test') });
    assert.is(up.status, 204, up.text);
    const created = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, { body: spec() });
    assert.is(created.status, 201, created.text);
    assert.is(await served(), 'first.example.test');
    assert.is((await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, { body: spec() })).json.result, 'unchanged');

    await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}/certificates/server.pem`, { raw: pem('second', 'second.example.test') });
    assert.is(await served(), 'first.example.test', 'haproxy serves what it loaded until the next apply');
    const again = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB}`, { body: spec() });
    assert.is(again.json.result, 'reloaded', again.text);
    assert.is(again.json.reload_reason, 'certificates changed');
    assert.is(await served(), 'second.example.test');
    const crtList = readFileSync(join(agent.certDir, LB, 'l-tls.pem'), 'utf8');
    assert.is(crtList, `${join(agent.certDir, LB, 'server.pem')}\n`, 'the crt-list names the uploaded file');

    const del = await apiRequest(agent, 'DELETE', `/2.0/loadbalancers/${LB}/certificates/server.pem`);
    assert.is(del.status, 204);
    assert.is((await apiRequest(agent, 'DELETE', `/2.0/loadbalancers/${LB}/certificates/server.pem`)).status, 404);
  });

  t.run();
});
