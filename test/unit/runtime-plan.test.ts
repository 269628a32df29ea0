// Which config changes the runtime API can carry, and in which order.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { planRuntime } from '../../agent/haproxy/apply/runtime-plan.js';
import { describeChanges } from '../../agent/loadbalancer/changes.js';
import { validateSpec } from '../../agent/model/spec/validate.js';

const cfg = (servers: string[], extra = '') =>
  [
    'global',
    '    maxconn 100',
    '',
    'frontend f',
    '    bind 127.0.0.1:80',
    '    default_backend b',
    extra,
    'backend b',
    '    balance roundrobin',
    ...servers.map((s) => `    server ${s}`),
    '',
  ].join('\n');

test('member add, weight, admin state and removal are runtime steps, added first, removed last', () => {
  const before = cfg(['m1 10.0.0.1:80 weight 1 check inter 1s', 'm2 10.0.0.2:80 weight 1 check inter 1s', 'm3 10.0.0.3:80 weight 1 disabled']);
  const after = cfg([
    'm1 10.0.0.1:80 weight 5 check inter 1s',
    'm2 10.0.0.2:80 weight 1 check inter 1s disabled',
    'm3 10.0.0.3:80 weight 1',
    'm4 10.0.0.4:80 weight 2 check inter 1s rise 3',
  ]);
  const plan = planRuntime(before, after);
  assert.is(plan.reloadReason, null);
  assert.equal(
    plan.steps.map((s) => `${s.kind} ${s.server}`),
    ['add m4', 'weight m1', 'admin-down m2', 'admin-up m3'],
  );
  const add = plan.steps[0]!;
  assert.equal(add.kind === 'add' && add.args, ['10.0.0.4:80', 'weight', '2', 'check', 'inter', '1s', 'rise', '3']);
  const removed = planRuntime(after, before);
  assert.equal(removed.steps.at(-1), { kind: 'remove', backend: 'b', server: 'm4' });
});

test("Octavia 19's TLS session cache size, sized from free memory at each update, alone reloads nothing", () => {
  // Octavia's rendering: `tune.ssl.cachesize` in global, then the sections, then the members.
  const withCache = (size: string, servers: string[], tail = '') =>
    cfg(servers).replace('    maxconn 100', `    maxconn 100\n    tune.ssl.cachesize ${size}${tail}`);
  const before = withCache('1195040', ['m1 10.0.0.1:80 weight 1 check', 'm2 10.0.0.2:80 weight 1 check']);
  const after = withCache('1187344', ['m2 10.0.0.2:80 weight 1 check', 'm3 10.0.0.3:80 weight 1 check']);
  const plan = planRuntime(before, after);
  assert.is(plan.reloadReason, null);
  assert.equal(
    plan.steps.map((s) => `${s.kind} ${s.server}`),
    ['add m3', 'remove m1'],
  );
  assert.equal(planRuntime(before, withCache('20000', ['m1 10.0.0.1:80 weight 1 check', 'm2 10.0.0.2:80 weight 1 check'])), { steps: [], reloadReason: null });
  // Listed, not guessed: another global setting, another section, or more words than a size reload.
  assert.match(planRuntime(before, before.replace('maxconn 100', 'maxconn 200')).reloadReason!, /more than members/);
  const inFrontend = (size: string) => cfg(['m1 10.0.0.1:80 weight 1 check'], `    tune.ssl.cachesize ${size}`);
  assert.match(planRuntime(inFrontend('1'), inFrontend('2')).reloadReason!, /more than members/);
  const servers = ['m1 10.0.0.1:80 weight 1 check'];
  assert.match(planRuntime(withCache('1', servers, ' 2'), withCache('3', servers, ' 2')).reloadReason!, /more than members/);
});

