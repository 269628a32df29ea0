// API 2.0's member calls edit the accepted config in place (member-edit.ts)
// and keep the spec's ETag and journal incrementally (spec-store.ts). Each
// must give what the whole path gives: the config a whole render of the new
// spec has, the ETag of the whole new spec, the spec the journal replays to.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { planMemberLines, stepName } from '../../agent/haproxy/apply/plan.js';
import { EditedConfig } from '../../agent/haproxy/config/edited-config.js';
import { editMember } from '../../agent/loadbalancer/member-edit.js';
import { applyMemberChange, journalLine, readStoredSpec, specEtag, storedSpecText, type StoredSpec } from '../../agent/loadbalancer/spec-store.js';
import { renderLoadBalancer, renderMemberLines } from '../../agent/render/render.js';
import { DEFAULT_RENDER_SETTINGS } from '../../agent/render/settings.js';
import { poolsById, withMember } from '../../agent/model/spec/pools.js';
import { LVS_PROTOCOLS, type LoadBalancerSpec, type MemberSpec } from '../../agent/model/spec/types.js';
import { type SpecError, validateMember, validateSpec } from '../../agent/model/spec/validate.js';

const FIXTURES = fileURLToPath(new URL('../../../test/fixtures/specs/', import.meta.url));
const fixtures = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({ name: f, spec: () => validateSpec(JSON.parse(readFileSync(join(FIXTURES, f), 'utf8'))) }));

for (const initStateAtStartup of [true, false]) {
  const target = { initStateAtStartup };
  const render = (s: LoadBalancerSpec) => renderLoadBalancer(s, DEFAULT_RENDER_SETTINGS, target).haproxyConfig;
  const lines = (s: LoadBalancerSpec, pool: string, m: MemberSpec) => renderMemberLines(s, pool, m, DEFAULT_RENDER_SETTINGS, target);

  test(`every fixture, every haproxy pool: add, change and remove one member by edit = whole render (init-state ${initStateAtStartup})`, () => {
    let edits = 0;
    for (const f of fixtures) {
      const spec = f.spec();
      const base = render(spec);
      if (base === null) continue;
      for (const pool of poolsById(spec).values()) {
        if (LVS_PROTOCOLS.includes(pool.protocol)) continue;
        const added: MemberSpec = {
          id: 'new-1',
          address: '198.51.100.77',
          protocol_port: 8443,
          weight: 3,
          admin_state_up: true,
          backup: false,
          monitor_port: 9000,
        };
        const cases: [string, MemberSpec | null, MemberSpec | undefined][] = [['add', added, undefined]];
        for (const m of pool.members) {
          cases.push(['change', { ...m, weight: m.weight === 7 ? 8 : 7, admin_state_up: !m.admin_state_up }, m], ['remove', null, m]);
        }
        for (const [what, member, was] of cases) {
          const id = (member ?? was)!.id;
          const after = withMember(spec, pool.id, id, member);
          const newLines = member ? lines(after, pool.id, member) : null;
          const backends = [...(newLines ?? lines(spec, pool.id, was!)).keys()];
          const edit = editMember(EditedConfig.of(base), id, backends, newLines);
          assert.ok(edit, `${f.name} ${pool.id}: ${what} ${id}: a backend is missing`);
          assert.fixture(edit.edited.text, render(after)!, `${f.name} ${pool.id}: ${what} ${id}`);
          edits++;
        }
      }
    }
    assert.ok(edits > 50, `only ${edits} edits checked`);
  });

  test(`chained member calls, folded once = whole render of the last spec (init-state ${initStateAtStartup})`, () => {
    let checked = 0;
    for (const f of fixtures) {
      let spec = f.spec();
      const base = render(spec);
      if (base === null) continue;
      for (const pool of poolsById(spec).values()) {
        if (LVS_PROTOCOLS.includes(pool.protocol) || pool.members.length === 0) continue;
        const first = pool.members[0]!;
        const fresh = (n: number): MemberSpec => ({
          id: `new-${n}`,
          address: `198.51.100.${n}`,
          protocol_port: 8443,
          weight: n,
          admin_state_up: true,
          backup: false,
        });
        // Replace in place, append, remove, remove and add again (it goes last), change an appended one.
        const calls: [string, MemberSpec | null][] = [
          [first.id, { ...first, weight: first.weight === 9 ? 10 : 9 }],
          ['new-1', fresh(1)],
          ['new-2', fresh(2)],
          [first.id, null],
          ['new-1', null],
          [first.id, first],
          ['new-2', { ...fresh(2), admin_state_up: false }],
          ['new-1', fresh(1)],
        ];
        let config = EditedConfig.of(base);
        const seen: string[] = [];
        for (const [id, member] of calls) {
          const was = poolsById(spec)
            .get(pool.id)!
            .members.find((m) => m.id === id);
          const after = withMember(spec, pool.id, id, member);
          const newLines = member ? lines(after, pool.id, member) : null;
          const backends = [...(newLines ?? lines(spec, pool.id, was!)).keys()];
          const edit = editMember(config, id, backends, newLines);
          assert.ok(edit, `${f.name} ${pool.id}: ${id}: a backend is missing`);
          for (const l of edit.lines) assert.is(l.before, was ? lines(spec, pool.id, was).get(l.backend)! : null, `${f.name}: line of ${id} before the call`);
          config = edit.edited;
          spec = after;
          seen.push(id);
        }
        assert.fixture(config.text, render(spec)!, `${f.name} ${pool.id}: after ${seen.join(', ')}`);
        checked++;
        spec = f.spec();
      }
    }
    assert.ok(checked > 5, `only ${checked} pools checked`);
  });
}

