// What the engine keeps in memory per load balancer (load-balancer-state.ts):
// one object, so forgetting is one call and says exactly what it forgets.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readConfig } from '../../agent/haproxy/config/config-reader.js';
import { EditedConfig } from '../../agent/haproxy/config/edited-config.js';
import { LoadBalancerNotFoundError } from '../../agent/haproxy/errors.js';
import { LoadBalancerStates } from '../../agent/haproxy/apply/load-balancer-state.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** States over a scratch base directory with one load balancer's directory; `due` counts held configs that came due. */
function scratch(lbIds = ['lb']) {
  const dir = mkdtempSync(join(tmpdir(), 'aat-lb-state-'));
  const due: string[] = [];
  const states = new LoadBalancerStates(dir, { heldConfigDue: (lbId) => due.push(lbId), heldConfigDelayMs: 20 });
  for (const lbId of lbIds) mkdirSync(states.files(lbId).dir);
  return { dir, due, states, done: () => rmSync(dir, { recursive: true, force: true }) };
}

test('the accepted config is read from disk once, then as the engine wrote it', async () => {
  const { states, done } = scratch();
  try {
    const state = states.get('lb');
    writeFileSync(state.files.config, 'on disk');
    assert.is(await state.storedConfig(), 'on disk');
    writeFileSync(state.files.config, 'changed behind its back');
    assert.is(await state.storedConfig(), 'on disk', 'not read again');
    state.remember('written');
    assert.is(await state.storedConfig(), 'written');
    state.remember(null);
    assert.is(await state.storedConfig(), null);
    assert.instance(await state.accepted().catch((e: unknown) => e), LoadBalancerNotFoundError);
  } finally {
    done();
  }
});

test('invalidate: after a failed write the accepted config is read again, and nothing else is forgotten', async () => {
  const { states, done } = scratch();
  try {
    const state = states.get('lb');
    writeFileSync(state.files.config, 'on disk');
    state.remember('a write that may not have happened');
    state.loaded('running', ['192.0.2.10']);
    state.asIs = 'running';
    state.invalidate();
    assert.is(await state.storedConfig(), 'on disk');
    assert.ok(state.runs('running'));
    assert.equal(await state.bindAddresses(), ['192.0.2.10']);
    assert.is(state.asIs, 'running');
  } finally {
    done();
  }
});

test('stopped: what haproxy ran and its restart troubles are forgotten, the accepted config is kept', async () => {
  const { states, done } = scratch();
  try {
    const state = states.get('lb');
    state.remember('accepted');
    state.loaded('accepted', ['192.0.2.10']);
    state.restarts.dead(0);
    state.restarts.failed(0, 'cannot bind');
    state.stopped();
    assert.not.ok(state.runs('accepted'));
    assert.equal(state.restarts.state(0), { state: 'running', restartsInARow: 0, nextRestartInS: 0, lastError: null });
    assert.is(await state.storedConfig(), 'accepted');
    assert.equal(await state.bindAddresses(), ['192.0.2.10'], 'a start binds the same addresses');
  } finally {
    done();
  }
});

test('delete: a new state knows nothing, a held config is never written, other load balancers keep theirs', async () => {
  const { states, due, done } = scratch(['lb', 'other']);
  try {
    const state = states.get('lb');
    writeFileSync(state.files.config, 'on disk');
    state.remember('accepted');
    state.loaded('accepted', ['192.0.2.10']);
    state.asIs = 'accepted';
    state.pending = true;
    state.restarts.dead(0);
    state.restarts.failed(0, 'cannot bind');
    state.validated('accepted', { runnable: 'accepted', config: readConfig('') });
    state.deferred.hold(EditedConfig.of('held'), [state.files.config], state.files.configBehind);
    states.get('other').ran('other config');
    assert.equal(
      states.where((s) => s.deferred.config !== null),
      ['lb'],
    );

    states.delete('lb');
    const fresh = states.get('lb');
    assert.is.not(fresh, state);
    assert.is(await fresh.acceptedConfig(), 'on disk', 'read from disk: no held config, no remembered text');
    assert.not.ok(fresh.runs('accepted'));
    assert.equal(await fresh.bindAddresses(), [], 'read from the accepted config');
    assert.is(fresh.asIs, null);
    assert.not.ok(fresh.pending);
    assert.is(fresh.takeReading(), null);
    assert.is(fresh.restarts.state(0).restartsInARow, 0);
    assert.equal(
      states.where((s) => s.deferred.config !== null),
      [],
    );
    await sleep(60);
    assert.equal(due, [], "the held config's timer was stopped");
    assert.ok(states.get('other').runs('other config'));
  } finally {
    done();
  }
});

test('a held config comes due once; written, it is the accepted, running and as-is config, and the marker goes', async () => {
  const { states, due, done } = scratch();
  try {
    const state = states.get('lb');
    writeFileSync(state.files.config, 'old');
    writeFileSync(state.files.configBehind, '');
    const held = EditedConfig.of('global\n    maxconn 10\n\nbackend b\n    server m1 10.0.0.1:80\n').withServerLine('b', 'm2', '    server m2 10.0.0.2:80');
    state.deferred.hold(held, [state.files.config, state.files.live], state.files.configBehind);
    state.deferred.hold(held, [state.files.config, state.files.live], state.files.configBehind);
    assert.is(await state.acceptedConfig(), held.text, 'the held config is the accepted one');
    assert.is(await state.memberBase(), held, 'a member call edits what is held');
    await sleep(60);
    assert.equal(due, ['lb'], 'one timer for both');
    await state.writeHeld();
    assert.is(readFileSync(state.files.config, 'utf8'), held.text);
    assert.is(readFileSync(state.files.live, 'utf8'), held.text);
    assert.not.ok(existsSync(state.files.configBehind));
    assert.is(await state.storedConfig(), held.text);
    assert.ok(state.runs(held.text));
    assert.is(state.asIs, held.text);
    assert.is(state.deferred.config, null);
  } finally {
    done();
  }
});

test('a reading is for the load right after the check: taken once', () => {
  const { states, done } = scratch();
  try {
    const state = states.get('lb');
    const reading = { runnable: 'text', config: readConfig('') };
    state.validated('text', reading);
    assert.is(state.takeReading(), reading);
    assert.is(state.takeReading(), null);
  } finally {
    done();
  }
});

test.run();
