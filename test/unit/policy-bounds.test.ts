// The bounds on what haproxy reserves at start (agent/haproxy/config/policy/bounds.ts),
// pure: past the amphora's CPU count or its memory budget a config is refused
// naming the directive, the value and the bound; Octavia 19's sizing and the
// agent's own renderer (which mirrors it) always fit. Octavia 11, 16 and 19's
// own renders and the API 1.0 route are in test/interop/policy-bounds.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { availableKb, checkBounds, reserveBoundKb, RELOAD_FLOOR_KB } from '../../agent/haproxy/config/policy/bounds.js';
import type { PolicyContext } from '../../agent/haproxy/config/policy/types.js';
import { renderLoadBalancer } from '../../agent/render/render.js';
import { haproxyThreads, sslCacheSize } from '../../agent/render/amphora-tuning.js';
import { DEFAULT_RENDER_SETTINGS, type AmphoraFacts } from '../../agent/render/settings.js';
import { validateSpec } from '../../agent/model/spec/validate.js';

const LB = '7e4e5c6a-1111-4222-8333-444455556666';
/** A 1 GB, 1 vCPU amphora as /proc reads it with the agent running: 800,000 kB free, in buffers and cached. */
const ONE_GB: AmphoraFacts = { cpuCount: 1, tunedProfiles: ['amphora'], memoryKb: { free: 600000, buffers: 20000, cached: 180000 } };
const ctx = (amphora: AmphoraFacts | undefined): PolicyContext => ({
  lbId: LB,
  basePath: '/var/lib/octavia',
  baseCertDir: '/var/lib/octavia/certs',
  protectedFiles: [],
  ...(amphora ? { amphora } : {}),
});
const withMemory = (kb: number, cpuCount = 1): AmphoraFacts => ({ cpuCount, tunedProfiles: [], memoryKb: { free: kb, buffers: 0, cached: 0 } });

/** An Octavia-style config with `global` lines, a TLS bind when `tls`, and `tail` sections. */
function config(global: string[], tail: string[] = [], tls = false): string {
  return [
    'global',
    '    daemon',
    '    maxconn 50000',
    ...global.map((l) => `    ${l}`),
    'defaults',
    '    timeout client 50000',
    'frontend f',
    '    maxconn 50000',
    '    bind 203.0.113.5:80',
    ...(tls ? [`    bind 203.0.113.5:443 ssl crt-list /var/lib/octavia/certs/${LB}/l.pem`] : []),
    '    default_backend b',
    'backend b',
    '    server m1 192.0.2.10:80 weight 1',
    ...tail,
  ].join('\n');
}
const lineOf = (text: string, start: string) => text.split('\n').findIndex((l) => l.trim().startsWith(start)) + 1;

test('the budget: half of free + buffers + cached less a floor of 64 MB, or a tenth on a small amphora', () => {
  assert.is(availableKb(ONE_GB), 800000);
  assert.is(reserveBoundKb(ONE_GB), (800000 - RELOAD_FLOOR_KB) / 2);
  assert.is(reserveBoundKb(withMemory(200000)), (200000 - 20000) / 2);
  assert.is(reserveBoundKb(withMemory(0)), 0);
});

test('nbthread and thread-groups past the CPU count: 400 naming the directive, the value and the count', () => {
  const text = config(['nbthread 64']);
  const v = checkBounds(text, ctx(ONE_GB));
  assert.is(v.length, 1);
  assert.is(v[0]!.line, lineOf(text, 'nbthread'));
  assert.is(v[0]!.directive, 'nbthread');
  assert.match(v[0]!.reason, /^64 threads on an amphora with 1 CPU\(s\): at most 1/);
  assert.equal(checkBounds(config(['nbthread 1']), ctx(ONE_GB)), []);
  assert.equal(checkBounds(config(['nbthread 4', 'thread-groups 2']), ctx({ ...ONE_GB, cpuCount: 4 })), []);
  const groups = checkBounds(config(['nbthread 4', 'thread-groups 4']), ctx({ ...ONE_GB, cpuCount: 2 }));
  assert.equal(
    groups.map((x) => x.directive),
    ['nbthread', 'thread-groups'],
  );
  assert.match(groups[1]!.reason, /^4 thread groups on an amphora with 2 CPU\(s\)/);
  // Only in global: a cache section has no nbthread, and os.cpus() may give no count at all.
  assert.equal(checkBounds(config(['nbthread 64']), ctx({ ...ONE_GB, cpuCount: 0 })), []);
});

