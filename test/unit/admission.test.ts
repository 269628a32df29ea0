// The admission rule as a whole table: every combination of the member's
// facts, the path and the start-up capability, and what it gives.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { admit, initStateAtStartupByVersion, isReady, type AdmissionInput } from '../../agent/model/admission.js';

const load = (checked: boolean, initStateOnLine: boolean, initStateAtStartup: boolean): AdmissionInput => ({
  checked,
  initStateOnLine,
  path: 'load',
  initStateAtStartup,
});
const runtime = (checked: boolean, initStateOnLine: boolean, returns = false): AdmissionInput => ({ checked, initStateOnLine, path: 'runtime', returns });

test('the whole decision table', () => {
  const table: [AdmissionInput, string][] = [
    [load(false, false, false), 'none at-once'],
    [load(false, false, true), 'none at-once'],
    [load(false, true, false), 'none at-once'],
    [load(false, true, true), 'none at-once'],
    [load(true, false, false), 'state-file haproxy'],
    [load(true, false, true), 'init-state haproxy'],
    // The line's init-state is not applied at start-up by this binary (3.2 without the backport): seed the state file too.
    [load(true, true, false), 'state-file haproxy'],
    [load(true, true, true), 'init-state haproxy'],
    [runtime(false, false), 'none at-once'],
    [runtime(false, true), 'none at-once'],
    [runtime(true, false), 'forced-down haproxy'],
    [runtime(true, true), 'init-state haproxy'],
    [runtime(false, false, true), 'none at-once'],
    [runtime(true, false, true), 'maintenance agent'],
    [runtime(true, true, true), 'init-state haproxy'],
  ];
  for (const [input, expected] of table) {
    const { method, ready } = admit(input);
    assert.is(`${method} ${ready}`, expected, JSON.stringify(input));
  }
});

test('a member held in maintenance is ready once its last check passed and its health reached rise', () => {
  assert.ok(isReady({ checkResult: 3, checkHealth: 2 }, 2));
  assert.not.ok(isReady({ checkResult: 3, checkHealth: 1 }, 2), 'passed, not yet rise times');
  assert.not.ok(isReady({ checkResult: 2, checkHealth: 4 }, 2), 'the last check failed');
});

test('without a binary, init-state at start-up is assumed from 3.4 on only', () => {
  assert.equal(
    [
      [2, 6],
      [3, 2],
      [3, 3],
      [3, 4],
      [4, 0],
    ].map(([a, b]) => initStateAtStartupByVersion(a!, b!)),
    [false, false, false, true, true],
  );
});

test.run();
