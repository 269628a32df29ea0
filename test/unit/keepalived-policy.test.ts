// The keepalived policy (agent/haproxy/config/policy/keepalived-config.ts) and its
// reader (agent/keepalived/config-reader.ts), pure: what Octavia's templates
// and the agent render passes; every script, hook, include, definition,
// conditional and reading keepalived could make differently is refused with
// its line, directive and reason. Octavia 11/16/19's real renders, keepalived
// -t and the API routes are in test/interop/keepalived-policy.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkKeepalivedConfig, type KeepalivedPolicyContext } from '../../agent/haproxy/config/policy/keepalived-config.js';
import { PolicyRefusedError } from '../../agent/haproxy/config/policy/types.js';
import { v1ErrorResponse } from '../../agent/api/v1/errors.js';
import { readKeepalivedConfig } from '../../agent/keepalived/config-reader.js';
import { withHaproxyTrack } from '../../agent/keepalived/haproxy-track.js';
import { judgeKeepalivedConfig } from '../../agent/keepalived/service.js';
import type { KeepalivedSettings } from '../../agent/keepalived/process.js';
import { renderLoadBalancer } from '../../agent/render/render.js';
import { DEFAULT_RENDER_SETTINGS } from '../../agent/render/settings.js';
import { validateSpec } from '../../agent/model/spec/validate.js';

const BASE = '/var/lib/octavia';
const CTX: KeepalivedPolicyContext = { basePath: BASE, namespaces: ['amphora-haproxy'] };

/** Octavia 11's keepalived_base.template rendered for an IPv4 MASTER with a host route (16 and 19 drop `state`). */
const VRRP = `vrrp_script check_script {
    script /var/lib/octavia/vrrp/check_script.sh
    interval 5
    fall 2
    rise 2
}

vrrp_instance 6a2b9a643c1e4d5f8a710c2d9e1f4b10 {
    state MASTER
    interface eth1
    virtual_router_id 1
    priority 100
    nopreempt
    accept
    garp_master_refresh 5
    garp_master_refresh_repeat 2
    advert_int 1
    authentication {
        auth_type PASS
        auth_pass 6a2b9a6
    }

    unicast_src_ip 10.61.0.11
    unicast_peer {
        10.61.0.12
    }

    virtual_ipaddress {
        10.61.0.100
    }

    virtual_ipaddress_excluded {
        2001:db8:61::100
    }

    virtual_routes {
        10.61.0.0/24 dev eth1 src 10.61.0.100 scope link table 1
        default via 10.61.0.1 dev eth1 onlink table 1
        172.16.0.0/16 dev eth1 gateway 10.61.0.254 onlink table 1
    }

    virtual_rules {
        from 10.61.0.100/32 table 1 priority 100
    }

    track_script {
        check_script
    }
}
`;

/** Octavia's LVS template for a UDP listener with a UDP-CONNECT monitor and an SCTP-style check. */
const LVS = `# Configuration for Loadbalancer 6a2b9a64-3c1e-4d5f-8a71-0c2d9e1f4b10
# Configuration for Listener 0f8e

net_namespace amphora-haproxy

virtual_server_group ipv4-group {
    203.0.113.30 53
}

virtual_server group ipv4-group {
    lb_algo wrr
    lb_kind NAT
    protocol UDP
    persistence_timeout 360
    persistence_granularity 255.255.255.255
    delay_loop 5
    delay_before_retry 5
    retry 3

    # Configuration for Pool p
    # Configuration for HealthMonitor h
    # Configuration for Member m1
    real_server 192.0.2.101 53 {
        weight 1
        uthreshold 1000
        MISC_CHECK {
            misc_path "/var/lib/octavia/lvs/check/udp_check.sh 192.0.2.101 53"
            misc_timeout 3
        }
    }
    real_server 192.0.2.102 53 {
        weight 1
        MISC_CHECK {
            misc_path "amphora-health-checker sctp -t 3 192.0.2.102 53"
            misc_timeout 4
        }
    }
    real_server 192.0.2.103 53 {
        weight 1
        HTTP_GET {
            url {
              path /health
              status_code 200
            }
            connect_ip 192.0.2.103
            connect_port 8080
            connect_timeout 5
        }
    }
}
`;

