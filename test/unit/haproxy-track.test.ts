import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HAPROXY_TRACK, withHaproxyTrack } from '../../agent/keepalived/haproxy-track.js';

// Shaped like Octavia's KeepalivedJinjaTemplater output (16 and later: no state line).
const CONFIG = `vrrp_script check_script {
    script /var/lib/octavia/vrrp/check_script.sh
    interval 5
    fall 2
    rise 2
}

vrrp_instance a5a5a5a5000040008000000000000001 {
    interface eth1
    virtual_router_id 1
    priority 100
    nopreempt
    track_script {
        check_script
    }
}
`;

test('the track file is declared before the instance and tracked at the top of it', () => {
  const out = withHaproxyTrack(CONFIG, '/var/lib/octavia');
  assert.match(out, `vrrp_track_file ${HAPROXY_TRACK} {\n    file /var/lib/octavia/vrrp/haproxy.track\n    weight 0\n}\n\nvrrp_instance`);
  assert.match(out, `vrrp_instance a5a5a5a5000040008000000000000001 {\n    track_file {\n        ${HAPROXY_TRACK}\n    }\n    interface eth1`);
  assert.ok(out.indexOf('vrrp_script') < out.indexOf('vrrp_track_file'), 'the vrrp_script block moved');
  // The rest of the config is kept as uploaded.
  assert.is(out.replace(/vrrp_track_file[\s\S]*?\n}\n\n/, '').replace(/ {4}track_file \{\n.*\n {4}\}\n/, ''), CONFIG);
});

test('a config that has it already, or has no vrrp_instance, is returned unchanged', () => {
  const once = withHaproxyTrack(CONFIG, '/b');
  assert.is(withHaproxyTrack(once, '/b'), once);
  assert.is(withHaproxyTrack('global_defs {\n}\n', '/b'), 'global_defs {\n}\n');
});

test.run();
