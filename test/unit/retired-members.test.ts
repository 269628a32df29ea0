// Members an API 1.0 reload removed at runtime (retired.ts): kept on disk
// until haproxy lets them be deleted, left out of every report meanwhile,
// and forgotten by a (re)load. haproxy's side (maintenance, del server) is
// in test/interop/octavia-client.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LoadBalancerStates } from '../../agent/haproxy/apply/load-balancer-state.js';
import { RetiredMembers } from '../../agent/haproxy/apply/retired.js';
import type { StatRow } from '../../agent/haproxy/process/stats.js';

function scratch() {
  const dir = mkdtempSync(join(tmpdir(), 'aat-retired-'));
  const states = new LoadBalancerStates(dir, { heldConfigDue: () => undefined });
  mkdirSync(states.files('lb').dir);
  writeFileSync(states.files('lb').config, 'accepted');
  return { states, done: () => rmSync(dir, { recursive: true, force: true }) };
}

const row = (pxname: string, svname: string): StatRow => ({
  pxname,
  svname,
  status: 'MAINT',
  weight: '1',
  bin: 0,
  bout: 0,
  scur: 0,
  stot: 0,
  ereq: 0,
  checkStatus: 'L7OK',
});

test('retired members are kept in retired.json and left out of the stats rows', async () => {
  const { states, done } = scratch();
  try {
    const retired = new RetiredMembers(states);
    await retired.add('lb', [{ backend: 'b', server: 'm2' }]);
    assert.ok(existsSync(states.files('lb').retired));
    assert.equal(await retired.waiting(), ['lb']);
    const rows = await retired.hidden('lb', [row('b', 'BACKEND'), row('b', 'm1'), row('b', 'm2'), row('other', 'm2')]);
    assert.equal(
      rows.map((r) => `${r.pxname}/${r.svname}`),
      ['b/BACKEND', 'b/m1', 'other/m2'],
    );
  } finally {
    done();
  }
});

test('an agent restart finds them on disk and goes on deleting them', async () => {
  const { states, done } = scratch();
  try {
    await new RetiredMembers(states).add('lb', [{ backend: 'b', server: 'm2' }]);
    const restarted = new RetiredMembers(new LoadBalancerStates(join(states.files('lb').dir, '..'), { heldConfigDue: () => undefined }));
    assert.equal(await restarted.waiting(), ['lb']);
  } finally {
    done();
  }
});

test('a (re)load forgets them: the file goes and no load balancer waits', async () => {
  const { states, done } = scratch();
  try {
    const retired = new RetiredMembers(states);
    await retired.add('lb', [
      { backend: 'b', server: 'm2' },
      { backend: 'b', server: 'm3' },
    ]);
    await retired.add('lb', [{ backend: 'b', server: 'm2' }]);
    assert.is((await retired.hidden('lb', [row('b', 'm2'), row('b', 'm3')])).length, 0, 'retired twice, one entry');
    await retired.clear('lb');
    assert.not.ok(existsSync(states.files('lb').retired));
    assert.equal(await retired.waiting(), []);
  } finally {
    done();
  }
});

test.run();
