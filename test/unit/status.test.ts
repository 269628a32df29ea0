// API 2.0 status: haproxy's view mapped to Octavia's operating statuses, the
// way the health manager maps heartbeat values.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadBalancerStatus, supervisionStatus } from '../../agent/loadbalancer/status.js';
import { parseShowStat } from '../../agent/haproxy/process/stats.js';
import { withAdmissionReported } from '../../agent/model/admission.js';
import type { RestartState } from '../../agent/haproxy/process/restart-backoff.js';
import { validateSpec } from '../../agent/model/spec/validate.js';

const spec = validateSpec({
  id: 'lb',
  vip_address: '203.0.113.1',
  listeners: [
    { id: 'l', protocol: 'HTTP', protocol_port: 80, default_pool: { id: 'p', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [] } },
    { id: 'u', protocol: 'UDP', protocol_port: 53 },
  ],
});

const csv = [
  '# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight',
  'l,FRONTEND,,,0,0,100,0,0,0,0,0,0,,,,,OPEN,',
  'p:l,a,0,0,0,0,,0,0,0,,0,,0,0,0,0,UP,1',
  'p:l,b,0,0,0,0,,0,0,0,,0,,0,0,0,0,DOWN 1/2,1',
  'p:l,c,0,0,0,0,,0,0,0,,0,,0,0,0,0,MAINT,1',
  'p:l,d,0,0,0,0,,0,0,0,,0,,0,0,0,0,UP,0',
  'p:l,e,0,0,0,0,,0,0,0,,0,,0,0,0,0,no check,1',
  'p:l,BACKEND,0,0,0,0,100,0,0,0,0,0,,0,0,0,0,UP,4',
].join('\n');

test('members, pools and listeners map as the health manager maps heartbeats', () => {
  const s = loadBalancerStatus(spec, parseShowStat(csv), { u: 'ERROR' });
  assert.equal(s.listeners, [
    { id: 'l', haproxy_status: 'OPEN', operating_status: 'ONLINE' },
    { id: 'u', haproxy_status: 'keepalived ERROR', operating_status: 'ERROR' },
  ]);
  assert.is(s.pools[0]!.operating_status, 'ONLINE');
  assert.equal(Object.fromEntries(s.pools[0]!.members.map((m) => [m.id, m.operating_status])), {
    a: 'ONLINE',
    b: 'ERROR',
    c: 'OFFLINE',
    d: 'DRAINING',
    e: 'NO_MONITOR',
  });
});

test('a pool whose members are all being admitted is OFFLINE with its members, not ERROR', () => {
  const rows = withAdmissionReported(
    parseShowStat(['# pxname,svname,status,weight,check_status', 'p:l,a,DOWN,1,INI', 'p:l,b,DOWN 1/3,1,L7OK', 'p:l,BACKEND,DOWN,2,'].join('\n')),
    [],
  );
  const pool = loadBalancerStatus(spec, rows, {}).pools[0]!;
  assert.equal([pool.operating_status, ...pool.members.map((m) => m.operating_status)], ['OFFLINE', 'OFFLINE', 'OFFLINE']);
});

test('a listener haproxy does not report is OFFLINE', () => {
  const s = loadBalancerStatus(spec, [], {});
  assert.equal(s.listeners[0], { id: 'l', haproxy_status: 'absent', operating_status: 'OFFLINE' });
  assert.equal(s.pools, []);
});

test("haproxy's supervision: running, stopped on purpose, dead or waiting, as the status JSON words it", () => {
  const direct = (
    running: boolean,
    stoppedOnPurpose: boolean,
    restarts: RestartState = { state: 'running', restartsInARow: 0, nextRestartInS: 0, lastError: null },
  ) => {
    const s = supervisionStatus({ processManager: 'direct', running, stoppedBySignal: false, stoppedOnPurpose, restarts });
    return s.process_manager === 'direct' ? s.restart : null;
  };
  assert.equal(direct(true, false), { state: 'running', restarts_in_a_row: 0, next_restart_in_s: 0, last_error: null });
  assert.is(direct(false, true)?.state, 'stopped');
  assert.is(direct(false, false)?.state, 'dead');
  assert.equal(direct(false, false, { state: 'waiting', restartsInARow: 2, nextRestartInS: 7, lastError: 'cannot bind' }), {
    state: 'waiting',
    restarts_in_a_row: 2,
    next_restart_in_s: 7,
    last_error: 'cannot bind',
  });
  const unit = {
    name: 'haproxy-lb.service',
    load_state: 'loaded',
    active_state: 'failed',
    sub_state: 'failed',
    result: 'start-limit-hit',
    restarts: 5,
    failed: true,
  };
  assert.equal(supervisionStatus({ processManager: 'systemd', running: false, stoppedBySignal: true, unit }), {
    process_manager: 'systemd',
    running: false,
    stopped_by_signal: true,
    unit,
  });
});

test.run();
