// ACTIVE_STANDBY for real: two amphorae (two agents) on one machine, set up
// through Octavia's controller code (test/helpers/active-standby.ts), a
// SOURCE_IP load balancer whose stick table the peers share, and failovers
// under constant load from a third namespace (100 new connections/s, 3 s
// timeout). Each scenario prints what it measured (VIP move time, longest
// gap between successful requests, failed requests and when, which amphora
// served) and asserts the bounds physics sets with Octavia's defaults
// (advert_int 1, check interval 5 s, fall 2): a dead master is replaced after
// 3 x advert + skew (about 3.65 s for priority 90), a clean handover costs
// the skew (about 0.65 s), a hung haproxy costs its failing checks. Besides
// the failovers: the agent stopped and started again, planned reloads, a VIP
// link down, a partition with links up, and an APP_COOKIE second listener.
// Last, a listener pushed while the master dies (issue scenario 9).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { currentWorker, masterCommand, parseShowProc, workerCommand } from '../../agent/haproxy/process/master-cli.js';
import { loadBalancerFiles } from '../../agent/haproxy/layout.js';
import { HAPROXIES, INTEROP_PAIRS, type InteropPair } from '../helpers/haproxies.js';
import { loud } from '../helpers/hooks.js';
import { sleep, waitFor } from '../helpers/load.js';
import {
  ActiveStandbyRig,
  CLIENT_SOURCES,
  SESSION_COOKIE,
  figures,
  vipArrival,
  type Amphora,
  type LbSpec,
  type ListenerSpec,
  type LoadRecord,
} from '../helpers/active-standby.js';

const LB: LbSpec = {
  lbId: 'a5a5a5a5-0000-4000-8000-000000000001',
  listenerId: 'b5b5b5b5-0000-4000-8000-000000000001',
  poolId: 'c5c5c5c5-0000-4000-8000-000000000001',
  port: 80,
  persistence: 'SOURCE_IP',
};
const BACKEND = `${LB.poolId}:${LB.listenerId}`;
/** A second listener and pool on the same load balancer, with APP_COOKIE persistence (full set only). */
const COOKIE_LISTENER: ListenerSpec = {
  listenerId: 'b5b5b5b5-0000-4000-8000-000000000002',
  poolId: 'c5c5c5c5-0000-4000-8000-000000000002',
  port: 8080,
  persistence: 'APP_COOKIE',
  cookieName: SESSION_COOKIE,
};
/** The listener pushed while the master dies (scenario 9). */
const NEW_LISTENER: ListenerSpec = {
  listenerId: 'b5b5b5b5-0000-4000-8000-000000000003',
  poolId: 'c5c5c5c5-0000-4000-8000-000000000003',
  port: 8090,
};
const backendOf = (l: ListenerSpec) => `${l.poolId}:${l.listenerId}`;
// Octavia's defaults, which its KeepalivedJinjaTemplater renders (vrrp_check_interval, vrrp_fail_count, advert_int).
const CHECK_INTERVAL_MS = 5000;
const CHECK_FALL = 2;
const ADVERT_MS = 1000;
/** keepalived's skew for priority 90: (256 - 90) / 256 x advert. */
const SKEW_MS = Math.round(((256 - 90) / 256) * ADVERT_MS);

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
  const moved = stickyChanges(records, t0, settle);
  assert.equal(moved, [], moved.join('; '));
}

/** The clients that did not keep their member (assertSticky's rule), each with what it got from t0 on. */
function stickyChanges(records: LoadRecord[], t0: number, settle: number): string[] {
  const moved: string[] = [];
  for (const src of CLIENT_SOURCES) {
    const before = records.filter((r) => r.src === src && r.status === 200 && r.start < t0);
    const after = new Set(records.filter((r) => r.src === src && r.status === 200 && r.start >= settle).map((r) => r.member));
    assert.ok(before.length > 0 && after.size > 0, `${src}: no answer before or after the failover`);
    const held = before[before.length - 1]!.member;
    const changes = before.filter((r, i) => i > 0 && r.member !== before[i - 1]!.member).length;
    if (changes) console.log(`${src}: changed member ${changes} time(s) before the failover (${before.map((r) => r.member).join(' ')})`);
    if (after.size === 1 && after.has(held)) continue;
    const timeline = records
      .filter((r) => r.src === src && r.start >= t0)
      .sort((a, b) => a.start - b.start)
      .slice(0, 12)
      .map((r) => `+${r.start - t0}:${r.member ?? r.error}`);
    moved.push(`${src}: member ${held} at the failover, ${[...after].join(',')} after (${timeline.join(' ')})`);
  }
  return moved;
}