test('member edits plan like the whole config: add, weight, admin state, remove; a new address reloads', () => {
  const plan = (before: string | null, after: string | null) => {
    const p = planMemberLines([{ backend: 'p:l', before, after }]);
    return p.kind === 'runtime' ? p.steps.map(stepName).join(', ') : p.kind === 'reload' ? `reload: ${p.reason}` : p.kind;
  };
  const line = (extra: string) => `    server m1 192.0.2.1:80 weight 1 check inter 5s fall 3 rise 3${extra}`;
  assert.is(plan(null, line('')), 'add p:l/m1');
  assert.is(plan(line(''), line('')), 'unchanged');
  assert.is(plan(line(''), line('').replace('weight 1', 'weight 4')), 'weight p:l/m1');
  assert.is(plan(line(''), line(' disabled')), 'admin-down p:l/m1');
  assert.is(plan(line(' disabled'), line('')), 'admin-up p:l/m1');
  assert.is(plan(line(''), null), 'remove p:l/m1');
  assert.match(plan(line(''), line('').replace('192.0.2.1', '192.0.2.9')), /^reload: member p:l\/m1 changed/);
});

test('ETag after a member call = ETag of the whole new spec, with or without the digests kept', () => {
  const spec = fixtures.find((f) => f.name === 'shared-pool.json')!.spec();
  specEtag(spec); // the digests of every member are now kept
  const member: MemberSpec = { id: 'm9', address: '192.0.2.99', protocol_port: 8080, weight: 2, admin_state_up: true, backup: false };
  const next = withMember(spec, 'p-shared', 'm9', member);
  const fresh = validateSpec(JSON.parse(JSON.stringify(next)));
  assert.is(specEtag(next), specEtag(fresh));
  assert.is.not(specEtag(next), specEtag(spec));
  assert.is(specEtag(withMember(next, 'p-shared', 'm9', null)), specEtag(spec), 'removing it again gives the old ETag');
});

