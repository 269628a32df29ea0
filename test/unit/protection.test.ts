import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readConfig } from '../../agent/haproxy/config/config-reader.js';
import { planProtection } from '../../agent/haproxy/config/protection.js';
import { parseServerState, splitServerAddress, stoppedServerLine } from '../../agent/haproxy/config/server-state.js';

const CONFIG = [
  'global',
  '    server-state-file /b/lb/servers-state',
  'backend pool',
  '    load-server-state-from-file global',
  '    server old 10.0.0.1:80 check inter 1s # running',
  '    server new 10.0.0.2:80 check inter 1s',
  'backend unchecked',
  '    server u 10.0.0.3:80',
  'backend nostate',
  '    server n 10.0.0.4:80 check',
  '',
].join('\n');

const DUMP = [
  '1',
  '# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port',
  '3 pool 1 old 10.0.0.1 2 0 1 1 76 15 3 4 6 0 0 0 - 80 - 0 0 - - 0',
  '3 pool 9 gone 10.0.0.9 2 0 1 1 76 15 3 4 6 0 0 0 - 80 - 0 0 - - 0',
  '',
].join('\n');

/** haproxy running with `state`; its config not known unless given. */
const runningOn = (state: string, config: string | null = null, readmit: string[] = []) => ({ state, config, readmit: new Set(readmit) });

test('init-state: only new checked members get init-state fully-down, before the comment', () => {
  const plan = planProtection({ configText: CONFIG, config: readConfig(CONFIG), running: runningOn(DUMP), initStateAtStartup: true });
  assert.equal(
    plan.newMembers.map((m) => `${m.backend}/${m.name}`),
    ['pool/new', 'nostate/n'],
  );
  const lines = plan.effectiveConfig.split('\n');
  assert.is(lines[4], '    server old 10.0.0.1:80 check inter 1s # running');
  assert.is(lines[5], '    server new 10.0.0.2:80 check inter 1s init-state fully-down');
  assert.is(lines[7], '    server u 10.0.0.3:80', 'a member without checks is never held down');
  assert.ok(plan.stateFile.includes('3 pool 1 old 10.0.0.1 2'), 'running members keep their state');
});

test('state-file: new members are seeded stopped; backends without state loading get a warning', () => {
  const plan = planProtection({ configText: CONFIG, config: readConfig(CONFIG), running: runningOn(DUMP), initStateAtStartup: false });
  assert.is(plan.effectiveConfig, CONFIG);
  const state = parseServerState(plan.stateFile);
  const byName = new Map(state.entries.map((e) => [`${e.backend}/${e.server}`, e]));
  assert.is(byName.get('pool/old')!.opState, 2);
  assert.is(byName.get('pool/new')!.opState, 0);
  assert.is(byName.get('pool/new')!.port, '80');
  assert.not.ok(byName.has('nostate/n'));
  assert.is(plan.warnings.length, 1);
  assert.match(plan.warnings[0]!, /nostate\/n/);
});

test('a new line already carrying init-state is seeded stopped when the binary does not apply it at start-up', () => {
  const carried = CONFIG.replace('server new 10.0.0.2:80 check inter 1s', 'server new 10.0.0.2:80 check inter 1s init-state fully-down');
  const withoutFix = planProtection({ configText: carried, config: readConfig(carried), running: runningOn(DUMP), initStateAtStartup: false });
  assert.is(withoutFix.method, 'state-file');
  assert.is(withoutFix.effectiveConfig, carried, 'the line is loaded as written');
  const seeded = new Map(parseServerState(withoutFix.stateFile).entries.map((e) => [`${e.backend}/${e.server}`, e]));
  assert.is(seeded.get('pool/new')?.opState, 0, 'seeded stopped: the keyword alone does not hold it down at start-up');
  const withFix = planProtection({ configText: carried, config: readConfig(carried), running: runningOn(DUMP), initStateAtStartup: true });
  assert.is(withFix.effectiveConfig.split('\n')[5], '    server new 10.0.0.2:80 check inter 1s init-state fully-down', 'init-state is not written twice');
  assert.not.ok(withFix.stateFile.includes(' new 10.0.0.2 '), 'the line holds itself down: no seed');
});

test('a member whose address changed is new, and its old UP line is dropped', () => {
  const moved = CONFIG.replace('server old 10.0.0.1:80', 'server old 10.0.0.7:80');
  const plan = planProtection({ configText: moved, config: readConfig(moved), running: runningOn(DUMP), initStateAtStartup: true });
  assert.ok(plan.newMembers.some((m) => m.name === 'old'));
  assert.not.ok(plan.stateFile.includes(' old 10.0.0.1 '));
});

test('fresh start: every checked member is new; protection off changes nothing', () => {
  const fresh = planProtection({ configText: CONFIG, config: readConfig(CONFIG), running: null, initStateAtStartup: false });
  assert.equal(
    fresh.newMembers.map((m) => m.name),
    ['old', 'new', 'n'],
  );
  const off = planProtection({ configText: CONFIG, config: readConfig(CONFIG), running: runningOn(DUMP), initStateAtStartup: false, protect: false });
  assert.equal(off.newMembers, []);
  assert.is(off.effectiveConfig, CONFIG);
});