test('the cache size exemption read as haproxy reads the line: disguises and swaps reload', () => {
  const servers = ['m1 10.0.0.1:80 weight 1 check'];
  const withGlobal = (line: string) => cfg(servers).replace('    maxconn 100', `    maxconn 100\n    ${line}`);
  const before = withGlobal('tune.ssl.cachesize 1000');
  // haproxy unquotes and drops the comment: still the size alone.
  for (const same of ['"tune.ssl.cachesize" 2000', "tune.ssl.cachesize '2000'", 'tune.ssl.cachesize 2000 # free memory']) {
    assert.is(planRuntime(before, withGlobal(same)).reloadReason, null, same);
  }
  // One word (an escaped or quoted space), more words, another keyword in its
  // place, or the line gone with another global setting changed: a reload.
  for (const other of [
    'tune.ssl.cachesize\\ 2000',
    '"tune.ssl.cachesize 2000"',
    'tune.ssl.cachesize 2000 2000',
    'tune.ssl.cachesiz 2000',
    'tune.ssl.lifetime 2000',
    'nbthread 2',
  ]) {
    assert.match(planRuntime(before, withGlobal(other)).reloadReason ?? '', /more than members/, other);
  }
  assert.match(planRuntime(before, cfg(servers).replace('maxconn 100', 'maxconn 200')).reloadReason ?? '', /more than members/);
});

test('anything beyond members needs a reload', () => {
  const base = cfg(['m1 10.0.0.1:80 weight 1 check']);
  assert.match(planRuntime(base, cfg(['m1 10.0.0.1:80 weight 1 check'], '    timeout client 5s')).reloadReason!, /more than members/);
  assert.match(planRuntime(base, cfg(['m1 10.0.0.9:80 weight 1 check'])).reloadReason!, /m1 changed/);
  assert.match(planRuntime(base, cfg(['m1 10.0.0.1:80 weight 1 check backup'])).reloadReason!, /m1 changed/);
  assert.equal(planRuntime(base, base), { steps: [], reloadReason: null });
});

test('init-state the agent added at a reload is no change; on a new member it is kept for `add server`', () => {
  const live = cfg(['m1 10.0.0.1:80 weight 1 check init-state fully-down']);
  const uploaded = cfg(['m1 10.0.0.1:80 weight 1 check', 'm2 10.0.0.2:80 weight 1 check init-state fully-down']);
  const plan = planRuntime(live, uploaded);
  assert.equal(
    plan.steps.map((s) => `${s.kind} ${s.server}`),
    ['add m2'],
  );
  const add = plan.steps[0]!;
  assert.ok(add.kind === 'add' && add.args.includes('init-state'));
  assert.match(planRuntime(live, cfg(['m1 10.0.0.1:80 weight 1 check inter 3s'])).reloadReason!, /m1 changed/);
});

test('default-server check: a member added without its own `check` is added checked (add server ignores default-server)', () => {
  const pool = (servers: string[], defaults = '    default-server check inter 2s fall 3 rise 2') =>
    [
      'global',
      '    maxconn 100',
      '',
      'frontend f',
      '    bind 127.0.0.1:80',
      '    default_backend b',
      '',
      'backend b',
      '    balance roundrobin',
      defaults,
      ...servers.map((s) => `    server ${s}`),
      '',
    ].join('\n');
  const plan = planRuntime(pool(['m1 10.0.0.1:80 weight 1']), pool(['m1 10.0.0.1:80 weight 1', 'm2 10.0.0.2:80 weight 1 rise 3']));
  assert.is(plan.reloadReason, null);
  const add = plan.steps[0]!;
  assert.ok(add.kind === 'add' && add.checked && add.admission.method === 'forced-down', 'held down until its check passes, as a reload would');
  assert.equal(add.kind === 'add' && add.args, ['10.0.0.2:80', 'check', 'inter', '2s', 'fall', '3', 'weight', '1', 'rise', '3']);
  // A default-server keyword the agent cannot spell out on the add line: the member comes in with a reload.
  const other = '    default-server check maxconn 100';
  assert.match(planRuntime(pool(['m1 10.0.0.1:80'], other), pool(['m1 10.0.0.1:80', 'm2 10.0.0.2:80'], other)).reloadReason!, /default-server/);
});

