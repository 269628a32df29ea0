// Octavia 19's sizing of haproxy from the amphora (nbthread/cpu-map,
// tune.ssl.cachesize) and its tls_ciphers split, in our renderer: the edges
// the parity fixtures do not reach (thresholds, a single CPU, no TuneD
// profile, no facts at all, the order of the lists).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { renderLoadBalancer } from '../../agent/render/render.js';
import { haproxyThreads, sslCacheSize } from '../../agent/render/amphora-tuning.js';
import { DEFAULT_RENDER_SETTINGS, type AmphoraFacts } from '../../agent/render/settings.js';
import { SpecError, validateSpec } from '../../agent/model/spec/validate.js';
import { readAmphoraFacts } from '../../agent/info/amphora-facts.js';

const facts = (free: number, cpuCount = 2, tunedProfiles = ['amphora']): AmphoraFacts => ({
  cpuCount,
  tunedProfiles,
  memoryKb: { free, buffers: 0, cached: 0 },
});

const tlsSpec = (listener: Record<string, unknown> = {}) =>
  validateSpec({
    id: 'lb',
    vip_address: '203.0.113.1',
    listeners: [{ id: 'l', protocol: 'TERMINATED_HTTPS', protocol_port: 443, connection_limit: 1000, default_tls_container_ref: 'server.pem', ...listener }],
  });

test('SSL cache: 2/5 of the memory left after 32 kB per connection, 4 entries per kB, none at or below 5000 kB', () => {
  // (100000 - 32 * 1000) * 2 / 5 = 27200 kB -> 108800 entries.
  assert.is(sslCacheSize(facts(100000), 1000), 108800);
  // Free, buffers and cached all count.
  assert.is(sslCacheSize({ ...facts(0), memoryKb: { free: 50000, buffers: 20000, cached: 30000 } }, 1000), 108800);
  // 12500 + 32 kB -> exactly 5000 kB: haproxy's default stays.
  assert.is(sslCacheSize(facts(12500 + 32), 1), null);
  assert.is(sslCacheSize(facts(12503 + 32), 1), 5001 * 4);
  // Less memory than the connections take.
  assert.is(sslCacheSize(facts(1000), 1000), null);
});

test('CPU pinning: one thread per CPU but the first, only under the amphora TuneD profile', () => {
  assert.is(haproxyThreads(facts(0, 4)), 3);
  assert.is(haproxyThreads(facts(0, 1)), null);
  assert.is(haproxyThreads(facts(0, 4, ['balanced'])), null);
  assert.is(haproxyThreads(facts(0, 4, ['balanced', 'amphora'])), 3);
});

test('the global section carries the tuning only with facts, the cache only with a TERMINATED_HTTPS listener', () => {
  const tuned = renderLoadBalancer(tlsSpec(), DEFAULT_RENDER_SETTINGS, { initStateAtStartup: false, amphora: facts(1000000, 3) }).haproxyConfig!;
  assert.match(tuned, '    maxconn 1000\n    tune.ssl.cachesize 1548800\n    nbthread 2\n    cpu-map auto:1/1-2 1-2\n');
  const plain = renderLoadBalancer(tlsSpec(), DEFAULT_RENDER_SETTINGS, { initStateAtStartup: false }).haproxyConfig!;
  assert.not.match(plain, /tune\.ssl|nbthread|cpu-map/);
  const http = validateSpec({ id: 'lb', vip_address: '203.0.113.1', listeners: [{ id: 'l', protocol: 'HTTP', protocol_port: 80 }] });
  const noTls = renderLoadBalancer(http, DEFAULT_RENDER_SETTINGS, { initStateAtStartup: false, amphora: facts(1000000, 3) }).haproxyConfig!;
  assert.not.match(noTls, 'tune.ssl.cachesize');
  assert.match(noTls, 'nbthread 2');
});

test('tls_ciphers: TLS 1.3 names become ciphersuites, each list in the given order, a list no allowed version uses left out', () => {
  const bind = (listener: Record<string, unknown>) =>
    renderLoadBalancer(tlsSpec(listener), DEFAULT_RENDER_SETTINGS, { initStateAtStartup: false })
      .haproxyConfig!.split('\n')
      .find((l) => l.includes(' bind '))!;
  const mixed = 'TLS_CHACHA20_POLY1305_SHA256:ECDHE-RSA-AES256-GCM-SHA384:TLS_AES_128_GCM_SHA256:ECDHE-ECDSA-AES128-GCM-SHA256';
  assert.match(
    bind({ tls_ciphers: mixed }),
    ' ciphers ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256 ciphersuites TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256',
  );
  const only13 = bind({ tls_ciphers: mixed, tls_versions: ['TLSv1.3'] });
  assert.not.match(only13, ' ciphers ');
  assert.match(only13, ' ciphersuites TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256 ');
  const only12 = bind({ tls_ciphers: mixed, tls_versions: ['TLSv1.2'] });
  assert.not.match(only12, 'ciphersuites');
  assert.match(only12, ' ciphers ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256 ');
});

test('tls_ciphers that cannot apply are refused with the field path', () => {
  const refused = (listener: Record<string, unknown>) => {
    try {
      tlsSpec(listener);
    } catch (err) {
      assert.instance(err, SpecError);
      return (err as SpecError).problems.join('\n');
    }
    return 'accepted';
  };
  assert.match(refused({ tls_ciphers: 'TLS_AES_128_GCM_SHA256', tls_versions: ['TLSv1.2'] }), 'listeners[0].tls_ciphers: names only TLS 1.3 ciphersuites');
  assert.match(refused({ tls_ciphers: 'TLS_NO_SUCH_SUITE:ECDHE-RSA-AES128-GCM-SHA256' }), 'TLS_NO_SUCH_SUITE is not a TLS 1.3 ciphersuite');
  assert.is(refused({ tls_ciphers: 'TLS_AES_128_GCM_SHA256' }), 'accepted');
});

test('the facts of this machine: its CPUs and /proc/meminfo figures', async () => {
  const f = await readAmphoraFacts();
  assert.ok(f.cpuCount >= 1);
  assert.ok(f.memoryKb.free > 0 && f.memoryKb.cached >= 0 && f.memoryKb.buffers >= 0, JSON.stringify(f.memoryKb));
  assert.ok(Array.isArray(f.tunedProfiles));
});

test.run();
