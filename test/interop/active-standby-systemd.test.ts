// ACTIVE_STANDBY under systemd (issue 15, scenario 4): two amphorae, each the
// CI image booted by systemd-nspawn with this checkout's agent
// (test/helpers/active-standby-systemd.ts), set up through Octavia 16's
// controller code like the direct rig (active-standby.test.ts), with the
// client load from a third namespace (100 new connections/s, 3 s timeout).
// haproxy and keepalived are the units the agent writes; systemd, not the
// agent, restarts a haproxy that died (haproxy-<lb>.service: Restart=always,
// RestartSec=100ms).
// 1. No false failover: the agent restarted by systemd, then a planned
//    reload, on the master: no VIP move, not one failed request.
// 2. The master's haproxy master process killed (SIGKILL): systemd starts it
//    again, no VIP move, a loss window under 1 s.
// 3. haproxy stopped for good through the API on the master: the agent's
//    track file moves the VIP to the backup within 1.5 s.
//
// Runs alone with `node dist/test/run.js active-standby-systemd`; the image
// comes from image-build/build.sh ci (reused when built from the same inputs;
// AMPHORA_IMAGE_TAR=<tar> takes a given CI image, since the agent code comes
// from the checkout anyway).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { loadBalancerFiles } from '../../agent/haproxy/layout.js';
import { currentWorker, masterCommand, parseShowProc } from '../../agent/haproxy/process/master-cli.js';
import { BASE_PATH, SystemdActiveStandbyRig, type ContainerAmphora } from '../helpers/active-standby-systemd.js';
import { CLIENT_SOURCES, figures, vipArrival, type LbSpec } from '../helpers/active-standby.js';
import { ciImageTar, ImageRoot } from '../helpers/amphora-container.js';
import { OCTAVIAS } from '../helpers/haproxies.js';
import { loud } from '../helpers/hooks.js';
import { sleep, waitFor } from '../helpers/load.js';
import { testPorts } from '../helpers/ports.js';

const PORT = testPorts('active-standby-systemd').one();
const LB: LbSpec = {
  lbId: 'a5a5a5a5-0000-4000-8000-5d0000000001',
  listenerId: 'b5b5b5b5-0000-4000-8000-5d0000000001',
  poolId: 'c5c5c5c5-0000-4000-8000-5d0000000001',
  port: 80,
  persistence: 'SOURCE_IP',
};
const UNIT = `haproxy-${LB.lbId}.service`;
/** trixie's controller, for trixie's image. */
const RELEASE = OCTAVIAS.find((o) => o.label === 'octavia-16') ?? OCTAVIAS[0]!;

const test = suite(`ACTIVE_STANDBY under systemd (image containers, ${RELEASE.label})`);
let image: ImageRoot | null = null;
let rig: SystemdActiveStandbyRig;
/** The image's haproxy (major.minor), for the templater. */
let haproxyVersion = '';