const vrrp = (text: string) => checkKeepalivedConfig(text, 'vrrp', CTX);
const lvs = (text: string) => checkKeepalivedConfig(text, 'lvs', CTX);
/** VRRP with `lines` in place of line `at` (1-based) of the template. */
const vrrpWith = (at: number, ...lines: string[]) => {
  const all = VRRP.split('\n');
  all.splice(at - 1, 1, ...lines);
  return all.join('\n');
};
/**
 * `text` is refused, with a violation naming `directive` on line `where`
 * (a number, or the first line that contains it).
 */
function refused(kind: 'vrrp' | 'lvs', text: string, where: number | string, directive: string, reason?: RegExp): void {
  const violations = checkKeepalivedConfig(text, kind, CTX);
  const line = typeof where === 'number' ? where : text.split('\n').findIndex((l) => l.includes(where)) + 1;
  assert.ok(line > 0, `no line with ${where}`);
  const v = violations.find((x) => x.line === line);
  assert.ok(v, `a violation on line ${line}: ${JSON.stringify(violations)}`);
  assert.is(v!.directive, directive);
  if (reason) assert.match(v!.reason, reason);
}

test("Octavia's VRRP and LVS configs pass, and so does the VRRP config the agent runs (with its track file)", () => {
  assert.equal(vrrp(VRRP), []);
  assert.equal(vrrp(VRRP.replace('    state MASTER\n', '')), []);
  assert.equal(lvs(LVS), []);
  assert.equal(vrrp(withHaproxyTrack(VRRP, BASE)), []);
  assert.equal(checkKeepalivedConfig(LVS.replace(/\/var\/lib\/octavia/g, '/srv/amp'), 'lvs', { ...CTX, basePath: '/srv/amp' }), []);
});

test("the agent's own LVS render passes for every fixture with UDP or SCTP listeners, in its namespace or none", () => {
  const dir = join(process.cwd(), 'test', 'fixtures', 'specs');
  let configs = 0;
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.json'))) {
    const spec = validateSpec(JSON.parse(readFileSync(join(dir, f), 'utf8')));
    for (const networkNamespace of ['amphora-haproxy', 'ns-test', null]) {
      const out = renderLoadBalancer(spec, { ...DEFAULT_RENDER_SETTINGS, networkNamespace }, { initStateAtStartup: false });
      const ctx = { basePath: DEFAULT_RENDER_SETTINGS.basePath, namespaces: ['amphora-haproxy', 'ns-test'] };
      for (const c of out.lvsConfigs) {
        assert.equal(checkKeepalivedConfig(c.content, 'lvs', ctx), [], `${f} ${c.listenerId}`);
        configs++;
      }
    }
  }
  assert.ok(configs >= 15, `${configs} LVS configs judged`);
});

test('vrrp_script runs only the check script at <base_path>/vrrp/check_script.sh, with no arguments', () => {
  refused('vrrp', vrrpWith(2, '    script /tmp/marker.sh'), 2, 'script', /arguments not of the form.*check_script\.sh/);
  refused('vrrp', vrrpWith(2, '    script "/var/lib/octavia/vrrp/check_script.sh; touch /tmp/x"'), 2, 'script');
  refused('vrrp', vrrpWith(2, '    script /var/lib/octavia/vrrp/check_script.sh extra'), 2, 'script');
  refused('vrrp', vrrpWith(2, '    script /var/lib/octavia/vrrp/../../../../tmp/x.sh'), 2, 'script');
  refused('vrrp', vrrpWith(2, '    script /var/lib/octavia/vrrp/check_scripts/haproxy_check_script.sh'), 2, 'script');
  // The quotes keepalived removes and the slashes Octavia may double change nothing.
  assert.equal(vrrp(vrrpWith(2, '    script "/var/lib/octavia/vrrp/check_script.sh"')), []);
  assert.equal(vrrp(vrrpWith(2, '    script /var/lib/octavia//vrrp/check_script.sh')), []);
  refused('vrrp', vrrpWith(5, '    rise 2', '    user root'), 6, 'user', /not a keyword/);
  refused('vrrp', vrrpWith(5, '    rise 2', '    timeout 1'), 6, 'timeout');
});