// The config haproxy runs in the same-members cases: every member runs.
const RUNNING_ALL = DUMP.replace('3 pool 9 gone 10.0.0.9', '3 pool 2 new 10.0.0.2')
  .replace('\n\n', '\n')
  .replace(/\n$/, '\n4 unchecked 1 u 10.0.0.3 2 0 1 1 9 1 0 0 0 0 0 0 - 80 - 0 0 - - 0\n5 nostate 1 n 10.0.0.4 2 0 1 1 9 15 3 4 6 0 0 0 - 80 - 0 0 - - 0\n');

test('same members (a change away from every server line): the dump is the state file, nothing is held down', () => {
  // Lines changed above and below an unchanged backend line (a listener's connection limit: maxconn and fullconn).
  const next = CONFIG.replace('global', 'global\n    maxconn 5000').replace(
    '    load-server-state-from-file global',
    '    fullconn 5000\n    load-server-state-from-file global',
  );
  for (const initStateAtStartup of [true, false]) {
    const plan = planProtection({ configText: next, config: readConfig(next), running: runningOn(`${RUNNING_ALL}\n`, CONFIG), initStateAtStartup });
    assert.equal(plan.newMembers, []);
    assert.is(plan.effectiveConfig, next);
    assert.is(plan.stateFile, RUNNING_ALL);
  }
});

test('same members is not taken on trust: a changed server line, section line, readmitted member or missing dump line reads the dump', () => {
  const plan = (next: string, running: ReturnType<typeof runningOn>) =>
    planProtection({ configText: next, config: readConfig(next), running, initStateAtStartup: false });
  // Each case passes every other check: only the one named tells that a member is new.
  const weighted = CONFIG.replace('server new 10.0.0.2:80 check inter 1s', 'server new 10.0.0.2:80 check inter 1s weight 5');
  const swapped = RUNNING_ALL.replace('3 pool 2 new 10.0.0.2', '3 pool 2 other 10.0.0.8');
  assert.equal(
    plan(weighted, runningOn(swapped, CONFIG)).newMembers.map((m) => m.name),
    ['new'],
    'a changed server line',
  );
  const lacking = RUNNING_ALL.replace(/^3 pool 2 new .*\n/m, '');
  const renamed = CONFIG.replace('backend nostate', 'backend other');
  assert.equal(
    plan(renamed, runningOn(RUNNING_ALL, CONFIG)).newMembers.map((m) => m.name),
    ['n'],
    'a renamed backend: its members are new',
  );
  assert.equal(
    plan(CONFIG, runningOn(RUNNING_ALL, CONFIG, ['pool/new'])).newMembers.map((m) => m.name),
    ['new'],
    'a readmitted member',
  );
  assert.equal(
    plan(CONFIG, runningOn(lacking, CONFIG)).newMembers.map((m) => m.name),
    ['new'],
    'haproxy lacks a member the live config has',
  );
  assert.equal(plan(CONFIG, runningOn(RUNNING_ALL, null)).newMembers, [], 'no live config: read from the dump');
});

test('server addresses split into host and port for all haproxy forms', () => {
  assert.equal(splitServerAddress('10.0.0.1:80'), { host: '10.0.0.1', port: '80' });
  assert.equal(splitServerAddress('2001:db8::5:443'), { host: '2001:db8::5', port: '443' });
  assert.equal(splitServerAddress('[2001:db8::5]:443'), { host: '2001:db8::5', port: '443' });
  assert.equal(splitServerAddress('ipv4@10.0.0.1:80'), { host: '10.0.0.1', port: '80' });
});

test('a seeded line has the 20 mandatory fields and the INI check status', () => {
  const f = stoppedServerLine('b', 's', '10.0.0.1', '80').split(' ');
  assert.is(f.length, 20);
  assert.is(f[5], '0', 'op state STOPPED');
  assert.is(f[10], '1', 'check status INI (0 crashes haproxy 3.2)');
  assert.is(f[12], '0', 'check health 0');
  assert.is(f[18], '80');
});

test('a dump line gives its fields by position; a line of fewer than 20 fields is skipped', () => {
  // haproxy 3.x prints 25 fields; 2.6 and the seeded lines 20; runs of spaces or tabs are read alike.
  const line = '3 be_p 7 m1 10.0.0.1 2 0 5 1 120 15 3 4 6 0 0 0 - 8080 - 0 0 - - 0';
  const dump = parseServerState(`1\n# be_id be_name ...\n${line}\n${line.split(' ').slice(0, 20).join('\t  ')}\n${line.split(' ').slice(0, 19).join(' ')}\n`);
  assert.is(dump.entries.length, 2);
  for (const e of dump.entries) {
    assert.equal(
      [e.backend, e.server, e.address, e.opState, e.adminState, e.checkResult, e.checkHealth, e.port],
      ['be_p', 'm1', '10.0.0.1', 2, 0, 3, 4, '8080'],
    );
  }
  assert.is(dump.entries[0]!.raw, line);
  assert.equal(dump.header, ['1', '# be_id be_name ...']);
});

test.run();
