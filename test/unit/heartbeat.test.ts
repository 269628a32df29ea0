import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import { decodeHeartbeat, encodeHeartbeat, encodeToFit } from '../../agent/health/envelope.js';
import { addLvsListener, buildHeartbeat } from '../../agent/health/message.js';
import { parseShowStat } from '../../agent/haproxy/process/stats.js';
import { AWAITING_CHECK, withAdmissionReported } from '../../agent/model/admission.js';
import { parseDestination, MAX_DATAGRAM } from '../../agent/health/sender.js';

const CSV = [
  '# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight',
  'l1,FRONTEND,,,3,5,5000,100,1000,2000,0,0,2,,,,,OPEN,',
  'p1:l1,m1,0,0,1,2,,50,500,1000,,0,,0,0,0,0,UP,1',
  'p1:l1,m2,0,0,0,0,,0,0,0,,0,,0,0,0,0,UP,0',
  'p1:l1,m3,0,0,0,0,,0,0,0,,0,,0,0,0,0,DOWN 1/2,1',
  'p1:l1,BACKEND,0,0,1,2,,50,500,1000,0,0,,0,0,0,0,UP,2',
  'prometheus-exporter,FRONTEND,,,0,0,10,0,0,0,0,0,0,,,,,OPEN,',
].join('\n');

test('message v3: listener deltas (conns absolute), pool status, members with weight 0 as DRAIN, no prometheus', () => {
  const rows = parseShowStat(CSV);
  const first = buildHeartbeat('amp', 0, rows, {});
  assert.equal(first.message.listeners, { l1: { status: 'OPEN', stats: { tx: 2000, rx: 1000, conns: 3, totconns: 100, ereq: 2 } } });
  assert.equal(first.message.pools, { 'p1:l1': { status: 'UP', members: { m1: 'UP', m2: 'DRAIN', m3: 'DOWN 1/2' } } });
  const later = buildHeartbeat('amp', 1, parseShowStat(CSV.replace('100,1000,2000', '130,1500,2600')), first.counters);
  assert.equal(later.message.listeners.l1!.stats, { tx: 600, rx: 500, conns: 3, totconns: 30, ereq: 0 });
  // haproxy restarted: counters went down, the delta counts from zero.
  const restarted = buildHeartbeat('amp', 2, parseShowStat(CSV.replace('100,1000,2000', '4,40,80')), later.counters);
  assert.is(restarted.message.listeners.l1!.stats.totconns, 4);
});

// Rows as `show stat` prints them, with the check_status column.
const admitting = (members: [string, string, string][], backend: string) =>
  parseShowStat(
    [
      '# pxname,svname,status,weight,check_status',
      ...members.map(([name, status, check]) => `p1:l1,${name},${status},1,${check}`),
      `p1:l1,BACKEND,${backend},1,`,
    ].join('\n'),
  );

test('members being admitted: RESTARTING (Octavia keeps their status) until a check fails, then DOWN', () => {
  const rows = withAdmissionReported(
    admitting(
      [
        ['up', 'UP', 'L7OK'],
        ['first', 'DOWN', 'INI'],
        ['rising', 'DOWN 1/3', 'L7OK'],
        ['running', 'DOWN', '* L4OK'],
        ['failed', 'DOWN', 'L7STS'],
        ['held', 'MAINT', 'INI'],
        ['held-failed', 'MAINT', 'L4CON'],
        ['carried', 'DOWN 1/2', 'L7OK'],
        ['disabled', 'MAINT', 'INI'],
      ],
      'UP',
    ),
    [
      { backend: 'p1:l1', server: 'held' },
      { backend: 'p1:l1', server: 'held-failed' },
      { backend: 'p1:l1', server: 'carried' },
    ],
  );
  const { message } = buildHeartbeat('amp', 0, rows, {});
  assert.equal(message.pools['p1:l1'], {
    status: 'UP',
    members: {
      up: 'UP',
      first: AWAITING_CHECK,
      rising: AWAITING_CHECK,
      running: AWAITING_CHECK,
      failed: 'DOWN',
      held: AWAITING_CHECK,
      'held-failed': 'DOWN',
      carried: AWAITING_CHECK,
      disabled: 'MAINT',
    },
  });
});

