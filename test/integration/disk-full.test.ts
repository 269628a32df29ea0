// base_path on a full disk (a small tmpfs, filled to the last page):
// uploads (API 1.0 config, certificates; API 2.0 spec and certificate) and
// a reload (live config, server-state dump) fail with a clear error, leave no
// temporary or half-written file and change nothing in place, and haproxy
// keeps serving the last good config. Once space is freed, the same requests
// work. On every haproxy version: a chrooted haproxy (3.x) sees the test root
// through a private bind mount made before the tmpfs existed, so the tmpfs is
// bound into its root filesystem as well.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir, type HaproxyUnderTest } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { apiRequest } from '../helpers/api-client.js';
import { TestBackend } from '../helpers/backend.js';
import { octaviaStyleConfig } from '../helpers/octavia-config.js';
import { waitFor } from '../helpers/load.js';
import { issue, makeCa } from '../helpers/certs.js';
import { filesUnder } from '../helpers/file-tree.js';
import { testPorts } from '../helpers/ports.js';

const LB = 'lb-full';
const LB2 = 'lb-full-v2';
const PORTS = testPorts('disk-full');
const [LISTENERS, MEMBER, AGENT] = [PORTS.range(3 * HAPROXIES.length), PORTS.range(HAPROXIES.length), PORTS.range(HAPROXIES.length)];

/** The root filesystem a chroot wrapper runs haproxy in, or null for the host's haproxy. */
function chrootOf(h: HaproxyUnderTest): string | null {
  if (h.command[0]!.startsWith('/usr/')) return null;
  const root = /\bchroot (\S+)/.exec(readFileSync(h.command[0]!, 'utf8'))?.[1];
  if (!root) throw new Error(`${h.command[0]}: no chroot in the wrapper`);
  return root;
}

