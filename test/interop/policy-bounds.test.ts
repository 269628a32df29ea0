// The bounds on what haproxy reserves at start (agent/haproxy/config/policy/bounds.ts)
// against real Octavia and real haproxy:
//  - every fixture as Octavia 11, 16 and 19 render it at their defaults
//    (maxconn 50000) for a 1 GB, 1 vCPU amphora passes, and for a 4-vCPU one
//    under the amphora TuneD profile (nbthread 3);
//  - with the fixtures' own connection limits, 11 and 19 pass and only 16's
//    TLS session cache is refused, where it takes 0.6 of the memory (LP #2119987);
//  - on the agent (its /proc/meminfo that of a 1 GB amphora), an upload with a
//    4 GB cache section and nbthread 64 gets a 400 naming both, with the value
//    and the bound, and haproxy keeps serving the previous config; the same
//    directives within the bounds are accepted and run (on every haproxy of the matrix).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import { cpus } from 'node:os';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, OCTAVIAS, testDir, type HaproxyUnderTest } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { startAgent } from '../helpers/agent-process.js';
import { apiRequest } from '../helpers/api-client.js';
import { TestBackend } from '../helpers/backend.js';
import { waitFor } from '../helpers/load.js';
import { testPorts } from '../helpers/ports.js';
import { forOctavia, OctaviaRenderer, octaviaSettings, type OctaviaAmpDetails } from '../helpers/octavia-render.js';
import { checkBounds } from '../../agent/haproxy/config/policy/bounds.js';
import type { PolicyContext } from '../../agent/haproxy/config/policy/types.js';
import { DEFAULT_RENDER_SETTINGS, type AmphoraFacts } from '../../agent/render/settings.js';
import { validateSpec } from '../../agent/model/spec/validate.js';
import type { LoadBalancerSpec } from '../../agent/model/spec/types.js';

const PORTS = testPorts('policy-bounds');
const AGENT_PORT = PORTS.range(HAPROXIES.length);
const MEMBER_PORT = PORTS.range(HAPROXIES.length);
const LISTENER_PORT = PORTS.range(HAPROXIES.length);

const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'specs');
const fixtures = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json'))
  .sort();
const LB = 'lb-bounds';

/** A 1 GB amphora with the agent running, as /proc/meminfo gives it (kB). */
const ONE_GB_KB = { free: 600_000, buffers: 20_000, cached: 180_000 };
const amphora = (cpuCount: number): AmphoraFacts => ({ cpuCount, tunedProfiles: ['amphora'], memoryKb: ONE_GB_KB });
const details = (f: AmphoraFacts): OctaviaAmpDetails => ({ cpu_count: f.cpuCount, memory: f.memoryKb, active_tuned_profiles: f.tunedProfiles.join(' ') });
const ctx = (spec: LoadBalancerSpec, facts: AmphoraFacts): PolicyContext => ({
  lbId: spec.id,
  basePath: '/var/lib/octavia',
  baseCertDir: '/var/lib/octavia/certs',
  protectedFiles: [],
  amphora: facts,
});

/** This machine's /proc/meminfo with a 1 GB amphora's figures. */
function amphoraMeminfo(): string {
  const figures: Record<string, number> = {
    MemTotal: 1_000_000,
    MemFree: ONE_GB_KB.free,
    MemAvailable: 780_000,
    Buffers: ONE_GB_KB.buffers,
    Cached: ONE_GB_KB.cached,
    SwapCached: 0,
  };
  return readFileSync('/proc/meminfo', 'utf8').replace(/^(\w+):(\s+)\d+/gm, (line, key: string, space: string) =>
    key in figures ? `${key}:${space}${figures[key]}` : line,
  );
}

const t = suite('bounds: Octavia 11/16/19 renders at their defaults pass on a 1 GB amphora; a 4 GB cache and nbthread 64 get a 400');
const renderers = new Map<string, OctaviaRenderer>();
let network: TestNetwork;
let dir: string;

