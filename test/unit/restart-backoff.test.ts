import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LoadBalancerStates } from '../../agent/haproxy/apply/load-balancer-state.js';
import { DEFAULT_RESTART_POLICY, RestartBackoff } from '../../agent/haproxy/process/restart-backoff.js';

const S = 1000;

test('delays: none for the first restart, then 5, 10, 20, 40 s, capped at 60 s', () => {
  const b = new RestartBackoff();
  assert.equal(
    [0, 1, 2, 3, 4, 5, 6, 20].map((n) => b.delayAfter(n) / S),
    [0, 5, 10, 20, 40, 60, 60, 60],
  );
});

test('a haproxy that keeps dying right after each restart waits longer each time; the wait is decided once', () => {
  const b = new RestartBackoff();
  let now = 0;
  const first = b.dead(now);
  assert.equal([first.restart, first.newlyDead, first.restartsInARow], [true, true, 0]);
  b.started(now);
  now += 1 * S; // dies a second later
  const second = b.dead(now);
  assert.equal([second.restart, second.newlyDead, second.nextAttemptAt], [false, true, now + 5 * S]);
  // The next ticks are no new decision.
  const tick = b.dead(now + 2 * S);
  assert.equal([tick.restart, tick.newlyDead], [false, false]);
  assert.equal(b.state(now + 2 * S), { state: 'waiting', restartsInARow: 1, nextRestartInS: 3, lastError: null });
  now += 5 * S;
  assert.ok(b.dead(now).restart);
  b.started(now);
  now += S;
  assert.is(b.dead(now).nextAttemptAt, now + 10 * S);
});

test('a failed restart waits like a death; its error is kept', () => {
  const b = new RestartBackoff();
  assert.ok(b.dead(0).restart);
  assert.is(b.failed(0, 'cannot bind'), 5 * S);
  assert.not.ok(b.dead(4 * S).restart);
  assert.equal(b.state(4 * S), { state: 'waiting', restartsInARow: 1, nextRestartInS: 1, lastError: 'cannot bind' });
  assert.ok(b.dead(5 * S).restart);
  assert.is(b.failed(5 * S, 'cannot bind'), 15 * S);
});

test('after a stable run, or a start by someone else, the next death restarts at once', () => {
  const b = new RestartBackoff();
  b.dead(0);
  b.started(0);
  b.dead(S);
  assert.ok(b.dead(6 * S).restart);
  b.started(6 * S);
  assert.not.ok(b.fine(7 * S), 'up for 1 s only');
  const stable = 6 * S + DEFAULT_RESTART_POLICY.stableAfterMs;
  assert.ok(b.fine(stable));
  assert.equal(b.state(stable), { state: 'running', restartsInARow: 0, nextRestartInS: 0, lastError: null });
  assert.ok(b.dead(stable + S).restart);
  // Waiting, then an API start brings it up: forgotten.
  b.started(stable + S);
  b.dead(stable + 2 * S);
  assert.ok(b.fine(stable + 3 * S));
  assert.ok(b.dead(stable + 4 * S).restart);
});

test('load balancers are counted apart', () => {
  const states = new LoadBalancerStates('/nonexistent', { heldConfigDue: () => {} });
  const b = (lbId: string) => states.get(lbId).restarts;
  b('a').dead(0);
  b('a').started(0);
  assert.not.ok(b('a').dead(S).restart);
  assert.ok(b('b').dead(S).restart);
});

test.run();
