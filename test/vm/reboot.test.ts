// An amphora VM (test/helpers/amphora-vm.ts) with a load balancer set up by
// Octavia 19's client, rebooted from inside and then reset by qemu (QMP
// system_reset, a hard reset): each time it must serve again from what it
// kept on disk, with no controller call, and report the listener OPEN in
// its heartbeats. A file of its own (the boot and two reboots take about
// 10-16 minutes under TCG), which the runner runs beside vm/boot and
// vm/log-offload.
//
// Runs alone with `node dist/test/run.js vm/reboot`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loud } from '../helpers/hooks.js';
import { AmphoraVm, seconds } from '../helpers/amphora-vm.js';
import { TestBackend } from '../helpers/backend.js';
import { LoadGenerator, waitFor } from '../helpers/load.js';
import { testPorts } from '../helpers/ports.js';

const ports = testPorts('vm-reboot');
const amp = new AmphoraVm('vm-reboot', ports, 15);
let member: TestBackend | null = null;

test.before(
  loud(async () => {
    await amp.boot();
    // The load balancer, as the controller creates it: VIP port, config, start.
    await amp.hotplugVip();
    await amp.peer!.call('plug_vip', amp.vip, amp.vipNetInfo);
    member = await new TestBackend('m1', amp.vipHost, ports.one()).start();
    await amp.peer!.call('upload_config', amp.lbId, await amp.render([member]));
    await amp.peer!.call('start_listener', amp.lbId);
    const load = new LoadGenerator(amp.vipUrl, 5, 1).start();
    try {
      await waitFor('traffic through the VIP', () => load.records.some((r) => r.status === 200), 120_000, 250);
    } finally {
      await load.stop();
    }
  }),
);
test.after(async () => {
  amp.cleanup();
  await member?.stop();
});

/** After a reboot of any kind: a new boot, the load balancer serving and OPEN in heartbeats, with no controller call. */
async function backWithoutController(how: string, bootIdBefore: string, since: number): Promise<void> {
  await waitFor(
    `ssh after the ${how}`,
    () => {
      const r = amp.guest.run('cat /proc/sys/kernel/random/boot_id', 30_000);
      return r.status === 0 && r.stdout.trim() !== bootIdBefore;
    },
    10 * 60_000,
    3000,
  );
  const load = new LoadGenerator(amp.vipUrl, 5, 1).start();
  try {
    await waitFor(`traffic through the VIP after the ${how}`, () => load.records.some((r) => r.status === 200 && r.start >= since), 10 * 60_000, 500);
  } finally {
    await load.stop();
  }
  console.log(`${how}: serving again ${seconds(since)} s after it`);
  const open = await waitFor(
    `a heartbeat with the listener OPEN after the ${how}`,
    () => amp.heartbeats!.accepted(since).find((m) => m.id === amp.amphoraId && m.listeners[amp.listenerId]?.status === 'OPEN'),
    5 * 60_000,
    1000,
  );
  assert.ok(open);
  const addr = amp.guest.root('ip netns exec amphora-haproxy ip -o addr show dev eth1');
  assert.match(addr, /inet 10\.214\.15\.10\/32/, 'VIP restored');
  assert.match(amp.guest.root('ip netns exec amphora-haproxy ip route show table all'), /default via 10\.214\.15\.1/, 'VIP routes restored');
  assert.is(amp.guest.run('systemctl is-system-running --wait', 5 * 60_000).stdout.trim(), 'running', amp.guest.run('systemctl --failed --no-legend').stdout);
}

test('reboot from inside: the load balancer serves again, heartbeats report it OPEN, no controller call', async () => {
  const bootId = amp.guest.run('cat /proc/sys/kernel/random/boot_id').stdout.trim();
  const since = Date.now();
  amp.guest.run('sudo -n systemctl reboot', 30_000);
  await backWithoutController('reboot', bootId, since);
});

test('hard reset (QMP system_reset): the same', async () => {
  const bootId = amp.guest.run('cat /proc/sys/kernel/random/boot_id').stdout.trim();
  amp.guest.root('sync');
  const since = Date.now();
  await amp.vm!.qmp.execute('system_reset');
  await backWithoutController('hard reset', bootId, since);
});

test.run();
