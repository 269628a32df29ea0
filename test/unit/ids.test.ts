// Load balancer, listener and amphora ids (issue 26, class 5): the form
// Octavia sends (lowercase UUIDs) and readable lowercase slugs, never a name
// the agent keeps for itself beside the load balancers' directories.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAgentConfig } from '../../agent/config/agent-config.js';
import { idRefusal, reservedIds } from '../../agent/api/reserved-ids.js';

const DEFAULTS = parseAgentConfig('');

test('the reserved names come from the layout: vrrp, lvs, and base_cert_dir where it sits under base_path', () => {
  const names = reservedIds(DEFAULTS);
  for (const n of ['vrrp', 'lvs', 'certs']) assert.ok(names.has(n), `${n} not reserved: ${[...names].join(' ')}`);
  const moved = reservedIds(parseAgentConfig('[haproxy_amphora]\nbase_path = /srv/octavia\nbase_cert_dir = /srv/octavia/tls\n'));
  assert.ok(moved.has('tls') && !moved.has('certs'), [...moved].join(' '));
  const apart = reservedIds(parseAgentConfig('[haproxy_amphora]\nbase_path = /srv/octavia\nbase_cert_dir = /etc/octavia/lb-certs\n'));
  assert.not.ok(apart.has('lb-certs'), 'a base_cert_dir elsewhere is no name under base_path');
  // Cross-check against the paths as Octavia lays them out: nothing else under base_path is a slug.
  const slugs = [...names].filter((n) => /^[a-z0-9][a-z0-9-]*$/.test(n)).sort();
  assert.equal(slugs, ['certs', 'lvs', 'vrrp']);
});

const ACCEPTED = ['0e6b7a38-2f87-4c6b-9f64-3bf8c1e5a0d2', 'lb-quickstart', 'amp-1', 'lb1', 'x'.repeat(64)];
const REFUSED: [string, RegExp][] = [
  ['certs', /directory or file of its own/],
  ['vrrp', /of its own/],
  ['lvs', /of its own/],
  ['.', /lowercase UUID or slug/],
  ['..', /slug/],
  ['a\u0000b', /slug/],
  ['a/b', /slug/],
  ['..%2F..', /slug/],
  ['a%2Fb', /slug/],
  ['0E6B7A38-2F87-4C6B-9F64-3BF8C1E5A0D2', /slug/],
  ['Lb-Web', /slug/],
  ['lb.sock', /slug/],
  ['nftables-vip.rules', /slug/],
  ['haproxy-default-user-group.conf', /slug/],
  ['plugged_interfaces', /slug/],
  ['.probe', /slug/],
  ['-rf', /slug/],
  ['', /slug/],
  ['x'.repeat(65), /slug/],
  ['lb\n1', /slug/],
  ['lb 1', /slug/],
  ['lb:1', /slug/],
];

test('ids: lowercase UUIDs and slugs up to 64 characters', () => {
  for (const id of ACCEPTED) assert.is(idRefusal(DEFAULTS, id), null, id);
});

for (const [id, why] of REFUSED) {
  test(`refused: ${JSON.stringify(id)}`, () => {
    assert.match(idRefusal(DEFAULTS, id) ?? 'accepted', why);
  });
}

test.run();
