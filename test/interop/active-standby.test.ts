// ACTIVE_STANDBY for real: two amphorae (two agents) on one machine, set up
// through Octavia's controller code (test/helpers/active-standby.ts), a
// SOURCE_IP load balancer whose stick table the peers share, and failovers
// under constant load from a third namespace (100 new connections/s, 3 s
// timeout). Each scenario prints what it measured (VIP move time, longest
// gap between successful requests, failed requests and when, which amphora
// served) and asserts the bounds physics sets with Octavia's defaults
// (advert_int 1, check interval 5 s, fall 2): a dead master is replaced after
// 3 x advert + skew (about 3.65 s for priority 90), a clean handover costs
// the skew (about 0.65 s).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { workerCommand } from '../../agent/haproxy/master-cli.js';
import { loadBalancerFiles } from '../../agent/haproxy/layout.js';
import { HAPROXIES, INTEROP_PAIRS, type InteropPair } from '../helpers/haproxies.js';
import { loud } from '../helpers/hooks.js';
import { sleep, waitFor } from '../helpers/load.js';
import {
  ActiveStandbyRig, CLIENT_SOURCES, figures, vipArrival, type Amphora, type LbSpec, type LoadRecord,
} from '../helpers/active-standby.js';

const LB: LbSpec = {
  lbId: 'a5a5a5a5-0000-4000-8000-000000000001', listenerId: 'b5b5b5b5-0000-4000-8000-000000000001',
  poolId: 'c5c5c5c5-0000-4000-8000-000000000001', port: 80, persistence: 'SOURCE_IP',
};
const BACKEND = `${LB.poolId}:${LB.listenerId}`;

/** Full set on haproxy 2.6 (with Octavia 11); power-off, graceful stop and stickiness on 3.0 (16) and 3.2 (19). */
const PAIRS: { pair: InteropPair; full: boolean }[] = [
  { pair: INTEROP_PAIRS[0]!, full: true },
  { pair: INTEROP_PAIRS[1]!, full: false },
  { pair: INTEROP_PAIRS[2]!, full: false },
];

/**
 * Each client keeps, after the failover, the member its last request before
 * it went to (the entry the stick table held at the failover). Before that a
 * client may have changed member once (printed): its first answer can come
 * before the peers' initial resync settles.
 */
function assertSticky(records: LoadRecord[], t0: number, settle: number): void {
  for (const src of CLIENT_SOURCES) {
    const before = records.filter((r) => r.src === src && r.status === 200 && r.start < t0);
    const after = new Set(records.filter((r) => r.src === src && r.status === 200 && r.start >= settle).map((r) => r.member));
    assert.ok(before.length > 0 && after.size > 0, `${src}: no answer before or after the failover`);
    const held = before[before.length - 1]!.member;
    const changes = before.filter((r, i) => i > 0 && r.member !== before[i - 1]!.member).length;
    if (changes) console.log(`${src}: changed member ${changes} time(s) before the failover (${before.map((r) => r.member).join(' ')})`);
    assert.equal([...after], [held], `${src}: member ${held} at the failover, ${[...after].join(',')} after`);
  }
}

/** The stick table of an amphora's haproxy, read through its master CLI (the user-level stats socket hides entries). */
async function stickTable(amp: Amphora): Promise<string> {
  return workerCommand(loadBalancerFiles(amp.agent.basePath, LB.lbId).masterSocket, `show table ${BACKEND}`, 3000);
}

// Octavia 16 and later render `type ipv6`: IPv4 clients are keyed as ::ffff:a.b.c.d.
const tableKeys = (text: string) => new Set([...text.matchAll(/key=(\S+)/g)].map((m) => m[1]!.replace(/^::ffff:/, '')));

