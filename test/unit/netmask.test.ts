// keepalived's persistence_granularity per address family.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { granularityFor, prefixLength } from '../../agent/model/spec/netmask.js';

test('prefix lengths of IPv4 and IPv6 netmasks; null when the ones are not contiguous', () => {
  assert.is(prefixLength('255.255.255.255'), 32);
  assert.is(prefixLength('255.255.255.0'), 24);
  assert.is(prefixLength('0.0.0.0'), 0);
  assert.is(prefixLength('255.0.255.0'), null);
  assert.is(prefixLength('ffff:ffff:ffff:ffff::'), 64);
  assert.is(prefixLength('ffff:ffff:ffff:ff80::'), 57);
  assert.is(prefixLength('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'), 128);
  assert.is(prefixLength('::ffff:255.255.255.255'), null);
  assert.is(prefixLength('ffff::1'), null);
  assert.is(prefixLength('not-a-mask'), null);
});

test('a netmask applies to its own family; the other keeps per-address persistence', () => {
  assert.is(granularityFor(undefined, 4), '255.255.255.255');
  assert.is(granularityFor(undefined, 6), '128');
  assert.is(granularityFor('255.255.255.0', 4), '255.255.255.0');
  assert.is(granularityFor('255.255.255.0', 6), '128');
  assert.is(granularityFor('ffff:ffff:ffff:ffff::', 6), '64');
  assert.is(granularityFor('ffff:ffff:ffff:ffff::', 4), '255.255.255.255');
});

test.run();
