// systemctl show's real output (systemd 252, bookworm): service properties
// first, then the unit's, whatever the order of -p.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseUnitState } from '../../agent/haproxy/process/systemd-unit.js';

const UNIT = 'haproxy-lb1.service';

test('a unit past its start limit is failed (Result=start-limit-hit)', () => {
  const s = parseUnitState(UNIT, 'Result=start-limit-hit\nNRestarts=5\nLoadState=loaded\nActiveState=failed\nSubState=failed\n');
  assert.equal(s, { name: UNIT, load_state: 'loaded', active_state: 'failed', sub_state: 'failed', result: 'start-limit-hit', restarts: 5, failed: true });
});

test('a unit between two automatic restarts is not failed', () => {
  const s = parseUnitState(UNIT, 'Result=signal\nNRestarts=2\nLoadState=loaded\nActiveState=activating\nSubState=auto-restart\n');
  assert.equal([s.failed, s.active_state, s.sub_state, s.restarts], [false, 'activating', 'auto-restart', 2]);
});

test('a running unit; an unknown unit; no answer', () => {
  const running = parseUnitState(UNIT, 'Result=success\nNRestarts=0\nLoadState=loaded\nActiveState=active\nSubState=running\n');
  assert.equal([running.failed, running.active_state], [false, 'active']);
  const unknown = parseUnitState(UNIT, 'Result=success\nNRestarts=0\nLoadState=not-found\nActiveState=inactive\nSubState=dead\n');
  assert.equal([unknown.failed, unknown.load_state], [false, 'not-found']);
  const none = parseUnitState(UNIT, '');
  assert.equal([none.failed, none.active_state, none.restarts], [false, 'unknown', 0]);
});

test.run();
