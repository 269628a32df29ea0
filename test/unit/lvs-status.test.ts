import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lvsPoolStatus, parseIpVs, parseLvsConfig } from '../../agent/health/lvs-status.js';

// Shaped like Octavia's keepalivedlvs template output.
const CONFIG = `# Configuration for Loadbalancer lb1
# Configuration for Listener l1

net_namespace amphora-haproxy

virtual_server_group ipv4-group {
    10.0.0.5 53
}

virtual_server group ipv4-group {
    lb_algo wrr
    lb_kind NAT
    protocol UDP
    delay_loop 5

    # Configuration for Pool p1
    # Configuration for HealthMonitor hm1
    # Configuration for Member m1
    real_server 10.0.0.8 53 {
        weight 1
        MISC_CHECK {
            misc_path "/var/lib/octavia/lvs/check/udp_check.sh 10.0.0.8 53"
            misc_timeout 5
        }
    }
    # Configuration for Member m2
    real_server 10.0.0.9 53 {
        weight 1
        MISC_CHECK {
            misc_path "/var/lib/octavia/lvs/check/udp_check.sh 10.0.0.9 53"
            misc_timeout 5
        }
    }
    # Configuration for Member m3
    real_server 10.0.0.10 53 {
        weight 1
    }
    # Member m4 is disabled
}
`;

const IPVS = `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port Forward Weight ActiveConn InActConn
UDP  0A000005:0035 wrr
  -> 0A000008:0035      Masq    1      0          0
  -> 0A00000A:0035      Masq    0      0          0
`;

test('config: pool, VIPs, members (disabled ones too) and whether a monitor is configured', () => {
  const cfg = parseLvsConfig(CONFIG);
  assert.is(cfg.poolId, 'p1');
  assert.equal(cfg.vips, ['10.0.0.5 53']);
  assert.equal(
    cfg.members.map((m) => [m.id, m.address, m.port, m.disabled]),
    [
      ['m1', '10.0.0.8', 53, false],
      ['m2', '10.0.0.9', 53, false],
      ['m3', '10.0.0.10', 53, false],
      ['m4', '', 0, true],
    ],
  );
  assert.ok(cfg.monitored);
});

test("statuses by Octavia's rules: UP in IPVS, DOWN or RESTARTING when missing, DRAIN at weight 0, MAINT when disabled", () => {
  const ipvs = parseIpVs(IPVS);
  assert.equal(ipvs.get('10.0.0.5 53'), [
    { address: '10.0.0.8', port: 53, weight: 1 },
    { address: '10.0.0.10', port: 53, weight: 0 },
  ]);
  assert.equal(lvsPoolStatus(parseLvsConfig(CONFIG), ipvs, false), { status: 'UP', members: { m1: 'UP', m2: 'DOWN', m3: 'DRAIN', m4: 'MAINT' } });
  assert.is(lvsPoolStatus(parseLvsConfig(CONFIG), ipvs, true)!.members.m2, 'RESTARTING');
});

test('no real server at all: pool DOWN with a monitor; without one, members "no check" and the pool UP', () => {
  const empty = parseIpVs('IP Virtual Server version 1.2.1 (size=4096)\nUDP  0A000005:0035 wrr\n');
  assert.equal(lvsPoolStatus(parseLvsConfig(CONFIG), empty, false), { status: 'DOWN', members: { m1: 'DOWN', m2: 'DOWN', m3: 'DOWN', m4: 'MAINT' } });
  const unmonitored = CONFIG.replace(/MISC_CHECK \{[^}]*\}/g, '');
  assert.equal(lvsPoolStatus(parseLvsConfig(unmonitored), empty, false), {
    status: 'UP',
    members: { m1: 'no check', m2: 'no check', m3: 'no check', m4: 'MAINT' },
  });
  assert.equal(lvsPoolStatus(parseLvsConfig(unmonitored), parseIpVs(IPVS), false)!.members, { m1: 'no check', m2: 'DOWN', m3: 'DRAIN', m4: 'MAINT' });
});

test.run();
