// The API 2.0 ETag: one per spec, however the control plane writes it (key
// order, defaults left out or spelled out), and another once anything changes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { specEtag } from '../../agent/loadbalancer/spec-store.js';
import { validateSpec } from '../../agent/model/spec/validate.js';

const member = (weight?: number) => ({ id: 'm1', address: '10.0.0.5', protocol_port: 80, ...(weight === undefined ? {} : { weight }) });
const pool = (members: object[]) => ({ id: 'p', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members });

test('the same spec written two ways has one ETag; a changed weight another', () => {
  const terse = validateSpec({
    id: 'lb',
    vip_address: '203.0.113.1',
    listeners: [{ id: 'l', protocol: 'HTTP', protocol_port: 80, default_pool: pool([member()]) }],
  });
  // Keys in another order and the member's default weight (1) spelled out.
  const verbose = validateSpec({
    listeners: [
      {
        default_pool: { members: [{ weight: 1, protocol_port: 80, address: '10.0.0.5', id: 'm1' }], lb_algorithm: 'ROUND_ROBIN', protocol: 'HTTP', id: 'p' },
        protocol_port: 80,
        protocol: 'HTTP',
        id: 'l',
      },
    ],
    vip_address: '203.0.113.1',
    id: 'lb',
  });
  assert.is(specEtag(verbose), specEtag(terse));
  assert.match(specEtag(terse), /^"[0-9a-f]{32}"$/);
  const heavier = validateSpec({
    id: 'lb',
    vip_address: '203.0.113.1',
    listeners: [{ id: 'l', protocol: 'HTTP', protocol_port: 80, default_pool: pool([member(2)]) }],
  });
  assert.is.not(specEtag(heavier), specEtag(terse));
});

test.run();
