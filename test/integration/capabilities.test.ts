// The capability probe against both real binaries.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { probeHaproxy } from '../../agent/haproxy/capabilities.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';

test('bookworm haproxy 2.6: no init-state; master CLI and runtime API features listed', async () => {
  const caps = await probeHaproxy(HAPROXIES[0]!.command, await testDir('caps'));
  assert.is(`${caps.major}.${caps.minor}`, '2.6');
  assert.is(caps.initStateAccepted, false);
  assert.is(caps.initStateAppliedAtStartup, false);
  assert.ok(caps.masterCommands.includes('reload'));
  assert.ok(caps.masterCommands.includes('show proc'));
  assert.ok(caps.runtimeCommands.includes('show servers state'));
  assert.ok(caps.runtimeCommands.includes('add server'));
});

test('sid haproxy: 3.2 or newer, and the behavioural probe agrees with the keyword probe', async () => {
  const caps = await probeHaproxy(HAPROXIES[1]!.command, await testDir('caps'));
  assert.ok(caps.major >= 3 && (caps.major > 3 || caps.minor >= 2), `version ${caps.version}`);
  assert.is(caps.initStateAccepted, true, 'init-state exists since 3.1');
  // 3.2.26 carries the startup fix; if a future sid lacks it the engine
  // falls back to seeding the state file, which the protection tests cover.
  if (caps.initStateAppliedAtStartup) assert.ok(caps.initStateAccepted);
  assert.ok(caps.masterCommands.includes('show startup-logs'));
});

test('a binary that does not run gives a clear error', async () => {
  const err = await probeHaproxy(['/nonexistent/haproxy'], await testDir('caps')).catch((e: Error) => e);
  assert.instance(err, Error);
  assert.match((err as Error).message, /cannot run haproxy \(\/nonexistent\/haproxy -v\)/);
});

test.run();