test('only the lines that differ are compared, each in the backend its section line above names', () => {
  const two = (a: string[], b: string[]) =>
    [
      'global',
      '    maxconn 100',
      '',
      'frontend f',
      '    bind 127.0.0.1:80',
      '    default_backend a',
      '',
      'backend a',
      ...a.map((s) => `    server ${s}`),
      '',
      'backend b',
      '    balance roundrobin',
      ...b.map((s) => `    server ${s}`),
      '',
    ].join('\n');
  const before = two(['x 10.0.0.1:80 weight 1', 'y 10.0.0.2:80 weight 1'], ['x 10.0.0.3:80 weight 1', 'y 10.0.0.4:80 weight 1']);
  // The one differing line is backend b's, though "backend b" is in the common start.
  const reweighted = planRuntime(before, two(['x 10.0.0.1:80 weight 1', 'y 10.0.0.2:80 weight 1'], ['x 10.0.0.3:80 weight 1', 'y 10.0.0.4:80 weight 7']));
  assert.equal(reweighted.steps, [{ kind: 'weight', backend: 'b', server: 'y', weight: 7 }]);
  // A line moved from one backend to the other is a member removed there and added here.
  const moved = planRuntime(before, two(['x 10.0.0.1:80 weight 1'], ['z 10.0.0.2:80 weight 1', 'x 10.0.0.3:80 weight 1', 'y 10.0.0.4:80 weight 1']));
  assert.equal(
    moved.steps.map((s) => `${s.kind} ${s.backend}/${s.server}`),
    ['add b/z', 'remove a/y'],
  );
  // Reordered lines are no change; the first and the last line changing are seen.
  assert.equal(planRuntime(before, two(['y 10.0.0.2:80 weight 1', 'x 10.0.0.1:80 weight 1'], ['x 10.0.0.3:80 weight 1', 'y 10.0.0.4:80 weight 1'])), {
    steps: [],
    reloadReason: null,
  });
  assert.match(planRuntime(before, `#\n${before}`).reloadReason!, /more than members/);
  assert.match(planRuntime(before, `${before}backend c\n`).reloadReason!, /more than members/);
  const last = planRuntime(before, before.replace('y 10.0.0.4:80 weight 1', 'y 10.0.0.4:80 weight 1 disabled'));
  assert.equal(last.steps, [{ kind: 'admin-down', backend: 'b', server: 'y' }]);
  const added = planRuntime(
    before,
    before.replace('    server x 10.0.0.1:80 weight 1\n', '    server x 10.0.0.1:80 weight 1\n    server z 10.0.0.9:80 weight 1\n'),
  );
  assert.equal(
    added.steps.map((s) => `${s.kind} ${s.backend}/${s.server}`),
    ['add a/z'],
  );
});

test('changes are described object by object', () => {
  const spec = (weight: number, extra: object[] = []) =>
    validateSpec({
      id: 'lb',
      vip_address: '203.0.113.1',
      listeners: [
        {
          id: 'l',
          protocol: 'HTTP',
          protocol_port: 80,
          default_pool: {
            id: 'p',
            protocol: 'HTTP',
            lb_algorithm: 'ROUND_ROBIN',
            members: [{ id: 'm1', address: '192.0.2.1', protocol_port: 80, weight }, ...extra],
          },
        },
      ],
    });
  assert.equal(describeChanges(null, spec(1)), ['load balancer created']);
  assert.equal(describeChanges(spec(1), spec(5, [{ id: 'm2', address: '192.0.2.2', protocol_port: 80 }])), [
    'member p/m1 changed: weight 1 -> 5',
    'member p/m2 added',
  ]);
  assert.equal(describeChanges(spec(1, [{ id: 'm2', address: '192.0.2.2', protocol_port: 80 }]), spec(1)), ['member p/m2 removed']);
});

test.run();