test('keywords are read as haproxy reads them: quoted or escaped they are still bounded (capitals too, which haproxy refuses anyway)', () => {
  const text = config(['"nbthread" 8', 'nb\\x74hread 9', 'NBTHREAD 7 # comment'], ['"cache" c', '    total-max-size\\ 4095', "    'total-max-size' 4095"]);
  assert.equal(
    checkBounds(text, ctx(ONE_GB)).map((x) => x.line),
    [4, 5, 6, lineOf(text, "'total-max-size'")],
  );
});

test('a 4 GB cache section: 400 naming cache total-max-size, 4095 MB, the total and the bound', () => {
  const text = config([], ['cache big', '    total-max-size 4095', '    max-age 60']);
  const v = checkBounds(text, ctx(ONE_GB));
  assert.is(v.length, 1);
  assert.is(v[0]!.line, lineOf(text, 'total-max-size'));
  assert.is(v[0]!.directive, 'cache total-max-size');
  assert.match(v[0]!.reason, /^4095 MB reserves 4300 MB, of 4300 MB haproxy would reserve at start; the bound for this amphora is 359 MB: half of the 781 MB/);
  assert.match(v[0]!.reason, /old and the new worker of a reload both fit$/);
  assert.equal(checkBounds(config([], ['cache small', '    total-max-size 300']), ctx(ONE_GB)), []);
});

test('reservations add up: the one that crosses the bound and those after it are named, not those before', () => {
  const tail = ['cache a', '    total-max-size 100', 'cache b', '    total-max-size 150', 'ring r', '    size 1048576'];
  const text = config(['tune.ssl.cachesize 600000'], tail, true);
  // 142 + 105 + 157.5 + 1 MB: past 359 MB at cache b.
  const v = checkBounds(text, ctx(ONE_GB));
  assert.equal(
    v.map((x) => [x.line, x.directive]),
    [
      [lineOf(text, 'total-max-size 150'), 'cache total-max-size'],
      [lineOf(text, 'size 1048576'), 'ring size'],
    ],
  );
  assert.match(v[1]!.reason, /^1048576 bytes reserves 1 MB, of 405 MB/);
  assert.equal(checkBounds(text, ctx(withMemory(1_000_000))), []);
});

