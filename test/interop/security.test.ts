// The API is mutual TLS only, and no request, however malformed, gets a 5xx
// or writes outside the agent's directories.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loud } from '../helpers/hooks.js';
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { HAPROXIES, TEST_ROOT, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { testPorts } from '../helpers/ports.js';
import { issue, makeCa } from '../helpers/certs.js';

const AGENT_PORT = testPorts('security').one();

let net: TestNetwork;
let agent: AgentUnderTest;
let dir: string;

interface Reply {
  status: number | null;
  error: string | null;
}

function request(method: string, path: string, body: Buffer | null, tls: { cert?: string; key?: string }): Promise<Reply> {
  return new Promise((resolve) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port: agent.port,
        method,
        path,
        agent: false,
        timeout: 20_000,
        ca: readFileSync(agent.serverCa.cert),
        servername: agent.amphoraId,
        ...(tls.cert ? { cert: readFileSync(tls.cert), key: readFileSync(tls.key!) } : {}),
        headers: body ? { 'content-length': body.length } : {},
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? null, error: null }));
      },
    );
    req.on('error', (e) => resolve({ status: null, error: e.message }));
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(body ?? undefined);
  });
}

test.before(
  loud(async () => {
    net = createTestNetwork();
    dir = await testDir('security');
    agent = await startAgent(HAPROXIES[0]!, dir, net.netns, AGENT_PORT);
  }),
);

test.after(async () => {
  await agent?.stop();
  net?.destroy();
});

test('handshake: no client certificate, another CA, or an expired certificate are refused; a good one is served', async () => {
  const client = { cert: agent.client.cert, key: agent.client.key };
  assert.is((await request('GET', '/', null, client)).status, 200);
  const none = await request('GET', '/', null, {});
  assert.is(none.status, null, 'served without a client certificate');
  const otherCa = makeCa(join(dir, 'pki'), 'other-ca');
  const foreign = issue(otherCa, 'foreign', { usage: 'clientAuth' });
  assert.is((await request('GET', '/', null, { cert: foreign.cert, key: foreign.key })).status, null, 'served a certificate from another CA');
  const expired = issue(agent.clientCa, 'expired', { usage: 'clientAuth', expired: true });
  assert.is((await request('GET', '/', null, { cert: expired.cert, key: expired.key })).status, null, 'served an expired certificate');
});