t.before(
  loud(async () => {
    for (const o of OCTAVIAS) renderers.set(o.label, await OctaviaRenderer.start(o));
    network = createTestNetwork();
    dir = await testDir('bounds');
  }),
);

t.after(async () => {
  for (const r of renderers.values()) await r.close();
  network?.destroy();
});

/** A fixture as Octavia renders it: `defaults` drops the listeners' connection limits (Octavia's 50000 each). */
function fixture(file: string, defaults: boolean): LoadBalancerSpec {
  const raw = JSON.parse(readFileSync(join(FIXTURES, file), 'utf8'));
  if (defaults) for (const l of raw.listeners ?? []) delete l.connection_limit;
  return forOctavia(validateSpec(raw));
}

t(`every fixture (${fixtures.length}) as Octavia 11, 16 and 19 render it at their defaults passes on a 1 GB amphora of 1 and of 4 vCPUs`, async () => {
  assert.is(renderers.size, 3);
  let checked = 0;
  let threaded = 0;
  const settings = octaviaSettings(DEFAULT_RENDER_SETTINGS);
  for (const file of fixtures) {
    const spec = fixture(file, true);
    for (const [release, r] of renderers) {
      for (const facts of [amphora(1), amphora(4)]) {
        const cfg = (await r.render(spec, '2.6', settings, details(facts))).haproxy;
        if (cfg === null) continue;
        checked++;
        assert.match(cfg, /^\s*maxconn 50000$/m, `${release} ${file}: not at the default maxconn`);
        if (/^\s*nbthread 3$/m.test(cfg)) threaded++;
        assert.equal(checkBounds(cfg, ctx(spec, facts)), [], `${release} ${file} on ${facts.cpuCount} vCPU(s) refused:\n${cfg}`);
      }
    }
  }
  assert.ok(checked >= 120, `${checked} renders`);
  assert.ok(threaded >= 40, `${threaded} renders with nbthread 3 (16 and 19 pin threads under the amphora profile)`);
});

t("with the fixtures' own connection limits, only Octavia 16's TLS session cache is refused on a 1 GB amphora (LP #2119987)", async () => {
  const settings = octaviaSettings(DEFAULT_RENDER_SETTINGS);
  const refused = new Map<string, string[]>();
  let sized19 = 0;
  for (const file of fixtures) {
    const spec = fixture(file, false);
    for (const [release, r] of renderers) {
      const cfg = (await r.render(spec, '2.6', settings, details(amphora(1)))).haproxy;
      if (cfg === null) continue;
      if (release === 'octavia-19' && cfg.includes('tune.ssl.cachesize')) sized19++;
      const v = checkBounds(cfg, ctx(spec, amphora(1)));
      if (v.length > 0)
        refused.set(
          `${release} ${file}`,
          v.map((x) => x.directive),
        );
    }
  }
  assert.ok(sized19 >= 5, `Octavia 19 sized ${sized19} TLS session caches from the memory`);
  assert.ok(refused.size >= 1, 'Octavia 16 sized no cache past the bound');
  for (const [which, directives] of refused) {
    assert.ok(which.startsWith('octavia-16 '), `${which} refused: ${directives}`);
    assert.equal(directives, ['tune.ssl.cachesize'], which);
  }
});