test("the TLS session cache: 248 B a session, haproxy's 20,000 when a bind has ssl and the directive is absent", () => {
  const text = config(['tune.ssl.cachesize 2000000'], [], true);
  const v = checkBounds(text, ctx(ONE_GB));
  assert.equal(
    v.map((x) => x.directive),
    ['tune.ssl.cachesize'],
  );
  assert.match(v[0]!.reason, /^2000000 sessions reserves 473 MB/);
  assert.equal(checkBounds(config(['tune.ssl.cachesize 1000000'], [], true), ctx(ONE_GB)), []);
  // 20,000 sessions (4.8 MB) on an amphora with 10 MB: the default itself is past a bound of 4.5 MB.
  const tiny = config([], [], true);
  const d = checkBounds(tiny, ctx(withMemory(10000)));
  assert.equal(
    d.map((x) => [x.line, x.directive]),
    [[lineOf(tiny, 'bind 203.0.113.5:443'), 'bind ssl']],
  );
  assert.match(d[0]!.reason, /^haproxy's default TLS session cache \(20000 sessions\) reserves 5 MB/);
  assert.equal(checkBounds(config([]), ctx(withMemory(10000))), [], 'no TLS bind, no session cache');
});

test('a number the bound cannot read is refused, not guessed (haproxy reads "1m" as 1, "0x40" not at all)', () => {
  for (const [line, directive] of [
    ['nbthread 0x40', 'nbthread'],
    ['tune.ssl.cachesize 1m', 'tune.ssl.cachesize'],
    ['thread-groups -1', 'thread-groups'],
  ]) {
    const v = checkBounds(config([line!]), ctx(ONE_GB));
    assert.equal(
      v.map((x) => x.directive),
      [directive],
      line,
    );
    assert.match(v[0]!.reason, /is not a plain decimal number/);
  }
  const v = checkBounds(config([], ['cache c', '    total-max-size 4e3']), ctx(ONE_GB));
  assert.equal(
    v.map((x) => x.directive),
    ['cache total-max-size'],
  );
});

test('limits that only cap traffic stay as sent: maxconn, stick-table size, tune.bufsize', () => {
  const text = config(['maxconn 100000000', 'tune.bufsize 1048576'], ['backend st', '    stick-table type ip size 2000m expire 30s']);
  assert.equal(checkBounds(text, ctx(ONE_GB)), []);
});

test('no facts (judged off the amphora), no bound; unreadable memory bounds threads only', () => {
  const text = config(['nbthread 64'], ['cache big', '    total-max-size 4095']);
  assert.equal(checkBounds(text, ctx(undefined)), []);
  assert.equal(
    checkBounds(text, ctx(withMemory(0))).map((x) => x.directive),
    ['nbthread'],
  );
});

test("Octavia 19's sizing fits on any amphora, from 64 MB to 64 GB, at any maxconn", () => {
  let sized = 0;
  for (let kb = 64 * 1024; kb <= 64 * 1024 * 1024; kb *= 2) {
    for (const maxconn of [100, 1000, 5000, 50000]) {
      const facts: AmphoraFacts = { cpuCount: 8, tunedProfiles: ['amphora'], memoryKb: { free: kb * 0.7, buffers: kb * 0.05, cached: kb * 0.25 } };
      const size = sslCacheSize(facts, maxconn);
      if (size !== null) sized++;
      const threads = haproxyThreads(facts);
      const text = config([`maxconn ${maxconn}`, ...(size === null ? [] : [`tune.ssl.cachesize ${size}`]), `nbthread ${threads}`], [], true);
      assert.equal(checkBounds(text, ctx(facts)), [], `${kb} kB, maxconn ${maxconn}, cachesize ${size}`);
    }
  }
  assert.ok(sized >= 30, `${sized} sized caches`);
});

test("Octavia 16's half at 200 B a session: fits at maxconn 50000, refused where its reload would not fit (LP #2119987)", () => {
  const octavia16 = (facts: AmphoraFacts, maxconn: number) => {
    const kb = Math.floor((availableKb(facts) - 32 * maxconn) / 2);
    return kb > 4000 ? kb * 5 : null;
  };
  assert.is(octavia16(ONE_GB, 50000), null);
  const big: AmphoraFacts = { ...ONE_GB, memoryKb: { free: 3_500_000, buffers: 50_000, cached: 450_000 } };
  assert.equal(checkBounds(config([`tune.ssl.cachesize ${octavia16(big, 50000)}`], [], true), ctx(big)), []);
  // 0.6 of the memory for each of the old and the new worker.
  const v = checkBounds(config([`tune.ssl.cachesize ${octavia16(ONE_GB, 1000)}`], [], true), ctx(ONE_GB));
  assert.equal(
    v.map((x) => x.directive),
    ['tune.ssl.cachesize'],
  );
});

test("the agent's own renderer, sizing as Octavia 19, fits for every fixture on a 1 GB and on a 4-CPU amphora", () => {
  const dir = join(process.cwd(), 'test', 'fixtures', 'specs');
  let rendered = 0;
  const amphorae: AmphoraFacts[] = [ONE_GB, { cpuCount: 4, tunedProfiles: ['amphora'], memoryKb: { free: 3_000_000, buffers: 50_000, cached: 900_000 } }];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    const spec = validateSpec(JSON.parse(readFileSync(join(dir, file), 'utf8')));
    for (const amphora of amphorae) {
      const cfg = renderLoadBalancer(spec, DEFAULT_RENDER_SETTINGS, { initStateAtStartup: false, amphora }).haproxyConfig;
      if (cfg === null) continue;
      rendered++;
      assert.equal(checkBounds(cfg, ctx(amphora)), [], `${file} on ${amphora.cpuCount} CPU(s)`);
    }
  }
  assert.ok(rendered >= 20, `${rendered} renders`);
});

test.run();