test('900 generated bad requests: no 5xx, no crash, nothing written outside the agent directories', async () => {
  const marker = join(TEST_ROOT, `.security-marker-${process.pid}`);
  writeFileSync(marker, '');
  await new Promise((r) => setTimeout(r, 1100)); // find -newer has one-second granularity on some filesystems
  const client = { cert: agent.client.cert, key: agent.client.key };
  const evil = [
    '..',
    '...',
    '../..',
    '%2e%2e',
    '..%2f..%2ftmp',
    '..%2F..%2F..%2Fetc%2Fpasswd',
    '%2e%2e%2fescape',
    'a%00b',
    'x'.repeat(3000),
    '%ff%fe',
    'a%20b',
    '.hidden',
    '-rf',
    '%0a',
    '..%5c..',
    'lb%2f..%2f..%2fout',
  ];
  const routes = [
    ['PUT', '/1.0/loadbalancer/{}/{}/haproxy'],
    ['GET', '/1.0/loadbalancer/{}/haproxy'],
    ['PUT', '/1.0/loadbalancer/{}/{}'],
    ['DELETE', '/1.0/listeners/{}'],
    ['PUT', '/1.0/loadbalancer/{}/certificates/{}'],
    ['GET', '/1.0/loadbalancer/{}/certificates/{}'],
    ['DELETE', '/1.0/loadbalancer/{}/certificates/{}'],
    ['PUT', '/1.0/config'],
    ['PUT', '/1.0/certificate'],
    ['GET', '/1.0/info'],
    ['GET', '/1.0/details'],
    ['GET', '/1.0/listeners'],
    ['POST', '/1.0/plug/vip/{}'],
    ['POST', '/1.0/plug/network'],
    ['GET', '/1.0/interface/{}'],
    ['PUT', '/1.0/interface/{}/rules'],
    ['PUT', '/1.0/listeners/{}/{}/udp_listener'],
    ['GET', '/1.0/listeners/{}/udp_listener'],
    ['PUT', '/2.0/loadbalancers/{}'],
    ['GET', '/2.0/loadbalancers/{}'],
    ['DELETE', '/2.0/loadbalancers/{}'],
    ['GET', '/2.0/loadbalancers/{}/status'],
    ['PUT', '/2.0/loadbalancers/{}/certificates/{}'],
    ['DELETE', '/2.0/loadbalancers/{}/certificates/{}'],
    ['POST', '/2.0/openapi.json'],
    ['PUT', '/2.0/metrics'],
  ] as const;
  const methods = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS'];
  const bodies = [
    null,
    randomBytes(512),
    Buffer.from('\u0000\u0001binary\u00ff'),
    Buffer.from('{"json": [1,2'),
    Buffer.from('global\n  daemon\n'),
    Buffer.from('{"id": "x", "vip_address": "203.0.113.1", "listeners": [{"id": "../..", "protocol": "HTTP", "protocol_port": 80}]}'),
    Buffer.from('[1, "two", null]'),
    Buffer.from('-----BEGIN CERTIFICATE-----\n../../escape\n-----END CERTIFICATE-----\n'),
  ];
  const cases: [string, string, Buffer | null][] = [];
  for (const [method, template] of routes) {
    for (const a of evil) {
      const path = template.replace('{}', a).replace('{}', `${a}.pem`);
      cases.push([method, path, bodies[cases.length % bodies.length]!]);
      cases.push([methods[cases.length % methods.length]!, path, null]);
    }
  }
  for (let n = 0; cases.length < 900; n++) {
    const garbage = randomBytes(8 + (n % 40)).toString('base64url');
    cases.push([methods[n % methods.length]!, `/1.0/${garbage}/${n % 3 === 0 ? '..' : garbage}`, bodies[n % bodies.length]!]);
  }
  cases.push(['PUT', '/1.0/loadbalancer/amp/lb-big/haproxy', Buffer.alloc(40 * 1024 * 1024, 0x61)]);
  cases.push(['PUT', '/2.0/loadbalancers/lb-big', Buffer.alloc(40 * 1024 * 1024, 0x7b)]);

  const configBefore = readFileSync(agent.configFile, 'utf8');
  const fives: string[] = [];
  for (const [method, path, body] of cases) {
    const r = await request(method, path, body, client);
    if (r.status === null || r.status >= 500) fives.push(`${method} ${path.slice(0, 80)} -> ${r.status ?? r.error}`);
  }
  assert.ok(cases.length >= 900);
  assert.equal(fives, [], `${fives.length} requests got a 5xx or no answer`);
  assert.is(agent.process.exitCode, null, 'the agent died');
  assert.is((await request('GET', '/1.0/info', null, client)).status, 200);
  assert.is(readFileSync(agent.configFile, 'utf8'), configBefore, 'a garbage PUT /1.0/config replaced the agent configuration');

  // Files written since the marker where a traversal could land, outside the agent's own directories.
  const own = [agent.basePath, agent.certDir, agent.configFile, join(dir, 'pki')];
  // Other work on the machine (other tests' directories under the test root,
  // a shell's job files) is not the agent's doing: no traversal from this
  // agent's directories can reach into another test's directory.
  const others = (f: string) =>
    (f.startsWith(`${TEST_ROOT}/`) && !f.startsWith(`${dir}/`) && f.slice(TEST_ROOT.length + 1).includes('/')) || f.startsWith('/tmp/bash_jobs');
  const written = execFileSync('sh', ['-c', `find ${dir} /tmp /etc /var/lib /var/tmp -xdev -newer ${marker} -type f 2>/dev/null || true`], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .filter((f) => !own.some((d) => f.startsWith(d)) && !others(f))
    .filter((f) => /\.pem$|haproxy|escape|passwd|out$|lb-big/.test(f));
  assert.equal(written, [], 'files written outside the agent directories');
});

test.run();
