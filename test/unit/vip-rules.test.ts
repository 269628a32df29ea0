// The body of PUT /1.0/interface/<ip>/rules (issue 26, class 8): what nft
// would choke on, or read differently, is refused before the rules file is
// written, with the rule and the reason.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { vipRuleset, vipRulesRefusal, type VipRule } from '../../agent/net/nftables.js';

const rule = (over: Record<string, unknown>) => [{ protocol: 'TCP', cidr: null, port: 80, ...over }];

test('what Octavia sends passes: listener ports, allowed CIDRs of both families, the VRRP rule, an empty list', () => {
  const rules: VipRule[] = [
    { protocol: 'TCP', cidr: null, port: 80 },
    { protocol: 'UDP', cidr: '0.0.0.0/0', port: 53 },
    { protocol: 'SCTP', cidr: '2001:db8::/32', port: 65535 },
    { protocol: 'TCP', cidr: '::/0', port: 1 },
    { protocol: 'vrrp', cidr: '10.77.0.6/32', port: 112 },
    { protocol: 'TCP', cidr: '::ffff:10.0.0.0/104', port: 443 },
  ];
  assert.is(vipRulesRefusal(rules), null);
  assert.is(vipRulesRefusal([]), null);
  assert.match(vipRuleset(rules), /ip6 saddr 2001:db8::\/32 sctp dport 65535 accept/);
});

const BAD: [string, unknown, RegExp][] = [
  ['a fractional port', rule({ port: 80.5 }), /rule 0: port must be an integer/],
  ['port 0', rule({ port: 0 }), /port must be an integer from 1 to 65535/],
  ['port 65536', rule({ port: 65536 }), /port/],
  ['a port as text', rule({ port: '80' }), /port/],
  ['a port in exponent notation past the range', rule({ port: 1e6 }), /port/],
  ['a negative port', rule({ port: -1 }), /port/],
  ['an IPv6 zone id', rule({ cidr: 'fe80::1%eth0/64' }), /rule 0: cidr must be null or an IPv4 or IPv6 network/],
  ['an IPv4 prefix past 32', rule({ cidr: '10.0.0.0/33' }), /cidr/],
  ['an IPv6 prefix past 128', rule({ cidr: '2001:db8::/129' }), /cidr/],
  ['a prefix with a leading zero', rule({ cidr: '10.0.0.0/024' }), /cidr/],
  ['an address without a prefix', rule({ cidr: '10.0.0.1' }), /cidr/],
  ['a host name', rule({ cidr: 'example.com/32' }), /cidr/],
  ['nft syntax after the address', rule({ cidr: '10.0.0.0/8 accept; tcp dport 22' }), /cidr/],
  ['a newline', rule({ cidr: '10.0.0.0/8\n' }), /cidr/],
  ['an IPv4 address with a leading zero', rule({ cidr: '010.0.0.0/8' }), /cidr/],
  ['a cidr as a number', rule({ cidr: 10 }), /cidr/],
  ['a protocol off the list', rule({ protocol: 'ICMP' }), /rule 0: protocol must be one of SCTP, TCP, UDP, vrrp/],
  ['a protocol in another case', rule({ protocol: 'tcp' }), /protocol/],
  ['a missing key', [{ protocol: 'TCP', port: 80 }], /exactly protocol, cidr and port/],
  ['an extra key', [{ protocol: 'TCP', cidr: null, port: 80, action: 'accept' }], /exactly/],
  ['a rule that is a list', [['TCP', null, 80]], /exactly/],
  ['a body that is not a list', { protocol: 'TCP', cidr: null, port: 80 }, /a list of rules is expected/],
  ['the second rule bad', [...rule({}), { protocol: 'TCP', cidr: null, port: 80.5 }], /rule 1: port/],
];

for (const [what, body, reason] of BAD) {
  test(`refused: ${what}`, () => {
    assert.match(vipRulesRefusal(body) ?? 'passed', reason);
  });
}

test.run();
