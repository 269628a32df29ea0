// The capability probe against every real binary of the matrix.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { probeHaproxy } from '../../agent/haproxy/process/capabilities.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';

for (const h of HAPROXIES) {
  test(`${h.label}: the binary is of its series; master CLI and runtime API features listed; init-state as probed`, async () => {
    const caps = await probeHaproxy(h.command, await testDir('caps'));
    // The README's version table names these series: a suite that moved on must show up here.
    assert.is(`haproxy-${caps.major}.${caps.minor}`, h.label, `version ${caps.version}`);
    assert.ok(caps.masterCommands.includes('reload'));
    assert.ok(caps.masterCommands.includes('show proc'));
    assert.ok(caps.runtimeCommands.includes('show servers state'));
    assert.ok(caps.runtimeCommands.includes('add server'));
    // init-state is a server keyword from 3.1 on.
    const since31 = caps.major > 3 || (caps.major === 3 && caps.minor >= 1);
    assert.is(caps.initStateAccepted, since31);
    // Applied at start-up only where accepted; 3.4 has the fix (3.2 may, by backport).
    if (caps.initStateAtStartup) assert.ok(caps.initStateAccepted);
    if (caps.major > 3 || (caps.major === 3 && caps.minor >= 4)) assert.ok(caps.initStateAtStartup);
    if (since31) assert.ok(caps.masterCommands.includes('show startup-logs'));
    // Octavia 16's `option http-use-htx` is unknown to every series here (HTX is the only engine since 2.1).
    assert.is(caps.httpUseHtxAccepted, false);
    // Octavia 11-16's `option httpchk ... HTTP/1.1\r\nHost: x` is refused from 2.7 on.
    assert.is(caps.legacyHttpchkAccepted, caps.major < 3 && caps.minor < 7);
  });
}

test('a binary that does not run gives a clear error', async () => {
  const err = await probeHaproxy(['/nonexistent/haproxy'], await testDir('caps')).catch((e: Error) => e);
  assert.instance(err, Error);
  assert.match((err as Error).message, /cannot run haproxy \(\/nonexistent\/haproxy -v\)/);
});

test.run();