/** The stick table of an amphora's haproxy, read through its master CLI (the user-level stats socket hides entries). */
async function stickTable(amp: Amphora, backend = BACKEND): Promise<string> {
  return workerCommand(loadBalancerFiles(amp.agent.basePath, LB.lbId).masterSocket, `show table ${backend}`, 3000);
}

/** An amphora's haproxy as its master CLI lists it: the master pid, its reload count and the workers. */
async function processTable(amp: Amphora) {
  const table = parseShowProc(await masterCommand(loadBalancerFiles(amp.agent.basePath, LB.lbId).masterSocket, 'show proc', 3000));
  if (!table) throw new Error(`amphora ${amp.name}: no haproxy master`);
  return { masterPid: table.masterPid, reloads: table.reloads, worker: currentWorker(table) };
}

/** Watches, every 50 ms until stopped, whether `amp` ever lost the VIP. */
function vipWatch(rig: ActiveStandbyRig, amp: Amphora): { stop(): Promise<boolean> } {
  let running = true;
  let lost = false;
  const done = (async () => {
    while (running) {
      if (!rig.holdsVip(amp)) lost = true;
      await sleep(50);
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      return lost;
    },
  };
}

/** How long a call takes (ms), and what it threw (null: none). */
async function timed(fn: () => Promise<unknown>): Promise<{ ms: number; error: string | null }> {
  const start = Date.now();
  try {
    await fn();
    return { ms: Date.now() - start, error: null };
  } catch (err) {
    return { ms: Date.now() - start, error: (err as Error).message.split('\n')[0]! };
  }
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

  test.before(
    loud(async () => {
      rig = await ActiveStandbyRig.create(haproxy, octavia, 19943 + HAPROXIES.indexOf(haproxy));
    }),
  );

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

  async function handover(
    name: string,
    event: (master: Amphora) => Promise<void> | void,
    opts: { moveWithinMs: number; afterMs: number; release?: boolean; port?: number; cookie?: boolean },
  ) {
    const master = await rig.master();
    const backup = rig.other(master);
    const load = rig.load({ sources: CLIENT_SOURCES, cookie: opts.cookie }, opts.port).start();
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

  /**
   * After the old master can be master again: Octavia 11's MASTER role
   * (state MASTER, priority 100) takes the VIP back, so wait for that (up to
   * `withinMs`); then exactly one holder, so the next scenario starts settled.
   */
  async function settle(oldMaster: Amphora, withinMs = 8000): Promise<void> {
    if (old && oldMaster === rig.a) {
      const back = await vipArrival(rig, oldMaster, withinMs);
      assert.ok(back !== null, `the MASTER role (${oldMaster.name}) did not take the VIP back within ${withinMs} ms`);
    }
    await rig.master();
  }

  test('graceful stop of VRRP on the master: VIP moved within 1 s of the master letting it go, at most in-flight failures, clients keep their member', async () => {
    const { f, load, t0, movedAt, releasedAt, master, backup } = await handover(
      'graceful VRRP stop',
      async (m) => {
        await m.peer.call('stop_vrrp');
      },
      { moveWithinMs: 1000, afterMs: 3000, release: true },
    );
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
      const { f, load } = await handover(
        'VRRP child killed on the master',
        (m) => {
          process.kill(rig.vrrpChildPid(m), 'SIGKILL');
        },
        { moveWithinMs: 5000, afterMs: 7000 },
      );
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
        // Every process of this load balancer's haproxy (master and worker).
        const pids = rig.haproxyPids(master, LB.lbId);
        assert.ok(pids.length >= 2, `haproxy processes: ${pids.join(',')}`);
        for (const pid of pids) process.kill(pid, 'SIGKILL');
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
    test("haproxy stopped for good through the API on the master: the agent's track file moves the VIP within 1.5 s", async () => {
      let stoppedAt = 0;
      const { f, t0, movedAt, master, backup } = await handover(
        'haproxy stopped through the API on the master',
        async (m) => {
          // Octavia's 1.0 client has no stop call (its controller never stops a
          // listener); its put() sends the agent's PUT .../stop.
          const r = (await m.peer.call('put', `loadbalancer/${LB.lbId}/stop`)) as { status: number };
          assert.is(r.status, 202);
          stoppedAt = Date.now();
        },
        { moveWithinMs: 1500, afterMs: 3000 },
      );
      console.log(
        `[${haproxy.label} ${octavia.label}] stop call returned after ${stoppedAt - t0} ms; VIP on ${backup.name} ${movedAt === null ? 'never' : `${movedAt - stoppedAt} ms after`}`,
      );
      assert.ok(movedAt !== null && movedAt - stoppedAt <= 1500, 'the VIP did not move within 1.5 s of the stop');
      assert.is(f.successAfterMove, 1);
      assert.equal(Object.keys(f.servedAfter), [backup.name]);
      // Started again: the track file goes back to 0 and the amphora can be master again.
      await master.peer.call('start_listener', LB.lbId);
      await waitFor('the track file back to 0', () => readFileSync(join(master.agent.basePath, 'vrrp', 'haproxy.track'), 'utf8').trim() === '0', 5000, 50);
      await settle(master);
    });
  }

  if (full) {
    test('hung haproxy on the master (SIGSTOP): the VRRP check times out, the VIP moves within the check bound, the agent answers', async () => {
      let hung: number[] = [];
      let calls: Record<string, { ms: number; error: string | null }> = {};
      // Octavia renders no check timeout: keepalived's is the interval. The
      // first failing run starts within an interval of the hang (one may have
      // just passed) and fails a timeout later; keepalived starts runs every
      // interval but skips one that comes due while the last is being timed
      // out, so each further failure can take two intervals. Then FAULT (a
      // priority 0 advert) and the backup's skew.
      const bound = 2 * CHECK_FALL * CHECK_INTERVAL_MS + SKEW_MS + 500;
      try {
        const { f, movedAt, t0, master, backup } = await handover(
          'haproxy hung (SIGSTOP) on the master',
          async (m) => {
            hung = rig.haproxyPids(m, LB.lbId);
            assert.ok(hung.length >= 2, `haproxy processes: ${hung.join(',')}`);
            for (const pid of hung) process.kill(pid, 'SIGSTOP');
            // The agent's calls that read haproxy's sockets, while it hangs.
            await sleep(1000);
            calls = {
              listeners: await timed(() => m.peer.call('get_all_listeners')),
              details: await timed(() => m.peer.call('get_details')),
              info: await timed(() => m.peer.call('get_info')),
            };
          },
          { moveWithinMs: bound, afterMs: 3000 },
        );
        console.log(
          `[${haproxy.label} ${octavia.label}] API calls to ${master.name} during the hang: ${JSON.stringify(calls)}; VIP on ${backup.name} after ${movedAt === null ? 'never' : `${movedAt - t0} ms`} (bound ${bound} ms)`,
        );
        for (const [name, c] of Object.entries(calls)) assert.ok(c.error === null && c.ms <= 5000, `${name}: ${c.ms} ms, ${c.error}`);
        assert.ok(movedAt !== null && f.vipMoveMs! <= bound, `VIP moved after ${f.vipMoveMs} ms (bound ${bound} ms)`);
        assert.ok(f.vipMoveMs! >= CHECK_FALL * CHECK_INTERVAL_MS - 1000, `VIP moved after ${f.vipMoveMs} ms, before the check could fail ${CHECK_FALL} times`);
        assert.is(f.successAfterMove, 1);
        assert.equal(Object.keys(f.servedAfter), [backup.name]);
        const resumed = hung.splice(0).sort();
        for (const pid of resumed) process.kill(pid, 'SIGCONT');
        // The same haproxy runs on (the supervisor did not start a second one) and answers again.
        await waitFor(
          'the resumed haproxy to answer',
          () =>
            processTable(master).then(
              () => true,
              () => false,
            ),
          5000,
          100,
        );
        assert.equal(rig.haproxyPids(master, LB.lbId).sort(), resumed);
        // Out of FAULT after rise (2) passing checks.
        await settle(master, 4 * CHECK_INTERVAL_MS);
      } finally {
        for (const pid of hung) process.kill(pid, 'SIGCONT');
      }
    });
  }

  if (full) {
    test('agent stopped on the master (SIGTERM): haproxy and the VIP untouched, 0 failed, no reload when it starts again', async () => {
      const master = await rig.master();
      const before = await processTable(master);
      const pids = rig.haproxyPids(master, LB.lbId).sort();
      const load = rig.load({ sources: CLIENT_SOURCES }).start();
      const watch = vipWatch(rig, master);
      let t0 = 0;
      let stoppedMs = 0;
      let startedMs = 0;
      try {
        await waitFor('the load to run', () => load.records.length >= 150, 10_000, 50);
        t0 = Date.now();
        await master.agent.stop();
        stoppedMs = Date.now() - t0;
        // Longer than fall x interval: the VRRP check would have failed by now if it needed the agent.
        await sleep(CHECK_FALL * CHECK_INTERVAL_MS + 1000);
        assert.equal(rig.haproxyPids(master, LB.lbId).sort(), pids, 'haproxy changed while the agent was down');
        const restartAt = Date.now();
        await rig.startAgentAgain(master);
        startedMs = Date.now() - restartAt;
        // Two passes of the direct supervisor (every 2 s) with the agent back.
        await sleep(5000);
      } finally {
        await load.stop();
      }
      const lost = await watch.stop();
      const f = figures(rig, 'agent stopped and started again on the master', load.records, t0, null);
      const after = await processTable(master);
      console.log(
        `[${haproxy.label} ${octavia.label}] agent on ${master.name}: stopped in ${stoppedMs} ms, listening again ${startedMs} ms after its start; ` +
          `haproxy master ${before.masterPid} -> ${after.masterPid}, worker ${before.worker} -> ${after.worker}, reloads ${before.reloads} -> ${after.reloads}`,
      );
      assert.not.ok(lost, 'the VIP left the master');
      assert.is(f.failed.length, 0);
      assert.equal(after, before, 'haproxy was restarted or reloaded');
      assert.equal(rig.haproxyPids(master, LB.lbId).sort(), pids);
      assert.is(readFileSync(join(master.agent.basePath, 'vrrp', 'haproxy.track'), 'utf8').trim(), '0');
      // The agent answers the controller as before.
      const listeners = (await master.peer.call('get_all_listeners')) as { uuid: string; status: string }[];
      assert.ok(
        listeners.some((l) => l.status === 'ACTIVE'),
        JSON.stringify(listeners),
      );
    });
  }

  if (full) {
    test('planned reloads of both amphorae (one after the other, in parallel) and a VRRP reload: 0 failed, no VIP move', async () => {
      const version = haproxy.label.replace('haproxy-', '');
      const master = await rig.master();
      const keepalivedPid = (amp: Amphora) => readFileSync(join(amp.agent.basePath, 'vrrp', 'octavia-keepalived.pid'), 'utf8').trim();
      const keepalived = rig.amphorae.map(keepalivedPid);
      const load = rig.load({ sources: CLIENT_SOURCES }).start();
      const watch = vipWatch(rig, master);
      const workers: Record<string, (number | null)[]> = { A: [], B: [] };
      const worker = async () => {
        for (const amp of rig.amphorae) workers[amp.name]!.push((await processTable(amp)).worker);
      };
      let t0 = 0;
      const steps: string[] = [];
      try {
        await waitFor('the load to run', () => load.records.length >= 150, 10_000, 50);
        t0 = Date.now();
        await worker();
        // Octavia's listener update: the new config uploaded and reloaded on each amphora in turn.
        for (const amp of rig.amphorae) await rig.deployListenerTo(amp, { ...LB, connectionLimit: 2001 }, version);
        steps.push(`one after the other done at +${Date.now() - t0} ms`);
        await worker();
        await sleep(1000);
        await Promise.all(rig.amphorae.map((amp) => rig.deployListenerTo(amp, { ...LB, connectionLimit: 2002 }, version)));
        steps.push(`in parallel done at +${Date.now() - t0} ms`);
        await worker();
        await sleep(1000);
        for (const amp of rig.amphorae) await amp.peer.call('reload_vrrp');
        steps.push(`VRRP reloaded on both at +${Date.now() - t0} ms`);
        // An advert interval and a VRRP check interval for any consequence of the reload to show.
        await sleep(CHECK_INTERVAL_MS + 1000);
      } finally {
        await load.stop();
      }
      const lost = await watch.stop();
      const f = figures(rig, 'planned reloads of both amphorae and a VRRP reload', load.records, t0, null);
      console.log(
        `[${haproxy.label} ${octavia.label}] ${steps.join(', ')}; workers ${JSON.stringify(workers)}; keepalived ${keepalived.join(',')} -> ${rig.amphorae.map(keepalivedPid).join(',')}`,
      );
      assert.not.ok(lost, 'the VIP left the master');
      assert.is(f.failed.length, 0);
      // Printed, not asserted: a client can change member across a reload.
      // The old worker teaches its table to the new one only after the new
      // one serves; a client arriving in between is balanced afresh, and
      // that entry stays (haproxy's own race, Octavia's agent alike). The
      // agent's part, a complete table to teach, is asserted in
      // integration/stick-tables-reload.
      const moved = stickyChanges(load.records, t0, t0);
      console.log(
        `[${haproxy.label} ${octavia.label}] across the reloads ${moved.length} of ${CLIENT_SOURCES.length} clients changed member${moved.length ? `: ${moved.join('; ')}` : ''}`,
      );
      // Each planned reload started a new worker on both.
      for (const amp of rig.amphorae) assert.is(new Set(workers[amp.name]).size, 3, `amphora ${amp.name}'s workers: ${workers[amp.name]!.join(',')}`);
      // The VRRP reload kept keepalived (a reload, not a restart).
      assert.equal(rig.amphorae.map(keepalivedPid), keepalived);
      assert.ok(rig.holdsVip(master) && !rig.holdsVip(rig.other(master)));
    });
  }

  if (full) {
    test('VIP link down on the master: the backup takes the VIP (master-down interval); link up restores the amphora', async () => {
      let routes: string[] = [];
      let downed: Amphora | null = null;
      try {
        const { f, movedAt, master, backup } = await handover(
          'VIP link down on the master',
          (m) => {
            downed = m;
            routes = rig.vipLinkDown(m);
          },
          { moveWithinMs: 4000, afterMs: 3000 },
        );
        // No goodbye advert over a dead link: 3 x advert + skew after the last advert it sent.
        assert.ok(movedAt !== null && f.vipMoveMs! <= 4000, `VIP moved after ${f.vipMoveMs} ms`);
        assert.ok(f.vipMoveMs! >= 2 * ADVERT_MS + SKEW_MS - 100, `VIP moved after ${f.vipMoveMs} ms, sooner than the master-down interval allows`);
        assert.is(f.successAfterMove, 1);
        assert.equal(Object.keys(f.servedAfter), [backup.name]);
        const restored = rig.vipLinkUp(master, routes);
        downed = null;
        console.log(`[${haproxy.label} ${octavia.label}] link up on ${master.name}: routes added back: ${restored.length ? restored.join('; ') : 'none'}`);
        await settle(master);
        // Served through the VIP again, whoever holds it.
        const load = rig.load({ sources: CLIENT_SOURCES }).start();
        await sleep(2000);
        await load.stop();
        assert.ok(load.records.length > 0 && load.records.every((r) => r.status === 200), 'requests failed after the link came back');
      } finally {
        if (downed) rig.vipLinkUp(downed, routes);
      }
    });

    test('partition with the link up (VRRP cut between the amphorae): split brain, then one VIP holder within 1.5 s of healing', async () => {
      const master = await rig.master();
      const backup = rig.other(master);
      const load = rig.load({ sources: CLIENT_SOURCES }).start();
      let healedAt = 0;
      let oneAt: number | null = null;
      let partitioned = false;
      let t0 = 0;
      let split: number | null = null;
      try {
        await waitFor('the load to run', () => load.records.length >= 150, 10_000, 50);
        t0 = Date.now();
        rig.partition(master);
        partitioned = true;
        // The backup hears no advert: master-down interval, then both hold the VIP.
        split = await vipArrival(rig, backup, 3 * ADVERT_MS + SKEW_MS + 2000);
        const holdersDuring = rig.vipHolders().map((a) => a.name);
        await sleep(2000);
        rig.heal(master);
        partitioned = false;
        healedAt = Date.now();
        oneAt = await waitFor('exactly one VIP holder', () => (rig.vipHolders().length === 1 ? Date.now() : null), 5000, 20).catch(() => null);
        console.log(
          `[${haproxy.label} ${octavia.label}] partition at ${master.name}: ${backup.name} took the VIP after ${split === null ? 'never' : `${split - t0} ms`}, ` +
            `holders during the partition ${holdersDuring.join('+')}; one holder (${rig
              .vipHolders()
              .map((a) => a.name)
              .join('+')}) ${oneAt === null ? 'never' : `${oneAt - healedAt} ms`} after healing`,
        );
        // It stays one.
        const deadline = Date.now() + 3000;
        while (Date.now() < deadline) {
          assert.is(rig.vipHolders().length, 1, 'a second VIP holder after healing');
          await sleep(50);
        }
      } finally {
        if (partitioned) rig.heal(master);
        await load.stop();
      }
      const f = figures(rig, 'partition (VRRP cut, links up), healed', load.records, t0, split, null);
      assert.ok(split !== null, 'the backup did not take the VIP during the partition');
      assert.ok(oneAt !== null && oneAt - healedAt <= 1500, `one VIP holder ${oneAt === null ? 'never' : `${oneAt - healedAt} ms`} after healing`);
      const late = load.records.filter((r) => r.start >= healedAt + 1500);
      console.log(
        `[${haproxy.label} ${octavia.label}] after healing: ${late.filter((r) => r.status !== 200).length} of ${late.length} failed from 1.5 s on; longest gap ${f.longestGapMs} ms`,
      );
      await settle(master);
    });
  }

  if (full) {
    test('APP_COOKIE persistence on a second listener: each cookie keeps its member across a failover, both tables hold every cookie', async () => {
      const version = haproxy.label.replace('haproxy-', '');
      await rig.deployListener({ ...LB, more: [COOKIE_LISTENER] }, version);
      const backend = backendOf(COOKIE_LISTENER);
      const { load, t0, movedAt, master, backup, f } = await handover(
        'graceful VRRP stop, APP_COOKIE listener',
        async (m) => {
          await m.peer.call('stop_vrrp');
        },
        { moveWithinMs: 3000, afterMs: 3000, port: COOKIE_LISTENER.port, cookie: true },
      );
      await master.peer.call('start_vrrp');
      assert.ok(movedAt !== null, 'the VIP did not move');
      assert.is(f.successAfterMove, 1);
      assert.equal(Object.keys(f.servedAfter), [backup.name]);
      assertSticky(load.records, t0, movedAt! + 1000);
      // Every client's cookie (the last one it sent) is in both tables: the peers kept them in step.
      for (const amp of rig.amphorae) {
        const keys = tableKeys(await stickTable(amp, backend));
        for (const src of CLIENT_SOURCES) {
          const sent = load.records.filter((r) => r.src === src && r.cookie).map((r) => r.cookie!.split('=')[1]!);
          assert.ok(sent.length > 0, `${src} never sent the cookie`);
          assert.ok(keys.has(sent[sent.length - 1]!), `amphora ${amp.name}'s table lacks ${src}'s cookie ${sent[sent.length - 1]}`);
        }
      }
      await settle(master);
    });
  }

  // Last: the powered-off amphora does not come back. On the full set a new
  // listener is pushed to both at that moment, as Octavia's listener update
  // does (each amphora in parallel): the survivor takes it (scenario 9).
  test(`master power-off: VIP on the backup within 4 s, no failure outside that window, 100% after${full ? ', a listener pushed meanwhile is served by the survivor' : ', clients keep their member'}`, async () => {
    const version = haproxy.label.replace('haproxy-', '');
    let pushed: Promise<PromiseSettledResult<void>[]> | null = null;
    let pushedAt = 0;
    let procBefore = '';
    const { f, load, t0, movedAt, master, backup } = await handover(
      `master power-off${full ? ', a new listener pushed meanwhile' : ''}`,
      async (m) => {
        if (full) procBefore = await masterCommand(loadBalancerFiles(rig.other(m).agent.basePath, LB.lbId).masterSocket, 'show proc', 3000).catch(String);
        rig.powerOff(m);
        if (!full) return;
        pushedAt = Date.now();
        pushed = Promise.allSettled(rig.amphorae.map((a) => rig.deployListenerTo(a, { ...LB, more: [COOKIE_LISTENER, NEW_LISTENER] }, version)));
      },
      { moveWithinMs: 4000, afterMs: 4000 },
    );
    assert.ok(movedAt !== null && f.vipMoveMs! <= 4000, `VIP moved after ${f.vipMoveMs} ms`);
    for (const x of f.failed)
      assert.ok(x.offsetMs >= -3000 && x.offsetMs <= f.vipMoveMs!, `a request failed at ${x.offsetMs} ms (VIP moved at ${f.vipMoveMs} ms)`);
    assert.is(f.successAfterMove, 1);
    assert.equal(Object.keys(f.servedAfter), [backup.name]);
    if (!full) {
      assertSticky(load.records, t0, movedAt! + 1000);
      return;
    }
    // The pushed listener reloads the survivor: the planned reloads' race
    // (printed, not asserted).
    const moved = stickyChanges(load.records, t0, movedAt! + 1000);
    console.log(
      `[${haproxy.label} ${octavia.label}] across the power-off and the survivor's reload ${moved.length} of ${CLIENT_SOURCES.length} clients changed member${moved.length ? `: ${moved.join('; ')}` : ''}`,
    );
    const results = await pushed!;
    const took = Date.now() - pushedAt;
    const outcome = (amp: Amphora) => results[rig.amphorae.indexOf(amp)]!;
    console.log(
      `[${haproxy.label} ${octavia.label}] new listener pushed at the power-off: ${rig.amphorae.map((a) => `${a.name} ${outcome(a).status}`).join(', ')} (all settled ${took} ms after)`,
    );
    // The dead master's update fails (Octavia marks that amphora ERROR); the survivor's succeeds.
    assert.is(outcome(master).status, 'rejected');
    if (outcome(backup).status === 'rejected') {
      const procAfter = await masterCommand(loadBalancerFiles(backup.agent.basePath, LB.lbId).masterSocket, 'show proc', 3000).catch(String);
      console.log(`amphora ${backup.name}'s show proc before the push:\n${procBefore}\nafter:\n${procAfter}`);
    }
    assert.is(outcome(backup).status, 'fulfilled', String((outcome(backup) as PromiseRejectedResult).reason));
    const fresh = rig.load({ sources: CLIENT_SOURCES }, NEW_LISTENER.port).start();
    await waitFor('requests on the new port', () => fresh.records.length >= 200, 10_000, 50);
    await fresh.stop();
    const g = figures(rig, `new listener (port ${NEW_LISTENER.port}) after the power-off`, fresh.records, Date.now(), null);
    assert.is(g.failed.length, 0);
    assert.equal(Object.keys(g.servedBefore), [backup.name]);
  });

  test.run();
}