test.before(
  loud(async () => {
    const started = Date.now();
    const { tar, summary } = ciImageTar();
    console.log(summary);
    image = ImageRoot.extract(tar);
    rig = await SystemdActiveStandbyRig.create(image, RELEASE, PORT);
    console.log(`[${rig.label}] two containers booted, agents up and amphorae plugged in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }),
);

test.after(async () => {
  await rig?.destroy();
  image?.remove();
});

const trackFile = (amp: ContainerAmphora) => amp.container.path(`${BASE_PATH}/vrrp/haproxy.track`);

test("set up through the controller: haproxy and keepalived run as the agent's systemd units, one VIP holder", async () => {
  haproxyVersion = /HAProxy version (\d+\.\d+)/.exec(rig.a.container.exec(['/usr/sbin/haproxy', '-v']))![1]!;
  await rig.deployListener(LB, haproxyVersion);
  await rig.deployVrrp(LB);
  const master = await rig.master(15_000);
  console.log(`[${rig.label}] haproxy ${haproxyVersion}; initial master: ${master.name}`);
  for (const amp of rig.amphorae) {
    const unit = rig.haproxyUnit(amp, LB.lbId);
    assert.is(unit.state, 'active/running', `amphora ${amp.name}: ${UNIT} ${unit.state}`);
    assert.is(amp.container.unitProperty('octavia-keepalived.service', 'ActiveState'), 'active');
    // The unit the agent wrote restarts a dead haproxy after 100 ms.
    assert.is(amp.container.unitProperty(UNIT, 'Restart'), 'always');
    assert.is(amp.container.unitProperty(UNIT, 'RestartUSec'), '100ms');
    assert.is(readFileSync(trackFile(amp), 'utf8').trim(), '0');
  }
});

/** An amphora's haproxy as its master CLI lists it (pids in the container's namespace), through the overlay from the host. */
async function processTable(amp: ContainerAmphora) {
  const socket = loadBalancerFiles(amp.container.path(BASE_PATH), LB.lbId).masterSocket;
  const table = parseShowProc(await masterCommand(socket, 'show proc', 3000));
  if (!table) throw new Error(`amphora ${amp.name}: no haproxy master`);
  return { masterPid: table.masterPid, reloads: table.reloads, worker: currentWorker(table) };
}

test('agent restarted by systemd, then a planned reload, on the master: no VIP move, 0 failed, haproxy kept', async () => {
  const master = await rig.master();
  const before = rig.haproxyUnit(master, LB.lbId);
  const procBefore = await processTable(master);
  const load = rig.load({ sources: CLIENT_SOURCES }).start();
  let lost = false;
  let watching = true;
  const watch = (async () => {
    while (watching) {
      if (!rig.holdsVip(master)) lost = true;
      await sleep(50);
    }
  })();
  let t0 = 0;
  const steps: string[] = [];
  try {
    await waitFor('the load to run', () => load.records.length >= 150, 10_000, 50);
    t0 = Date.now();
    master.container.exec(['systemctl', 'restart', 'amphora-agent.service']);
    await waitFor(
      'the agent to answer again',
      () =>
        master.peer.call('get_info').then(
          () => true,
          () => false,
        ),
      30_000,
      200,
    );
    steps.push(`agent answering again ${Date.now() - t0} ms after the restart`);
    // Longer than a VRRP check interval with the agent back.
    await sleep(6000);
    const reloadAt = Date.now();
    await rig.deployListenerTo(master, { ...LB, connectionLimit: 2001 }, haproxyVersion);
    steps.push(`config uploaded and reloaded in ${Date.now() - reloadAt} ms`);
    await sleep(6000);
  } finally {
    watching = false;
    await watch;
    await load.stop();
  }
  const f = figures(rig, 'agent restarted by systemd, then a planned reload, on the master', load.records, t0, null);
  const after = rig.haproxyUnit(master, LB.lbId);
  const procAfter = await processTable(master);
  console.log(
    `[${rig.label}] ${steps.join('; ')}; ${UNIT}: main pid ${before.mainPid} -> ${after.mainPid}, restarts ${before.restarts} -> ${after.restarts}, ` +
      `worker ${procBefore.worker} -> ${procAfter.worker}, reloads ${procBefore.reloads} -> ${procAfter.reloads}`,
  );
  assert.not.ok(lost, 'the VIP left the master');
  assert.is(f.failed.length, 0);
  // The agent's restart changed nothing; the reload made one new worker under the same master.
  assert.is(after.mainPid, before.mainPid);
  assert.is(after.restarts, before.restarts);
  assert.is(procAfter.reloads, procBefore.reloads + 1);
  assert.is.not(procAfter.worker, procBefore.worker);
  assert.is(after.state, 'active/running');
  assert.is(readFileSync(trackFile(master), 'utf8').trim(), '0');
});

test("haproxy's master process SIGKILLed on the master: systemd restarts it, no VIP move, loss window under 1 s", async () => {
  const master = await rig.master();
  const before = rig.haproxyUnit(master, LB.lbId);
  const load = rig.load({ sources: CLIENT_SOURCES }).start();
  let moved = false;
  let t0 = 0;
  let restartedAt: number | null = null;
  try {
    await waitFor('the load to run', () => load.records.length >= 150, 10_000, 50);
    t0 = Date.now();
    master.container.exec(['kill', '-9', String(before.mainPid)]);
    // Two VRRP check intervals (5 s, fall 2 would move the VIP after 10 s
    // without a restart) are more than this watch; the track file would
    // move it at once if the agent took the death for a stop.
    const deadline = t0 + 6000;
    while (Date.now() < deadline) {
      if (!rig.holdsVip(master)) moved = true;
      if (restartedAt === null) {
        const now = rig.haproxyUnit(master, LB.lbId);
        if (now.mainPid !== before.mainPid && now.state === 'active/running') restartedAt = Date.now();
      }
      await sleep(50);
    }
  } finally {
    await load.stop();
  }
  const f = figures(rig, 'haproxy master SIGKILLed on the master (systemd restarts it)', load.records, t0, null);
  const after = rig.haproxyUnit(master, LB.lbId);
  console.log(
    `[${rig.label}] ${UNIT} on ${master.name}: main pid ${before.mainPid} -> ${after.mainPid}, restarts ${before.restarts} -> ${after.restarts}, ` +
      `active again ${restartedAt === null ? 'never' : `${restartedAt - t0} ms`} after the kill (as polled every 50 ms)`,
  );
  assert.not.ok(moved, 'the VIP left the master');
  assert.is(after.state, 'active/running');
  assert.is(after.restarts, before.restarts + 1, 'systemd did not restart haproxy (once)');
  assert.is(readFileSync(trackFile(master), 'utf8').trim(), '0', 'the agent took the death for a stop');
  assert.ok(f.longestGapMs < 1000, `longest gap between successes ${f.longestGapMs} ms`);
  // From the first request the restarted haproxy answered, every one succeeds.
  const back = Math.min(...load.records.filter((r) => r.status === 200 && r.start > t0).map((r) => r.start));
  assert.is(load.records.filter((r) => r.start >= back && r.status !== 200).length, 0, `failed after +${back - t0} ms`);
});

test("haproxy stopped for good through the API on the master: the agent's track file moves the VIP within 1.5 s", async () => {
  const master = await rig.master();
  const backup = rig.other(master);
  const load = rig.load({ sources: CLIENT_SOURCES }).start();
  let t0 = 0;
  let stoppedAt = 0;
  let movedAt: number | null = null;
  try {
    await waitFor('the load to run', () => load.records.length >= 150, 10_000, 50);
    t0 = Date.now();
    const arrival = vipArrival(rig, backup, 5000);
    // Octavia's 1.0 client has no stop call; its put() sends the agent's PUT .../stop.
    const r = (await master.peer.call('put', `loadbalancer/${LB.lbId}/stop`)) as { status: number };
    assert.is(r.status, 202);
    stoppedAt = Date.now();
    movedAt = await arrival;
    await sleep(3000);
  } finally {
    await load.stop();
  }
  const f = figures(rig, 'haproxy stopped through the API on the master', load.records, t0, movedAt);
  console.log(
    `[${rig.label}] stop call returned after ${stoppedAt - t0} ms; VIP on ${backup.name} ${movedAt === null ? 'never' : `${movedAt - stoppedAt} ms after`}`,
  );
  assert.is(rig.haproxyUnit(master, LB.lbId).state, 'inactive/dead');
  assert.is(readFileSync(trackFile(master), 'utf8').trim(), '1');
  assert.ok(movedAt !== null && movedAt - stoppedAt <= 1500, 'the VIP did not move within 1.5 s of the stop');
  assert.is(f.successAfterMove, 1);
  assert.equal(Object.keys(f.servedAfter), [backup.name]);
  // Started again: the unit runs and the track file is back to 0.
  await master.peer.call('start_listener', LB.lbId);
  await waitFor('the track file back to 0', () => readFileSync(trackFile(master), 'utf8').trim() === '0', 5000, 50);
  assert.is(rig.haproxyUnit(master, LB.lbId).state, 'active/running');
});

test.run();
