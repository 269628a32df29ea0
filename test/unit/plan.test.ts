// The plan of an apply (plan.ts): one value, decided once, the same for a dry
// run and the real apply. The whole classification table.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { planApply, stepName, type PlanFacts } from '../../agent/haproxy/apply/plan.js';

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

const live = cfg(['m1 10.0.0.1:80 weight 1 check', 'm2 10.0.0.2:80 weight 1 check']);
const added = cfg(['m1 10.0.0.1:80 weight 1 check', 'm2 10.0.0.2:80 weight 1 check', 'm3 10.0.0.3:80 weight 1 check']);
const removed = cfg(['m1 10.0.0.1:80 weight 1 check']);
const reweighted = cfg(['m1 10.0.0.1:80 weight 7 check', 'm2 10.0.0.2:80 weight 1 check']);
const retimed = cfg(['m1 10.0.0.1:80 weight 1 check', 'm2 10.0.0.2:80 weight 1 check'], '    timeout client 5s');

const facts = (f: Partial<PlanFacts>): PlanFacts => ({
  verb: 'apply',
  forcedReload: null,
  live,
  runnable: live,
  accepted: false,
  running: null,
  ...f,
});
const kindAndWhy = (f: Partial<PlanFacts>) => {
  const p = planApply(facts(f));
  return p.kind === 'reload' ? `reload: ${p.reason}` : p.kind === 'runtime' ? `runtime: ${p.steps.map(stepName).join(', ')}` : p.kind;
};

test('API 2.0 PUT: unchanged, runtime or reload', () => {
  assert.is(kindAndWhy({ accepted: true, running: true }), 'unchanged');
  assert.is(kindAndWhy({ accepted: true, running: false }), 'reload: haproxy is not running');
  assert.is(kindAndWhy({ runnable: added }), 'runtime: add b/m3');
  assert.is(kindAndWhy({ runnable: removed }), 'runtime: remove b/m2', 'a PUT drains and removes at runtime');
  assert.is(kindAndWhy({ runnable: reweighted }), 'runtime: weight b/m1');
  assert.is(kindAndWhy({ runnable: retimed }), 'reload: more than members changed');
  assert.is(kindAndWhy({ live: null, runnable: added }), 'reload: haproxy has not loaded this load balancer');
  assert.is(kindAndWhy({ runnable: added, forcedReload: 'certificates changed' }), 'reload: certificates changed');
  assert.is(kindAndWhy({ accepted: true, running: true, forcedReload: 'certificates changed' }), 'reload: certificates changed');
});

test('a PUT whose config text differs only outside what haproxy compares is a runtime plan with no steps', () => {
  assert.is(kindAndWhy({ runnable: `${live}\n\n` }), 'runtime: ');
});

test('API 1.0 reload: always does something; no change reloads, as in Octavia; removed members are retired, not reloaded away', () => {
  const reload = (f: Partial<PlanFacts>) => kindAndWhy({ verb: 'runAccepted', accepted: true, ...f });
  assert.is(reload({ runnable: added }), 'runtime: add b/m3');
  assert.is(reload({ runnable: reweighted }), 'runtime: weight b/m1');
  assert.is(reload({ runnable: live }), 'reload: nothing changed that the runtime API could apply');
  assert.is(reload({ runnable: removed }), 'runtime: retire b/m2', 'a reload would restart every member being admitted from zero passed checks');
  assert.is(reload({ runnable: retimed }), 'reload: more than members changed');
  assert.is(reload({ runnable: added, forcedReload: 'runtime member changes are off' }), 'reload: runtime member changes are off');
  assert.is(reload({ live: null }), 'reload: haproxy has not loaded this load balancer');
});

test.run();
