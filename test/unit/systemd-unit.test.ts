import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { renderTemplate } from '../../agent/templates.js';

test('haproxy unit: master-worker with systemd notify in the namespace, master CLI, no duplicate haproxy -c', () => {
  const unit = renderTemplate('systemd/haproxy.service.njk', {
    lb_id: 'lb1',
    config: '/var/lib/octavia/lb1/haproxy.live.cfg',
    user_group: '/var/lib/octavia/haproxy-default-user-group.conf',
    pid_file: '/var/lib/octavia/lb1/lb1.pid',
    netns: 'amphora-haproxy',
    haproxy: '/usr/sbin/haproxy',
    master_socket: '/var/lib/octavia/lb1/master.sock',
    peer_name: 'nb4_5hKf-EYlJ2pGnOD7IGY2jng',
  });
  assert.match(
    unit,
    /^ExecStart=\/sbin\/ip netns exec amphora-haproxy \/usr\/sbin\/haproxy -Ws -f \$CONFIG -f \$USERCONFIG -p \$PIDFILE -S \/var\/lib\/octavia\/lb1\/master\.sock,mode,600 -L nb4_5hKf-EYlJ2pGnOD7IGY2jng$/m,
  );
  assert.match(unit, /^Type=notify$/m);
  assert.match(unit, /^ExecReload=\/bin\/kill -USR2 \$MAINPID$/m);
  assert.not.match(unit, /^Exec[^\n]* -c /m);
  // Restart=always within a start limit: past it the unit is failed and the agent reports it.
  assert.match(unit, /^Restart=always$/m);
  // At once (a killed master costs the 100 ms of Octavia's unit), then backing off.
  assert.match(unit, /^RestartSec=100ms$/m);
  assert.match(unit, /^RestartSteps=5$/m);
  assert.match(unit, /^RestartMaxDelaySec=60$/m);
  assert.match(unit, /^StartLimitIntervalSec=60$/m);
  assert.match(unit, /^StartLimitBurst=5$/m);
  assert.ok(unit.indexOf('StartLimitBurst') < unit.indexOf('[Service]'), 'start limits belong in [Unit]');
  assert.match(unit, /^Environment="CONFIG=\/var\/lib\/octavia\/lb1\/haproxy\.live\.cfg"/m);
});

test.run();
