import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { carriedChecks } from '../../agent/haproxy/config/carried-checks.js';
import { readConfig, timeMs } from '../../agent/haproxy/config/config-reader.js';
import type { PendingMember } from '../../agent/haproxy/process/runtime-api.js';

const CONFIG = [
  'defaults',
  '    default-server inter 5s',
  'backend pool',
  '    default-server rise 3',
  '    server up 10.0.0.1:80 check',
  '    server half 10.0.0.2:80 check',
  '    server fast 10.0.0.3:80 check fastinter 100ms',
  '    server moved 10.0.0.14:80 check',
  '    server once 10.0.0.5:80 check rise 1',
  '    server unchecked 10.0.0.6:80',
  '    server failed 10.0.0.7:80 check',
  '    server fresh 10.0.0.8:80 check',
  '',
].join('\n');

/** A `show servers state` line: op state, check result, check health. */
const line = (name: string, address: string, op: number, result: number, health: number) =>
  `3 pool 1 ${name} ${address} ${op} 0 1 1 7 15 ${result} ${health} 6 0 0 0 - 80 - 0 0 - - 0`;

const DUMP = [
  '1',
  '# be_id be_name srv_id srv_name ...',
  line('up', '10.0.0.1', 2, 3, 4),
  line('half', '10.0.0.2', 0, 3, 2),
  line('fast', '10.0.0.3', 0, 3, 1),
  line('moved', '10.0.0.4', 0, 3, 1),
  line('once', '10.0.0.5', 0, 3, 0),
  line('unchecked', '10.0.0.6', 0, 3, 1),
  line('failed', '10.0.0.7', 0, 2, 0),
  line('fresh', '10.0.0.8', 0, 1, 0),
  line('gone', '10.0.0.9', 0, 3, 1),
  '',
].join('\n');

const carried = (dump: string, watched: PendingMember[] = [], lookedAgoMs = 100) => carriedChecks(dump, readConfig(CONFIG), watched, lookedAgoMs);

test('config reader: rise and the shortest check interval, default-server words first', () => {
  const servers = readConfig(CONFIG).backends.get('pool')!.servers;
  const of = (name: string) => servers.find((s) => s.name === name)!;
  assert.is(of('half').rise, 3);
  assert.is(of('once').rise, 1);
  assert.is(of('half').checkEveryMs, 5000);
  assert.is(of('fast').checkEveryMs, 100);
  assert.is(readConfig('backend b\n    server s 10.0.0.1:80 check\n').backends.get('b')!.servers[0]!.checkEveryMs, 2000);
  assert.ok(Number.isNaN(readConfig('backend b\n    server s 10.0.0.1:80 check inter 2x\n').backends.get('b')!.servers[0]!.checkEveryMs));
});

test('haproxy times: a bare number is milliseconds', () => {
  assert.equal(['500', '100ms', '2s', '1m', '1500us', '1.5s', 's', '-1', ''].map(timeMs), [
    500,
    100,
    2000,
    60_000,
    1.5,
    Number.NaN,
    Number.NaN,
    Number.NaN,
    Number.NaN,
  ]);
});

test('a member down with passed checks is carried: it needs only the rest of its rise', () => {
  assert.equal(carried(DUMP), [
    { backend: 'pool', server: 'half', rise: 1, carried: { checks: 2, everyMs: 5000 } },
    { backend: 'pool', server: 'fast', rise: 2, carried: { checks: 1, everyMs: 100 } },
  ]);
});

test('not carried: up, moved, rise 1, unchecked, failed, not checked yet, no longer configured', () => {
  const names = carried(DUMP).map((p) => p.server);
  for (const name of ['up', 'moved', 'once', 'unchecked', 'failed', 'fresh', 'gone']) assert.not.ok(names.includes(name), name);
});

test('a rise that is not a number carries nothing (the word after `rise` was a cookie value)', () => {
  const config = readConfig('backend pool\n    server odd 10.0.0.2:80 check cookie rise weight 5\n');
  const dump = ['1', '# be_id ...', line('odd', '10.0.0.2', 0, 3, 1), ''].join('\n');
  assert.ok(Number.isNaN(config.backends.get('pool')!.servers[0]!.rise));
  assert.equal(carriedChecks(dump, config, [], 100), []);
});

test('a count carried before adds up across reloads while the agent kept watching', () => {
  const before: PendingMember = { backend: 'pool', server: 'fresh', rise: 2, carried: { checks: 1, everyMs: 5000 } };
  const dump = DUMP.replace(line('fresh', '10.0.0.8', 0, 1, 0), line('fresh', '10.0.0.8', 0, 3, 1));
  assert.equal(
    carried(dump, [before]).find((p) => p.server === 'fresh'),
    { backend: 'pool', server: 'fresh', rise: 1, carried: { checks: 2, everyMs: 5000 } },
  );
  // Not checked yet in the new worker: the earlier count alone.
  assert.equal(carried(DUMP, [before]).find((p) => p.server === 'fresh')?.carried, { checks: 1, everyMs: 5000 });
  // The agent did not look for a whole interval: a failure may have gone unseen.
  assert.equal(carried(dump, [before], 5000).find((p) => p.server === 'fresh')?.carried, { checks: 1, everyMs: 5000 });
  assert.is(
    carried(DUMP, [before], 5000).find((p) => p.server === 'fresh'),
    undefined,
  );
  // A failed last check voids it.
  assert.is(
    carried(DUMP.replace(line('fresh', '10.0.0.8', 0, 1, 0), line('fresh', '10.0.0.8', 0, 2, 0)), [before]).find((p) => p.server === 'fresh'),
    undefined,
  );
});

test('more checks counted than the new rise asks for: one passed check in the new worker', () => {
  const before: PendingMember = { backend: 'pool', server: 'half', rise: 1, carried: { checks: 2, everyMs: 5000 } };
  assert.equal(
    carried(DUMP, [before]).find((p) => p.server === 'half'),
    { backend: 'pool', server: 'half', rise: 1, carried: { checks: 4, everyMs: 5000 } },
  );
});

test.run();
