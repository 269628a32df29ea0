// The per-interface LVS masquerade ruleset: replaced whole on every bring-up,
// one table per IP family the interface carries, no TCP notrack with SR-IOV.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { masqueradeRuleset } from '../../agent/net/masquerade.js';

test('an IPv6-only interface gets an ip6 table; the ip table is dropped whether or not it existed', () => {
  const r = masqueradeRuleset('eth2', [6], false);
  assert.match(r, /^table ip amphora-lvs-eth2 \{\}\ndelete table ip amphora-lvs-eth2\n/);
  assert.match(r, /table ip6 amphora-lvs-eth2 \{\n {4}chain lvs-masquerade/);
  assert.not.match(r, /table ip amphora-lvs-eth2 \{\n/);
  assert.match(r, /iifname "eth2" meta l4proto tcp notrack/);
});

test('SR-IOV: masquerade only, TCP stays tracked for the VIP firewall', () => {
  const r = masqueradeRuleset('eth1', [4], true);
  assert.match(r, /oifname "eth1" meta l4proto \{ udp, sctp \} masquerade/);
  assert.not.match(r, /notrack/);
});

test('removal drops both tables and defines none', () => {
  assert.is(
    masqueradeRuleset('eth1', [], false)
      .split('\n')
      .filter((l) => l.startsWith('table') && !l.endsWith('{}')).length,
    0,
  );
});

test.run();