function get(host: string, port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host, port, path, agent: false, timeout: 5000, headers: { connection: 'close' } }, (res) => {
      let body = '';
      res.setEncoding('latin1');
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: timeout`)));
    req.on('error', reject);
  });
}

/** `cfg` with `global` lines after its global keyword and `tail` at its end. */
function withLines(cfg: string, global: string[], tail: string[]): string {
  return `${cfg.replace(/^global$/m, ['global', ...global.map((l) => `    ${l}`)].join('\n')).trimEnd()}\n\n${tail.join('\n')}\n`;
}

async function boundsRound(h: HaproxyUnderTest, i: number): Promise<void> {
  const o19 = renderers.get('octavia-19')!;
  const backend = await new TestBackend(`member-${h.label}`, network.hostIp, MEMBER_PORT(i)).start();
  const home = join(dir, `h${i}`);
  // The agent sees a 1 GB amphora's memory (this machine's would give a bound of gigabytes).
  const meminfo = join(dir, `meminfo-${i}`);
  writeFileSync(meminfo, amphoraMeminfo());
  const launcher = ['unshare', '-m', 'sh', '-c', `mount --make-rprivate / && mount --bind ${meminfo} /proc/meminfo && exec "$@"`, 'sh'];
  // Octavia's templates render no cache section: an operator's extension allows one, and the bound still applies.
  const extension = join(dir, `policy-extension-${i}`);
  writeFileSync(extension, 'line cache <id>\nline cache total-max-size <int>\nline cache max-age <int>\n');
  const agent = await startAgent(h, home, network.netns, AGENT_PORT(i), undefined, [`config_policy_extension = ${extension}`], launcher);
  try {
    const vip = network.nsIp;
    const port = LISTENER_PORT(i);
    const spec = validateSpec({
      id: LB,
      vip_address: vip,
      project_id: 'tenant',
      listeners: [
        {
          id: 'l-web',
          protocol: 'HTTP',
          protocol_port: port,
          connection_limit: 1000,
          default_pool: {
            id: 'p-web',
            protocol: 'HTTP',
            lb_algorithm: 'ROUND_ROBIN',
            members: [{ id: 'm1', address: backend.host, protocol_port: backend.port }],
          },
        },
      ],
    });
    const settings = { ...octaviaSettings(DEFAULT_RENDER_SETTINGS), base_path: agent.basePath, base_cert_dir: agent.certDir };
    const good = (await o19.render(forOctavia(spec), '2.6', settings, null)).haproxy!;
    const upload = (cfg: string) => apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${LB}/haproxy`, { raw: cfg });

    const first = await upload(good);
    assert.is(first.status, 202, `${first.text}\n${agent.output().slice(-3000)}`);
    assert.is((await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/start`)).status, 202);
    await waitFor('the member through haproxy', async () => (await get(vip, port, '/').catch(() => null))?.status === 200);

    const big = withLines(good, ['nbthread 64'], ['cache big', '    total-max-size 4095', '    max-age 60']);
    const r = await upload(big);
    assert.is(r.status, 400, `${r.status} ${r.text}`);
    assert.is(r.json?.message, 'Invalid request');
    const detailsText = String(r.json?.details ?? '');
    const line = (start: string) => big.split('\n').findIndex((l) => l.trim().startsWith(start)) + 1;
    assert.ok(detailsText.includes(`line ${line('nbthread')}: nbthread: 64 threads on an amphora with ${cpus().length} CPU(s)`), detailsText);
    const cacheRefusal = `line ${line('total-max-size')}: cache total-max-size: 4095 MB reserves 4300 MB, .*the bound for this amphora is 359 MB`;
    assert.match(detailsText, new RegExp(cacheRefusal));
    assert.is((await apiRequest(agent, 'GET', `/1.0/loadbalancer/${LB}/haproxy`)).text, good, 'the accepted config changed');

    // A reload runs the previous config: still serving.
    assert.is((await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/reload`)).status, 202);
    const after = await get(vip, port, '/');
    assert.is(after.status, 200);
    assert.is(after.body, `${backend.name}\n`);

    // The same directives within the bounds are accepted and run: the bound, not haproxy, refused the first.
    const fits = withLines(good, [`nbthread ${cpus().length}`], ['cache small', '    total-max-size 64', '    max-age 60']);
    const ok = await upload(fits);
    assert.is(ok.status, 202, ok.text);
    assert.is((await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/reload`)).status, 202);
    assert.is((await get(vip, port, '/')).status, 200);
    assert.is(agent.process.exitCode, null, 'the agent died');
  } finally {
    await agent.stop();
    await backend.stop();
  }
}

for (const [i, h] of HAPROXIES.entries()) {
  t(
    `${h.label}: a 4 GB cache and nbthread 64 on a 1 GB amphora: 400 naming both with the bound, previous config serving`,
    loud(() => boundsRound(h, i)),
  );
}

t.run();
