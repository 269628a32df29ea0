import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { currentWorker, parseShowProc } from '../../agent/haproxy/process/master-cli.js';
import { peerName } from '../../agent/model/names.js';
import { KeyedLock } from '../../agent/system/keyed-lock.js';

test('show proc from haproxy 2.6 after a failed reload', () => {
  const t = parseShowProc(
    [
      '#<PID>          <type>          <reloads>       <uptime>        <version>',
      '12327           master          1 [failed: 1]   0d00h00m02s     2.6.12-1+deb12u4',
      '# workers',
      '12328           worker          1               0d00h00m02s     2.6.12-1+deb12u4',
      '# programs',
      '',
    ].join('\n'),
  )!;
  assert.equal(t, { masterPid: 12327, reloads: 1, failedReloads: 1, workers: [{ pid: 12328, reloads: 1 }] });
});

test('show proc from haproxy 3.2 with old workers: the current worker is the youngest', () => {
  const t = parseShowProc(
    [
      '#<PID>          <type>          <reloads>       <uptime>        <version>',
      '12284           master          2 [failed: 0]   0d00h00m04s     3.2.26-1',
      '# workers',
      '12303           worker          0               0d00h00m01s     3.2.26-1',
      '# old workers',
      '12285           worker          1               0d00h00m03s     3.2.26-1',
    ].join('\n'),
  )!;
  assert.is(t.reloads, 2);
  assert.is(currentWorker(t), 12303);
  assert.is(t.workers.length, 2);
  assert.is(parseShowProc('Unknown command'), null);
});

test('peer name matches Octavia (base64 of SHA-1 with _ and -)', () => {
  assert.is(peerName('amp-1'), 'nb4_5hKf-EYlJ2pGnOD7IGY2jng');
});

test('keyed lock serializes work per key and keeps going after a failure', async () => {
  const lock = new KeyedLock();
  const order: string[] = [];
  const slow = (tag: string, ms: number, fail = false) =>
    lock.run('lb', async () => {
      order.push(`${tag}+`);
      await new Promise((r) => setTimeout(r, ms));
      order.push(`${tag}-`);
      if (fail) throw new Error(tag);
    });
  const results = await Promise.allSettled([
    slow('a', 30, true),
    slow('b', 5),
    lock.run('other', async () => {
      order.push('o');
    }),
  ]);
  assert.is(results[0].status, 'rejected');
  assert.is(results[1].status, 'fulfilled');
  assert.equal(
    order.filter((x) => x !== 'o'),
    ['a+', 'a-', 'b+', 'b-'],
  );
  assert.ok(order.indexOf('o') < order.indexOf('a-'), 'other keys run concurrently');
});

test.run();