// AMPHORA_AS_ONLY=haproxy-2.6 runs one pair (while working on this file).
const only = process.env.AMPHORA_AS_ONLY;
for (const { pair, full } of PAIRS.filter((p) => !only || p.pair.haproxy.label === only)) {
  const { haproxy, octavia } = pair;
  const test = suite(`ACTIVE_STANDBY failover under load (${haproxy.label}, ${octavia.label})`);
  let rig: ActiveStandbyRig;
  const old = octavia.label === 'octavia-11';

  test.before(loud(async () => {
    rig = await ActiveStandbyRig.create(haproxy, octavia, 19943 + HAPROXIES.indexOf(haproxy));
  }));

  test.after(async () => {
    await rig?.destroy();
  });

  test('set up through the controller: haproxy with peers on both, keepalived from the templater, one VIP holder', async () => {
    const version = haproxy.label.replace('haproxy-', '');
    await rig.deployListener(LB, version);
    await rig.deployVrrp(LB);
    for (const amp of rig.amphorae) {
      const cfg = rig.vrrpConfig(amp);
      assert.match(cfg, new RegExp(`script ${join(amp.agent.basePath, 'vrrp', 'check_script.sh')}`));
      assert.match(cfg, new RegExp(`unicast_src_ip ${amp.vrrpIp.replace(/\./g, '\\.')}`));
      // Octavia 11 still renders the role as the initial state (which makes
      // keepalived ignore nopreempt on the MASTER); 16 and later do not.
      if (old) assert.match(cfg, new RegExp(`state ${amp === rig.a ? 'MASTER' : 'BACKUP'}`));
      else assert.not.match(cfg, /^\s*state /m);
    }
    const master = await rig.master(15_000);
    console.log(`[${haproxy.label} ${octavia.label}] initial master: ${master.name}`);
    // Both haproxies serve the VIP (the backup's binds it non-locally) and know their peer.
    for (const amp of rig.amphorae) assert.match(await stickTable(amp), /table: /);
  });

  async function handover(name: string, event: (master: Amphora) => Promise<void> | void, opts: { moveWithinMs: number; afterMs: number; release?: boolean }) {
    const master = await rig.master();
    const backup = rig.other(master);
    const load = rig.load({ sources: CLIENT_SOURCES }).start();
    await waitFor('the load to run', () => load.records.length >= 150, 10_000, 50);
    const t0 = Date.now();
    const arrival = vipArrival(rig, backup, opts.moveWithinMs + 3000);
    const release = opts.release ? vipArrival(rig, master, opts.moveWithinMs + 3000, false) : Promise.resolve(null);
    let movedAt: number | null;
    let releasedAt: number | null;
    try {
      await event(master);
      movedAt = await arrival;
      releasedAt = await release;
      await sleep(opts.afterMs);
    } finally {
      await load.stop();
    }
    const f = figures(rig, name, load.records, t0, movedAt, releasedAt);
    return { f, load, t0, movedAt, releasedAt, master, backup };
  }

  test('graceful stop of VRRP on the master: VIP moved within 1 s of the master letting it go, at most in-flight failures, clients keep their member', async () => {
    const { f, load, t0, movedAt, releasedAt, master, backup } = await handover('graceful VRRP stop', async (m) => {
      await m.peer.call('stop_vrrp');
    }, { moveWithinMs: 1000, afterMs: 3000, release: true });
    // Whatever is asserted below, the next scenarios need VRRP on both again.
    const restartAt = Date.now();
    const restarted = master.peer.call('start_vrrp');
    console.log(`[${haproxy.label} ${octavia.label}] stick table of ${master.name} before the VRRP restart:\n${await stickTable(master).catch(String)}`);
    await restarted;
    assert.ok(movedAt !== null && releasedAt !== null, 'the VIP did not move');
    // From the API call, the agent's stop and keepalived's shutdown come first (printed).
    assert.ok(movedAt! - releasedAt! <= 1000, `VIP on the backup ${movedAt! - releasedAt!} ms after the master let it go`);
    assert.ok(f.failed.length <= f.inFlightAtEvent, `${f.failed.length} failed, ${f.inFlightAtEvent} in flight`);
    assert.is(f.successAfterMove, 1);
    assert.equal(Object.keys(f.servedAfter), [backup.name]);
    assertSticky(load.records, t0, movedAt! + 1000);
    // Both tables hold every client: the peers kept them in step.
    for (const amp of rig.amphorae) {
      const keys = tableKeys(await stickTable(amp));
      for (const src of CLIENT_SOURCES) assert.ok(keys.has(src), `amphora ${amp.name}'s table lacks ${src}`);
    }
    // VRRP back on the old master: Octavia 11's "state MASTER" (priority
    // 100) preempts; 16 and later keep nopreempt, so the VIP stays.
    console.log(`[${haproxy.label} ${octavia.label}] VRRP started again on ${master.name} (MASTER role: ${master === rig.a})`);
    if (old && master === rig.a) {
      const back = await vipArrival(rig, master, 8000);
      console.log(`[${haproxy.label} ${octavia.label}] VRRP restarted on ${master.name}: VIP back after ${back === null ? 'never' : `${back - restartAt} ms`}`);
      assert.ok(back !== null, 'Octavia 11 renders state MASTER: the restarted master should preempt');
    } else {
      await sleep(6000);
      assert.ok(rig.holdsVip(backup) && !rig.holdsVip(master), 'the VIP moved back although nopreempt');
    }
    await rig.master();
  });

  if (full) {
    test('keepalived crash on the master (its VRRP child killed): no gap over 4.5 s, failures only while the VIP moves', async () => {
      const t0 = Date.now();
      const { f, load } = await handover('VRRP child killed on the master', (m) => {
        process.kill(rig.vrrpChildPid(m), 'SIGKILL');
      }, { moveWithinMs: 5000, afterMs: 7000 });
      // keepalived respawns its VRRP child at once, but the new child starts
      // in BACKUP and drops the VIP, so this is a master-down interval (3 x
      // advert + skew) like a power-off, not the 0 failures a surviving VIP
      // would give (measured on keepalived 2.2.7; printed above).
      const held = await rig.master(1000);
      console.log(`[${haproxy.label} ${octavia.label}] after the VRRP child crash amphora ${held.name} holds the VIP`);
      // With Octavia 11's "state MASTER" the respawned child of the MASTER-role
      // amphora also takes the VIP back from the backup (priority 100 over
      // 90): a second, clean handover can follow the first within a second.
      const last = f.failed.reduce((m, x) => Math.max(m, x.offsetMs), -Infinity);
      // Its in-flight failures come at a varying moment (seen up to 5-7 s).
      assert.ok(f.failed.length === 0 || last <= 8000, `a request failed ${last} ms after the crash`);
      assert.ok(f.longestGapMs <= 4500, `longest gap ${f.longestGapMs} ms`);
      // Settled after both handovers: every request from 8 s on succeeds.
      const late = load.records.filter((r) => r.start >= t0 + 8000);
      assert.ok(late.length > 0 && late.every((r) => r.status === 200), `${late.filter((r) => r.status !== 200).length} failed after 8 s`);
    });
  }

  if (full) {
    test('haproxy killed on the master: restarted by the agent, no VIP move, loss window measured', async () => {
      const master = await rig.master();
      const load = rig.load({ sources: CLIENT_SOURCES }).start();
      let moved = false;
      try {
        await waitFor('the load to run', () => load.records.length >= 150, 10_000, 50);
        const t0 = Date.now();
        // Every process of this load balancer's haproxy (master and worker): their command lines name its config.
        const pids = execFileSync('ip', ['netns', 'pids', master.netns], { encoding: 'utf8' }).split('\n').filter(Boolean)
          .filter((pid) => {
            try {
              return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(LB.lbId);
            } catch {
              return false;
            }
          });
        assert.ok(pids.length >= 2, `haproxy processes: ${pids.join(',')}`);
        for (const pid of pids) process.kill(Number(pid), 'SIGKILL');
        // Watch the VIP for two VRRP check intervals (5 s, fall 2 would need 10 s to move it).
        const deadline = t0 + 8000;
        while (Date.now() < deadline) {
          if (!rig.holdsVip(master)) moved = true;
          await sleep(50);
        }
        await load.stop();
        const f = figures(rig, 'haproxy SIGKILLed on the master', load.records, t0, null);
        assert.not.ok(moved, 'the VIP left the master');
        // Direct supervision looks every 2 s (under systemd, Restart=always); the
        // issue's target of under 1 s needs the engine's watchdog.
        assert.ok(f.longestGapMs < 3500, `longest gap ${f.longestGapMs} ms`);
        // No VIP move to settle after: from the first request the restarted haproxy answered, every one succeeds.
        const back = Math.min(...load.records.filter((r) => r.status === 200 && r.start > t0).map((r) => r.start));
        const afterRestart = load.records.filter((r) => r.start >= back);
        assert.is(afterRestart.filter((r) => r.status !== 200).length, 0, `failed after the restart at +${back - t0} ms`);
      } finally {
        await load.stop();
      }
    });
  }

  if (full) {
    test('haproxy stopped for good through the API on the master: the agent\'s track file moves the VIP within 1.5 s', async () => {
      let stoppedAt = 0;
      const { f, t0, movedAt, master, backup } = await handover('haproxy stopped through the API on the master', async (m) => {
        // Octavia's 1.0 client has no stop call (its controller never stops a
        // listener); its put() sends the agent's PUT .../stop.
        const r = await m.peer.call('put', `loadbalancer/${LB.lbId}/stop`) as { status: number };
        assert.is(r.status, 202);
        stoppedAt = Date.now();
      }, { moveWithinMs: 1500, afterMs: 3000 });
      console.log(`[${haproxy.label} ${octavia.label}] stop call returned after ${stoppedAt - t0} ms; VIP on ${backup.name} ${movedAt === null ? 'never' : `${movedAt - stoppedAt} ms after`}`);
      assert.ok(movedAt !== null && movedAt - stoppedAt <= 1500, 'the VIP did not move within 1.5 s of the stop');
      assert.is(f.successAfterMove, 1);
      assert.equal(Object.keys(f.servedAfter), [backup.name]);
      // Started again: the track file goes back to 0 and the amphora can be master again.
      await master.peer.call('start_listener', LB.lbId);
      await waitFor('the track file back to 0', () => readFileSync(join(master.agent.basePath, 'vrrp', 'haproxy.track'), 'utf8').trim() === '0', 5000, 50);
      // Octavia 11's MASTER role (state MASTER, priority 100) takes the VIP
      // back once out of FAULT; wait for that, so the next scenario starts settled.
      if (old && master === rig.a) assert.ok(await vipArrival(rig, master, 8000), 'the MASTER role did not take the VIP back');
      await rig.master();
    });
  }

  test('master power-off: VIP on the backup within 4 s, no failure outside that window, 100% after, clients keep their member', async () => {
    const { f, load, t0, movedAt, backup } = await handover('master power-off', (m) => rig.powerOff(m), { moveWithinMs: 4000, afterMs: 4000 });
    assert.ok(movedAt !== null && f.vipMoveMs! <= 4000, `VIP moved after ${f.vipMoveMs} ms`);
    for (const x of f.failed) assert.ok(x.offsetMs >= -3000 && x.offsetMs <= f.vipMoveMs!, `a request failed at ${x.offsetMs} ms (VIP moved at ${f.vipMoveMs} ms)`);
    assert.is(f.successAfterMove, 1);
    assert.equal(Object.keys(f.servedAfter), [backup.name]);
    assertSticky(load.records, t0, movedAt! + 1000);
  });

  test.run();
}