test("notify hooks, global_defs and script security settings are no template's: refused", () => {
  for (const hook of ['notify', 'notify_master', 'notify_backup', 'notify_fault', 'notify_stop', 'notify_deleted', 'notify_master_rx_lower_pri']) {
    refused('vrrp', vrrpWith(9, '    state MASTER', `    ${hook} /var/lib/octavia/vrrp/check_script.sh`), 10, hook, /not a keyword/);
  }
  refused('vrrp', `global_defs {\n    script_user root\n    enable_script_security\n}\n${VRRP}`, 1, 'global_defs');
  refused('vrrp', `${VRRP}vrrp_sync_group g {\n    group {\n        x\n    }\n    notify /tmp/x\n}\n`, 'vrrp_sync_group', 'vrrp_sync_group');
  refused('lvs', LVS.replace('        weight 1\n        uthreshold', '        notify_up /tmp/x\n        uthreshold'), 'notify_up', 'notify_up');
  refused('lvs', LVS.replace('    retry 3\n', '    retry 3\n    quorum_up /tmp/x\n'), 'quorum_up', 'quorum_up');
  // A track_script naming another script stays a name: the script is what vrrp_script says.
  refused('vrrp', vrrpWith(3, '    interval 5', '    weight -2 reverse'), 4, 'weight');
});

test('MISC_CHECK runs only the UDP check at <base_path>/lvs/check/udp_check.sh or amphora-health-checker sctp', () => {
  const misc = (path: string) => LVS.replace('"/var/lib/octavia/lvs/check/udp_check.sh 192.0.2.101 53"', path);
  refused('lvs', misc('"/tmp/marker.sh 192.0.2.101 53"'), 'misc_path', 'misc_path', /arguments not of the form/);
  refused('lvs', misc('"/var/lib/octavia/lvs/check/udp_check.sh 192.0.2.101 53 more"'), 'misc_path', 'misc_path');
  refused('lvs', misc('"/var/lib/octavia/lvs/check/udp_check.sh 192.0.2.101"'), 'misc_path', 'misc_path');
  refused('lvs', misc('"/var/lib/octavia/lvs/check/udp_check.sh  192.0.2.101 53"'), 'misc_path', 'misc_path');
  refused('lvs', misc('"/var/lib/octavia/lvs/check/udp_check.sh x;id 53"'), 'misc_path', 'misc_path');
  refused('lvs', misc('/var/lib/octavia/lvs/check/udp_check.sh 192.0.2.101 53'), 'misc_path', 'misc_path');
  refused('lvs', misc('"amphora-health-checker tcp -t 3 192.0.2.101 53"'), 'misc_path', 'misc_path');
  refused('lvs', misc('"/usr/bin/amphora-health-checker sctp -t 3 192.0.2.101 53"'), 'misc_path', 'misc_path');
  refused('lvs', LVS.replace('            misc_timeout 3\n', '            misc_timeout 3\n            misc_dynamic\n'), 'misc_dynamic', 'misc_dynamic');
  refused('lvs', LVS.replace('        HTTP_GET {', '        SMTP_CHECK {'), 'SMTP_CHECK', 'SMTP_CHECK');
  refused('lvs', LVS.replace('        HTTP_GET {', '        BFD_CHECK {'), 'BFD_CHECK', 'BFD_CHECK');
});

