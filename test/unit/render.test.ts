// The renderer's own rules, apart from parity: protection gating, escaping,
// addresses, expected codes, defaults.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { renderLoadBalancer } from '../../agent/render/render.js';
import { expectedCodes, haproxyAddress, haproxyWord } from '../../agent/render/haproxy-words.js';
import { DEFAULT_RENDER_SETTINGS } from '../../agent/render/settings.js';
import { validateSpec } from '../../agent/model/spec/validate.js';

const spec = () =>
  validateSpec({
    id: 'lb',
    vip_address: '203.0.113.1',
    listeners: [
      {
        id: 'l',
        protocol: 'HTTP',
        protocol_port: 80,
        connection_limit: 100,
        default_pool: {
          id: 'checked',
          protocol: 'HTTP',
          lb_algorithm: 'ROUND_ROBIN',
          healthmonitor: { type: 'HTTP', delay: 2, timeout: 1, max_retries: 2 },
          members: [
            { id: 'a', address: '192.0.2.1', protocol_port: 80 },
            { id: 'b', address: '2001:db8::1', protocol_port: 80, admin_state_up: false },
          ],
        },
        l7policies: [
          { id: 'p', action: 'REDIRECT_TO_POOL', redirect_pool_id: 'unchecked', rules: [{ id: 'r', type: 'PATH', compare_type: 'STARTS_WITH', value: '/x' }] },
        ],
      },
    ],
    pools: [
      { id: 'unchecked', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ id: 'c', address: '192.0.2.3', protocol_port: 80 }] },
      {
        id: 'monitor-off',
        protocol: 'HTTP',
        lb_algorithm: 'ROUND_ROBIN',
        healthmonitor: { type: 'TCP', delay: 2, timeout: 1, max_retries: 2, admin_state_up: false },
        members: [],
      },
    ],
  });

const servers = (cfg: string) => cfg.split('\n').filter((l) => l.trim().startsWith('server '));

test('init-state fully-down only where the probe says it works, and only on checked members', () => {
  const on = renderLoadBalancer(spec(), DEFAULT_RENDER_SETTINGS, { initStateAtStartup: true }).haproxyConfig!;
  const lines = servers(on);
  assert.ok(lines.find((l) => l.includes('server a '))!.endsWith('init-state fully-down'));
  assert.ok(lines.find((l) => l.includes('server b '))!.endsWith('disabled init-state fully-down'));
  assert.not.ok(lines.find((l) => l.includes('server c '))!.includes('init-state'), 'a member without checks must never start down');
  const off = renderLoadBalancer(spec(), DEFAULT_RENDER_SETTINGS, { initStateAtStartup: false }).haproxyConfig!;
  assert.not.ok(off.includes('init-state'));
});

test('monitor defaults are Octavia API defaults: GET / and 200', () => {
  const cfg = renderLoadBalancer(spec(), DEFAULT_RENDER_SETTINGS, { initStateAtStartup: false }).haproxyConfig!;
  assert.match(cfg, /^ {4}option httpchk GET \/$/m);
  assert.match(cfg, /^ {4}http-check expect rstatus 200$/m);
});

test('IPv6 addresses are bracketed for haproxy', () => {
  assert.is(haproxyAddress('2001:db8::', 80), '[2001:db8::]:80');
  assert.is(haproxyAddress('192.0.2.1', 80), '192.0.2.1:80');
  assert.is(haproxyAddress('2001:db8::9'), '[2001:db8::9]');
  const cfg = renderLoadBalancer(spec(), DEFAULT_RENDER_SETTINGS, { initStateAtStartup: false }).haproxyConfig!;
  assert.ok(servers(cfg).some((l) => l.includes('server b [2001:db8::1]:80 ')));
});

test('haproxy words: backslash, space, #, quotes escaped; HTML characters left alone', () => {
  assert.is(haproxyWord(`a b#c"d'e\\f&<>`), `a\\ b\\#c\\"d\\'e\\\\f&<>`);
});

test('expected codes: lists and ranges, sorted, once each', () => {
  assert.equal(expectedCodes('204, 200-202,200'), [200, 201, 202, 204]);
});

test('a disabled monitor means no checks at all', () => {
  const s = spec();
  s.listeners[0]!.default_pool!.healthmonitor!.admin_state_up = false;
  const cfg = renderLoadBalancer(s, DEFAULT_RENDER_SETTINGS, { initStateAtStartup: true }).haproxyConfig!;
  assert.not.ok(servers(cfg).some((l) => / check|init-state/.test(l)));
  assert.not.ok(cfg.includes('option httpchk'));
});

test('only pools a frontend uses get a backend; a disabled LB renders no proxies', () => {
  const cfg = renderLoadBalancer(spec(), DEFAULT_RENDER_SETTINGS, { initStateAtStartup: false }).haproxyConfig!;
  assert.equal(
    [...cfg.matchAll(/^backend (\S+)/gm)].map((m) => m[1]),
    ['checked:l', 'unchecked:l'],
  );
  const s = spec();
  s.admin_state_up = false;
  const off = renderLoadBalancer(s, DEFAULT_RENDER_SETTINGS, { initStateAtStartup: false }).haproxyConfig!;
  assert.not.match(off, /^(frontend|backend) /m);
});

test.run();
