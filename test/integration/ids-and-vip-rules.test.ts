// Two kinds of controller input that reach the file system, through a real
// agent (issue 26, classes 5 and 8). Ids: an id naming one of the agent's own
// directories (certs, vrrp, lvs), '.', '..', a NUL, an encoded '/', or an
// uppercase UUID gets a 400 on every 1.0 and 2.0 route that takes one, and
// nothing under base_path changes (DELETE /1.0/listeners/certs removed every
// load balancer's certificates). VIP rules: a bad body gets a 400 and the
// previous nftables-vip.rules, and the loaded ruleset, stay as they were.
// Neither depends on the haproxy version: this runs on bookworm's 2.6.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { apiRequest } from '../helpers/api-client.js';
import { testPorts } from '../helpers/ports.js';

const PORTS = testPorts('ids-and-vip-rules');
const AGENT_PORT = PORTS.one();
const t = suite('ids and VIP rules through the API');
let net: TestNetwork;
let agent: AgentUnderTest;

/** Every file and directory under `root` with its content: what a request must leave as it was. */
function tree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) {
        out[`${relative(root, path)}/`] = '';
        walk(path);
      } else if (e.isFile()) {
        out[relative(root, path)] = readFileSync(path, 'latin1');
      }
    }
  };
  walk(root);
  return out;
}

t.before(
  loud(async () => {
    net = createTestNetwork();
    const dir = await testDir('sec26-ids');
    agent = await startAgent(HAPROXIES[0]!, dir, net.netns, AGENT_PORT);
    // Another load balancer's certificate and the keepalived directories, as the agent keeps them.
    mkdirSync(join(agent.certDir, 'lb-keep'), { recursive: true });
    writeFileSync(join(agent.certDir, 'lb-keep', 'server.pem'), 'the key of lb-keep\n');
    for (const d of ['vrrp', 'lvs']) {
      mkdirSync(join(agent.basePath, d), { recursive: true });
      writeFileSync(join(agent.basePath, d, 'kept'), `${d}\n`);
    }
  }),
);

t.after(async () => {
  await agent?.stop();
  net?.destroy();
});

const BAD_IDS = ['certs', 'vrrp', 'lvs', '.', '..', '%2e%2e', 'a%00b', 'a%2Fb', '..%2Fcerts', '0E6B7A38-2F87-4C6B-9F64-3BF8C1E5A0D2', 'lb.sock'];
const GOOD = '0e6b7a38-2f87-4c6b-9f64-3bf8c1e5a0d2';
const CONFIG = 'global\n    daemon\n';
const SPEC = { id: 'x', vip_address: '203.0.113.1', listeners: [] };

/** Every route that takes a load balancer, listener or amphora id, with `id` in each of its id places in turn. */
function routes(id: string): [string, string, { raw?: string; body?: unknown }][] {
  return [
    ['DELETE', `/1.0/listeners/${id}`, {}],
    ['PUT', `/1.0/loadbalancer/${id}/reload`, {}],
    ['PUT', `/1.0/loadbalancer/${id}/stop`, {}],
    ['GET', `/1.0/loadbalancer/${id}/haproxy`, {}],
    ['PUT', `/1.0/loadbalancer/amp-1/${id}/haproxy`, { raw: CONFIG }],
    ['PUT', `/1.0/loadbalancer/${id}/lb-keep/haproxy`, { raw: CONFIG }],
    ['PUT', `/1.0/loadbalancer/${id}/certificates/server.pem`, { raw: 'x' }],
    ['GET', `/1.0/loadbalancer/${id}/certificates/server.pem`, {}],
    ['DELETE', `/1.0/loadbalancer/${id}/certificates/server.pem`, {}],
    ['PUT', `/1.0/listeners/amp-1/${id}/udp_listener`, { raw: 'global_defs {}\n' }],
    ['PUT', `/1.0/listeners/${id}/${GOOD}/udp_listener`, { raw: 'global_defs {}\n' }],
    ['GET', `/1.0/listeners/${id}/udp_listener`, {}],
    ['PUT', `/2.0/loadbalancers/${id}`, { body: SPEC }],
    ['GET', `/2.0/loadbalancers/${id}`, {}],
    ['DELETE', `/2.0/loadbalancers/${id}`, {}],
    ['GET', `/2.0/loadbalancers/${id}/status`, {}],
    ['PUT', `/2.0/loadbalancers/${id}/certificates/server.pem`, { raw: 'x' }],
    ['DELETE', `/2.0/loadbalancers/${id}/certificates/server.pem`, {}],
    ['PUT', `/2.0/loadbalancers/${id}/pools/p1/members/m1`, { body: { address: '10.0.0.1', protocol_port: 80 } }],
  ];
}