test('include, @ conditionals, $ definitions and ~SEQ are refused wherever they are', () => {
  refused('vrrp', `include /etc/keepalived/other.conf\n${VRRP}`, 1, 'include', /reads another file/);
  refused('vrrp', `includer /etc/x\n${VRRP}`, 1, 'includer');
  refused('vrrp', vrrpWith(5, '    rise 2', '    include /tmp/x.conf'), 6, 'include');
  refused('vrrp', `@amp1 vrrp_script x {\n${VRRP}`, 1, '@amp1', /conditional/);
  refused('vrrp', vrrpWith(2, '@^x script /tmp/marker.sh'), 2, '@^x');
  refused('vrrp', `$S=/tmp/marker.sh\n${VRRP}`, 1, '$S=/tmp/marker.sh', /definition/);
  refused('vrrp', vrrpWith(2, '    script $S'), 2, 'script', /definition/);
  // biome-ignore lint/suspicious/noTemplateCurlyInString: keepalived's own ${NAME} expansion
  refused('vrrp', vrrpWith(2, '    script ${_PWD}/x.sh'), 2, 'script');
  refused('vrrp', `~SEQ(i,1,3) vrrp_script s$i {\n${VRRP}`, 1, '~SEQ(i,1,3)');
  refused('vrrp', `~LST(i,a) x\n${VRRP}`, 1, '~LST(i,a)', /repeats/);
});

test('escapes, second quotes, NUL, control and non-ASCII characters, long lines: refused, since keepalived could read them otherwise', () => {
  refused('vrrp', vrrpWith(2, '    script /var/lib/octavia/vrrp/check_script.sh\\'), 2, 'script', /escapes/);
  refused('vrrp', vrrpWith(2, '    scri\\x70t /tmp/x'), 2, 'scri\\x70t', /escapes/);
  refused('vrrp', vrrpWith(2, "    script '/tmp/x'"), 2, 'script', /quotes/);
  refused('vrrp', vrrpWith(2, '    script /var/lib/octavia/vrrp/check_script.sh\0/tmp/x'), 2, 'script', /NUL/);
  refused('vrrp', vrrpWith(2, '    script /var/lib/octavia/vrrp/check_script.sh\r'), 2, 'script', /U\+000d/);
  refused('vrrp', vrrpWith(2, '    script\v/tmp/x'), 2, 'script?/tmp/x');
  refused('vrrp', vrrpWith(3, '    interval 5 # naïve'), 3, 'interval', /U\+00ef/);
  // A comment ending in '\' comes back as a continuation in keepalived's decomment().
  refused('vrrp', vrrpWith(3, '    interval 5 ! x\\'), 3, 'interval', /escapes/);
  refused('vrrp', vrrpWith(1, `vrrp_script check_script { # ${'x'.repeat(1100)}`), 1, 'vrrp_script', /two lines/);
  refused('vrrp', vrrpWith(2, '    script "/var/lib/octavia/vrrp/check_script.sh'), 2, 'script', /quote is not closed/);
});

test("braces: only at the end of a keyword's line or alone; keepalived splits lines at them", () => {
  refused('vrrp', vrrpWith(6, '} vrrp_script evil { script /tmp/marker.sh'), 6, '}', /splits lines at braces/);
  refused('vrrp', vrrpWith(2, '    script /var/lib/octavia/vrrp/check_script.sh } vrrp_script e { script /tmp/m'), 2, 'script');
  refused('lvs', LVS.replace('misc_path "/var/lib/octavia/lvs/check/udp_check.sh 192.0.2.101 53"', 'misc_path "{ /tmp/x }"'), 'misc_path', 'misc_path');
  refused('vrrp', vrrpWith(1, 'vrrp_script check_script', '{'), 2, '{', /without the keyword/);
  refused('vrrp', `${VRRP}}\n`, 50, '}', /closes no block/);
  refused('vrrp', VRRP.replace(/}\n$/, ''), 49, 'vrrp_instance', /not closed/);
  refused('vrrp', vrrpWith(3, '    interval 5 {', '    }'), 3, 'interval', /takes no block/);
  refused('vrrp', vrrpWith(9, '    state MASTER', '    unicast_peer'), 10, 'unicast_peer', /needs its block/);
  refused('vrrp', vrrpWith(26, '        10.61.0.12 {', '        }'), 26, '10.61.0.12', /opens a block/);
});