test('a pool down only because its members are being admitted is left out of the heartbeat; one with a failed member is not', () => {
  const only = withAdmissionReported(
    admitting(
      [
        ['a', 'DOWN', 'INI'],
        ['b', 'DOWN 1/2', 'L7OK'],
        ['off', 'MAINT', 'INI'],
      ],
      'DOWN',
    ),
    [],
  );
  assert.equal(buildHeartbeat('amp', 0, only, {}).message.pools, {});
  const failed = withAdmissionReported(
    admitting(
      [
        ['a', 'DOWN', 'INI'],
        ['b', 'DOWN', 'L4TOUT'],
      ],
      'DOWN',
    ),
    [],
  );
  assert.equal(buildHeartbeat('amp', 0, failed, {}).message.pools, { 'p1:l1': { status: 'DOWN', members: { a: AWAITING_CHECK, b: 'DOWN' } } });
  const disabled = withAdmissionReported(admitting([['off', 'MAINT', 'INI']], 'DOWN'), []);
  assert.equal(buildHeartbeat('amp', 0, disabled, {}).message.pools, { 'p1:l1': { status: 'DOWN', members: { off: 'MAINT' } } });
});

test('LVS listeners: OPEN with zero stats, unless their config marks them disabled', () => {
  const { message } = buildHeartbeat('amp', 0, [], {});
  addLvsListener(message, 'u1', '# Configuration for Listener u1\nvirtual_server group ipv4-group {\n}\n');
  addLvsListener(message, 'u2', '# Listener u2 is disabled\n');
  assert.equal(message.listeners, { u1: { status: 'OPEN', stats: { tx: 0, rx: 0, conns: 0, totconns: 0, ereq: 0 } } });
});

test('envelope: zlib level 9 + 64 hex chars of HMAC-SHA256; a wrong key fails', async () => {
  const d = await encodeHeartbeat({ a: 1 }, 'k');
  assert.is(d.subarray(0, 2).toString('hex'), '78da');
  assert.match(d.subarray(d.length - 64).toString('ascii'), /^[0-9a-f]{64}$/);
  assert.equal(decodeHeartbeat(d, 'k'), { a: 1 });
  assert.throws(() => decodeHeartbeat(d, 'other'), /HMAC/);
});

test('5,000 members with UUID ids do not fit one datagram: the largest pools lose their member statuses, listeners stay', async () => {
  const members: Record<string, string> = {};
  for (let i = 0; i < 5000; i++) members[randomUUID()] = 'UP';
  const msg = {
    id: 'amp',
    seq: 0,
    ver: 3,
    listeners: { l1: { status: 'OPEN' } },
    pools: { 'big:l1': { status: 'UP', members }, 'small:l1': { status: 'UP', members: { m: 'UP' } } },
  };
  assert.ok((await encodeHeartbeat(msg, 'k')).length > MAX_DATAGRAM);
  const fitted = await encodeToFit(msg, 'k', MAX_DATAGRAM);
  assert.ok(fitted.datagram.length <= MAX_DATAGRAM);
  assert.equal(fitted.trimmedPools, ['big:l1']);
  const decoded = decodeHeartbeat(fitted.datagram, 'k') as typeof msg;
  assert.equal(decoded.listeners, msg.listeners);
  assert.equal(decoded.pools['small:l1']!.members, { m: 'UP' });
  assert.is(decoded.pools['big:l1']!.status, 'UP');
  // 2,500 UUID members still fit whole.
  const some = Object.fromEntries(Object.entries(members).slice(0, 2500));
  assert.equal((await encodeToFit({ ...msg, pools: { 'big:l1': { status: 'UP', members: some } } }, 'k', MAX_DATAGRAM)).trimmedPools, []);
});

test('destinations: split at the last colon, IPv6 unbracketed, bad entries ignored', () => {
  assert.equal(parseDestination('192.0.2.1:5555'), { host: '192.0.2.1', port: 5555 });
  assert.equal(parseDestination('[2001:db8::1]:5555'), { host: '2001:db8::1', port: 5555 });
  assert.is(parseDestination('nonsense'), null);
  assert.is(parseDestination('host:99999'), null);
});

test.run();