HAPROXIES.forEach((h, hi) => {
  const PORT_A = LISTENERS(3 * hi);
  const PORT_B = LISTENERS(3 * hi + 1);
  const PORT_V2 = LISTENERS(3 * hi + 2);

  const t = suite(`disk full on base_path (${h.label}): clear errors, nothing torn, the last good config serving, all fine once space is freed`);
  let net: TestNetwork;
  let dir: string;
  const mounts: string[] = [];
  let mount = '';
  let agent: AgentUnderTest;
  let member: TestBackend;
  let certPem: Buffer;
  let filler = '';

  t.before(
    loud(async () => {
      net = createTestNetwork();
      dir = await testDir('df');
      mount = join(dir, 'lib');
      mkdirSync(mount);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m,mode=0755', 'tmpfs', mount]);
      mounts.push(mount);
      const root = chrootOf(h);
      if (root) {
        execFileSync('mount', ['--bind', mount, join(root, mount)]);
        mounts.push(join(root, mount));
      }
      member = await new TestBackend('member', net.hostIp, MEMBER(hi)).start();
      agent = await startAgent(h, dir, net.netns, AGENT(hi));
      const ca = makeCa(join(dir, 'pki'), 'tls-ca');
      certPem = readFileSync(issue(ca, 'lb', { dnsName: 'lb.example.test', usage: 'serverAuth' }).pem);
      filler = join(mount, 'filler');
    }),
  );

  t.after(async () => {
    await agent?.stop();
    await member?.stop();
    net?.destroy();
    for (const m of mounts.reverse()) execFileSync('umount', ['-l', m]);
  });

  const config = (port: number, generation: number) =>
    octaviaStyleConfig({
      lbId: LB,
      baseDir: agent.basePath,
      bind: `${net.nsIp}:${port}`,
      monitor: null,
      generation,
      members: [{ id: 'm1', address: member.address }],
    });

  function get(port: number): Promise<number | null> {
    return new Promise((resolve) => {
      const req = http.get({ host: net.nsIp, port, path: '/', agent: false, timeout: 3000 }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? null));
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => resolve(null));
    });
  }

  /** Fill the tmpfs to the last byte it will take: big writes, then smaller ones until even 512 bytes fail. */
  function fill(): void {
    const fd = openSync(filler, 'a');
    try {
      for (const size of [1 << 20, 65536, 4096, 512]) {
        const chunk = Buffer.alloc(size, 0x61);
        for (;;) {
          try {
            writeSync(fd, chunk);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
            break;
          }
        }
      }
    } finally {
      closeSync(fd);
    }
  }

  /** Every regular file under `root` with its content (sockets, the filler and haproxy's launch log aside). */
  function snapshot(root: string): Map<string, string> {
    const kept = filesUnder(root).filter((f) => f.entry.isFile() && f.path !== filler && !f.entry.name.endsWith('.launch.log'));
    return new Map(kept.map((f) => [f.rel, readFileSync(f.path, 'latin1')]));
  }

  const temporaries = (s: Map<string, string>) => [...s.keys()].filter((k) => k.includes('.tmp-'));

  function sameFiles(before: Map<string, string>, after: Map<string, string>, what: string): void {
    assert.equal(temporaries(after), [], `${what}: temporary files left`);
    assert.equal([...after.keys()].sort(), [...before.keys()].sort(), `${what}: files appeared or vanished`);
    for (const [k, v] of before) assert.ok(after.get(k) === v, `${what}: ${k} changed`);
  }

  const full = (r: { status: number; json: { message?: string; details?: string; error?: string } | null; text: string }, what: string, status = 500) => {
    assert.is(r.status, status, `${what}: ${r.status} ${r.text}`);
    assert.match(r.text, /[Nn]o space left/, `${what}: the error does not say the disk is full: ${r.text}`);
  };

  t('running config A; B accepted; then a full disk', async () => {
    assert.is((await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${LB}/haproxy`, { raw: config(PORT_A, 1) })).status, 202);
    assert.is((await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/start`)).status, 202);
    await waitFor('A to serve', async () => (await get(PORT_A)) === 200);
    assert.is((await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${LB}/haproxy`, { raw: config(PORT_B, 2) })).status, 202);
    fill();
    const free = statSync(mount) && execFileSync('df', ['--output=avail', '-B1', mount], { encoding: 'utf8' }).split('\n')[1]!.trim();
    assert.ok(Number(free) < 4096, `${free} bytes still free`);
  });

  t('API 1.0 upload: 500 "No space left on device", the accepted config unchanged, no temporary file', async () => {
    const before = snapshot(mount);
    const r = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${LB}/haproxy`, { raw: config(PORT_B, 3) });
    full(r, 'upload');
    assert.is(r.json?.message, 'No space left on device');
    sameFiles(before, snapshot(mount), 'upload');
    assert.is((await apiRequest(agent, 'GET', `/1.0/loadbalancer/${LB}/haproxy`)).text, config(PORT_B, 2));
    assert.is(await get(PORT_A), 200);
  });

  t('API 1.0 certificate upload: 500, no file', async () => {
    const before = snapshot(mount);
    const r = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/certificates/tls.pem`, { raw: certPem });
    full(r, 'certificate upload');
    sameFiles(before, snapshot(mount), 'certificate upload');
    assert.is((await apiRequest(agent, 'GET', `/1.0/loadbalancer/${LB}/certificates/tls.pem`)).status, 404);
  });

  t('API 1.0 reload (live config, server-state dump): an error, haproxy keeps serving A', async () => {
    const before = snapshot(mount);
    const r = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/reload`);
    assert.ok(r.status >= 500, `reload on a full disk: ${r.status} ${r.text}`);
    assert.match(r.text, /[Nn]o space left/, `the reload error does not say the disk is full: ${r.text}`);
    // The server-state dump is the first file a reload writes: that is where it stops.
    assert.match(r.text, /servers-state/, `the reload did not stop at the server-state dump: ${r.text}`);
    const after = snapshot(mount);
    assert.equal(temporaries(after), [], 'reload: temporary files left');
    // What haproxy loads and what was accepted are whole: the live config is still A, the accepted B.
    const live = join('/', LB, 'haproxy.live.cfg');
    assert.is(after.get(live), before.get(live), 'the live config changed');
    assert.is(after.get(join('/', LB, 'haproxy.cfg')), config(PORT_B, 2));
    assert.is(await get(PORT_A), 200, 'A stopped serving');
    assert.is(await get(PORT_B), null, 'B is serving');
  });

  t('API 2.0 spec and certificate: 507 storage_full, nothing stored', async () => {
    const before = snapshot(mount);
    const cert = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB2}/certificates/server.pem`, { raw: certPem });
    full(cert, '2.0 certificate', 507);
    assert.is(cert.json?.error, 'storage_full');
    const spec = {
      id: LB2,
      vip_address: net.nsIp,
      listeners: [
        {
          id: 'l',
          protocol: 'HTTP',
          protocol_port: PORT_V2,
          connection_limit: 1000,
          default_pool: { id: 'p', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ id: 'm', address: member.host, protocol_port: member.port }] },
        },
      ],
    };
    const put = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB2}`, { body: spec });
    full(put, '2.0 spec', 507);
    sameFiles(before, snapshot(mount), '2.0');
    assert.is((await apiRequest(agent, 'GET', `/2.0/loadbalancers/${LB2}`)).status, 404);
    assert.is(await get(PORT_V2), null);
    assert.is(await get(PORT_A), 200);
  });

  t('space freed: the same requests work, B serves, the agent is alive', async () => {
    rmSync(filler);
    const up = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${LB}/haproxy`, { raw: config(PORT_B, 3) });
    assert.is(up.status, 202, up.text);
    const reload = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/reload`);
    assert.is(reload.status, 202, reload.text);
    await waitFor('B to serve', async () => (await get(PORT_B)) === 200);
    assert.is(await get(PORT_A), null, 'A still serving');
    assert.is((await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/certificates/tls.pem`, { raw: certPem })).status, 200);
    const spec = {
      id: LB2,
      vip_address: net.nsIp,
      listeners: [
        {
          id: 'l',
          protocol: 'HTTP',
          protocol_port: PORT_V2,
          connection_limit: 1000,
          default_pool: { id: 'p', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ id: 'm', address: member.host, protocol_port: member.port }] },
        },
      ],
    };
    const put = await apiRequest(agent, 'PUT', `/2.0/loadbalancers/${LB2}`, { body: spec });
    assert.ok(put.status === 200 || put.status === 201, `${put.status} ${put.text}`);
    await waitFor('the 2.0 load balancer to serve', async () => (await get(PORT_V2)) === 200);
    assert.equal(temporaries(snapshot(mount)), []);
    assert.is(agent.process.exitCode, null);
    await apiRequest(agent, 'DELETE', `/2.0/loadbalancers/${LB2}`);
  });

  t.run();
});