t('an id the agent keeps, a dot, a NUL, an encoded slash or an uppercase UUID: 400 on every route, nothing changes', async () => {
  const before = tree(agent.basePath);
  assert.ok(before['certs/lb-keep/server.pem'] && before['vrrp/kept'] && before['lvs/kept'], Object.keys(before).join(' '));
  const wrong: string[] = [];
  for (const id of BAD_IDS) {
    for (const [method, path, opts] of routes(id)) {
      const r = await apiRequest(agent, method, path, opts);
      if (r.status !== 400) wrong.push(`${method} ${path} -> ${r.status} ${r.text.slice(0, 120)}`);
    }
  }
  assert.equal(wrong, [], `${wrong.length} answers were not 400`);
  assert.equal(tree(agent.basePath), before, 'a request changed the files under base_path');
  const why = await apiRequest(agent, 'DELETE', '/1.0/listeners/certs');
  assert.match(why.text, /keeps a directory or file of its own/);
  // The form Octavia sends still works: deleting an unknown listener is OK, as in Octavia's agent.
  assert.is((await apiRequest(agent, 'DELETE', `/1.0/listeners/${GOOD}`)).status, 200);
  assert.is((await apiRequest(agent, 'GET', `/1.0/loadbalancer/${GOOD}/haproxy`)).status, 404);
});

t('a bad VIP rules body: 400, the rules file and the loaded ruleset unchanged', async () => {
  const path = `/1.0/interface/${net.nsIp}/rules`;
  const rules = [
    { protocol: 'TCP', cidr: null, port: 80 },
    { protocol: 'TCP', cidr: '2001:db8::/32', port: 443 },
  ];
  // The first call installs the base ruleset, the next one the VIP chain (Octavia's semantics).
  for (let i = 0; i < 2; i++) assert.is((await apiRequest(agent, 'PUT', path, { body: rules })).status, 200);
  const file = join(agent.basePath, 'nftables-vip.rules');
  const nft = () => execFileSync('ip', ['netns', 'exec', net.netns, 'nft', 'list', 'table', 'inet', 'amphora_table'], { encoding: 'utf8' });
  const text = readFileSync(file, 'utf8');
  const modified = statSync(file).mtimeMs;
  const loaded = nft();
  assert.match(loaded, /tcp dport 443 accept/);
  const bad: unknown[] = [
    [{ protocol: 'TCP', cidr: null, port: 80.5 }],
    [{ protocol: 'TCP', cidr: 'fe80::1%eth0/64', port: 80 }],
    [{ protocol: 'TCP', cidr: '10.0.0.0/33', port: 80 }],
    [{ protocol: 'ICMP', cidr: null, port: 1 }],
    [{ protocol: 'TCP', cidr: null, port: 0 }],
    [{ protocol: 'TCP', cidr: null, port: 65536 }],
    [{ protocol: 'TCP', cidr: null, port: '80' }],
    [{ protocol: 'TCP', cidr: '10.0.0.0/8 accept', port: 80 }],
    [...rules, { protocol: 'UDP', cidr: null, port: 1e9 }],
    { protocol: 'TCP' },
  ];
  for (const body of bad) {
    const r = await apiRequest(agent, 'PUT', path, { body });
    assert.is(r.status, 400, `${JSON.stringify(body)} -> ${r.status} ${r.text}`);
    assert.match(r.text, /Invalid rules information: /);
  }
  assert.is(readFileSync(file, 'utf8'), text, 'a bad body changed nftables-vip.rules');
  assert.is(statSync(file).mtimeMs, modified, 'nftables-vip.rules was rewritten');
  assert.is(nft(), loaded, 'the loaded ruleset changed');
});

t.run();