test('ETag kept up by member calls (replace, append, remove anywhere) = ETag counted afresh', () => {
  const fresh = (s: LoadBalancerSpec) => specEtag(validateSpec(JSON.parse(JSON.stringify(s))));
  let spec = fixtures.find((f) => f.name === 'shared-pool.json')!.spec();
  specEtag(spec);
  const pool = spec.pools.find((p) => p.id === 'p-shared')!;
  const ids = pool.members.map((m) => m.id);
  // Each id its own address: a pool may not have two members on one address and port.
  const member = (id: string, weight: number): MemberSpec => ({
    id,
    address: `192.0.2.${90 + id.length + Number(id.slice(1))}`,
    protocol_port: 8080,
    weight,
    admin_state_up: true,
    backup: false,
  });
  const calls: [string, MemberSpec | null][] = [
    ['m9', member('m9', 2)],
    [ids[0]!, member(ids[0]!, 7)],
    ['m9', member('m9', 3)],
    [ids[0]!, null],
    ['m9', null],
    ['m10', member('m10', 1)],
  ];
  for (const [id, m] of calls) {
    const next = withMember(spec, 'p-shared', id, m);
    assert.is(specEtag(next, spec), fresh(next), `after ${id} ${m ? 'put' : 'removed'}`);
    spec = next;
  }
  const reversed = { ...spec, pools: spec.pools.map((p) => (p.id === 'p-shared' ? { ...p, members: [...p.members].reverse() } : p)) };
  assert.is.not(specEtag(reversed), specEtag(spec), 'member order counts');
});

test('the journal replays to the spec the member calls made', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'journal-'));
  const files = { spec: join(dir, 'spec.json'), journal: join(dir, 'spec.journal') };
  const spec = fixtures.find((f) => f.name === 'shared-pool.json')!.spec();
  let stored: StoredSpec = { spec, etag: specEtag(spec), certificates: {} };
  writeFileSync(files.spec, storedSpecText(stored));
  let journal = '';
  const calls: [string, MemberSpec | null][] = [
    ['m9', { id: 'm9', address: '192.0.2.99', protocol_port: 8080, weight: 2, admin_state_up: true, backup: false }],
    ['m1', null],
    ['m9', { id: 'm9', address: '192.0.2.99', protocol_port: 8080, weight: 5, admin_state_up: false, backup: false }],
  ];
  for (const [id, member] of calls) {
    const next = withMember(stored.spec, 'p-shared', id, member);
    const change = { pool: 'p-shared', member: id, ...(member ? { spec: member } : {}), etag: specEtag(next) };
    journal += journalLine(change);
    stored = applyMemberChange(stored, change);
  }
  writeFileSync(files.journal, journal);
  const read = await readStoredSpec(files);
  assert.equal(read!.stored, JSON.parse(JSON.stringify(stored)));
  assert.is(read!.changes, 3);
  assert.is(read!.stored.etag, specEtag(validateSpec(JSON.parse(JSON.stringify(stored.spec)))));
});

test("a member is validated on its own, with its pool's rules", () => {
  const pool = poolsById(fixtures.find((f) => f.name === 'shared-pool.json')!.spec()).get('p-shared')!;
  const problems = (doc: unknown, id = 'm9') => {
    try {
      validateMember(doc, id, pool);
      return [];
    } catch (err) {
      return (err as SpecError).problems;
    }
  };
  assert.equal(problems({ address: '192.0.2.99', protocol_port: 80 }), []);
  assert.equal(validateMember({ address: '192.0.2.99', protocol_port: 80 }, 'm9', pool), {
    id: 'm9',
    address: '192.0.2.99',
    protocol_port: 80,
    weight: 1,
    admin_state_up: true,
    backup: false,
  });
  assert.match(problems({ address: '192.0.2.99', protocol_port: 80, weight: 999 }).join(), /weight: must be <= 256/);
  assert.match(problems({ protocol_port: 80 }).join(), /address: is required/);
  assert.match(problems({ id: 'other', address: '192.0.2.99', protocol_port: 80 }).join(), /is not the member in the path/);
  assert.match(problems({ address: '192.0.2.71', protocol_port: 8080 }).join(), /already member "m1"/);
  assert.equal(problems({ address: '192.0.2.71', protocol_port: 8080 }, 'm1'), [], 'a member may keep its own address');
});

test.run();