test('comments and quotes read as keepalived reads them', () => {
  assert.equal(vrrp(vrrpWith(2, '    script /var/lib/octavia/vrrp/check_script.sh # the check ! script /tmp/x')), []);
  assert.equal(vrrp(vrrpWith(2, '    "script" "/var/lib/octavia/vrrp/check_script.sh"')), []);
  // A '#' inside quotes is not a comment: the script named is "/tmp/x#".
  refused('vrrp', vrrpWith(2, '    script "/tmp/x#" /var/lib/octavia/vrrp/check_script.sh'), 2, 'script');
  refused('vrrp', vrrpWith(2, '    "notify" /tmp/x'), 2, 'notify');
  const r = readKeepalivedConfig('a "b c" "" # e\n  x {\n}\n! y\n');
  assert.equal(
    r.statements.map((s) => [s.line, s.words, s.opens, s.closes]),
    [
      [1, ['a', 'b c', ''], false, false],
      [2, ['x'], true, false],
      [3, [], false, true],
    ],
  );
  assert.equal(r.unreadable, []);
  // keepalived ends a word at a quote: `"b c"d` is two words there.
  assert.equal(
    readKeepalivedConfig('a "b c"d\n').unreadable.map((v) => v.line),
    [1],
  );
});

test('each upload has its own keywords, values of their shape, and namespaces from the list', () => {
  refused('vrrp', LVS, 'net_namespace', 'net_namespace', /not a keyword/);
  refused('lvs', VRRP, 1, 'vrrp_script');
  refused('lvs', LVS.replace('net_namespace amphora-haproxy', 'net_namespace other'), 'net_namespace', 'net_namespace');
  refused('lvs', LVS.replace('lb_kind NAT', 'lb_kind DR'), 'lb_kind', 'lb_kind');
  refused('lvs', LVS.replace('virtual_server group ipv4-group', 'virtual_server 10.0.0.1 53'), 'virtual_server 10', 'virtual_server');
  refused('lvs', LVS.replace('    203.0.113.30 53', '    203.0.113.30 53 extra'), 'extra', '203.0.113.30', /not an entry/);
  refused('vrrp', vrrpWith(26, '        10.61.0.12/24'), 26, '10.61.0.12/24');
  refused('vrrp', vrrpWith(40, '        10.61.0.0/24 dev eth1 src 10.61.0.100 scope link table 1 realm 3'), 40, '10.61.0.0/24');
  refused('vrrp', vrrpWith(11, '    virtual_router_id one'), 11, 'virtual_router_id');
});

test('a refusal is a PolicyRefusedError, answered 400 with the line, directive and reason; config_policy = false skips it', () => {
  const s: KeepalivedSettings = { netns: 'ns-x', logFacility: 1, processManager: 'direct', unitDir: '/tmp' };
  assert.not.throws(() => judgeKeepalivedConfig(BASE, s, 'lvs', LVS.replace('amphora-haproxy', 'ns-x')));
  let err: unknown;
  try {
    judgeKeepalivedConfig(BASE, s, 'vrrp', vrrpWith(2, '    script /tmp/marker.sh'));
  } catch (e) {
    err = e;
  }
  assert.instance(err, PolicyRefusedError);
  const res = v1ErrorResponse(err);
  assert.is(res.status, 400);
  assert.match((res.body as { details: string }).details, /line 2: script: arguments not of the form/);
  assert.not.throws(() => judgeKeepalivedConfig(BASE, { ...s, configPolicy: false }, 'vrrp', vrrpWith(2, '    script /tmp/marker.sh')));
});

test('a quote inside a word, where keepalived ends the word, is refused; whole quoted words pass', () => {
  const lines = (text: string) => readKeepalivedConfig(text).unreadable.length;
  assert.is(lines('vrrp_instance x {\n  inter"face" lo\n}\n'), 1);
  assert.is(lines('virtual_server_group g {\n  net_namespace amphora"-haproxy"\n}\n'), 1);
  assert.is(lines('vrrp_script s {\n  script "/var/lib/octavia/vrrp/check_script.sh"\n}\n'), 0);
});

test.run();
