// The rule this project exists for: a member added while not ready receives no
// request until it passes its health check, then gets traffic within
// rise x interval + 1 s; existing members keep serving; 0 failed requests.
// With protection switched off the same scenario must show the failure.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend, type BackendMode } from '../helpers/backend.js';
import { LoadGenerator, sleep, waitFor } from '../helpers/load.js';
import { octaviaStyleConfig } from '../helpers/octavia-config.js';
import { serverCounters, serverStates, applyConfig, testEngine } from '../helpers/engine.js';
import { testPorts } from '../helpers/ports.js';

const PORTS = testPorts('new-member-protection');
const [M1, M2] = [PORTS.one(), PORTS.one()];
/** The added member's port and its listener's, per variant: with protection, then without. */
const [ADDED_ON, LISTENER_ON, ADDED_OFF, LISTENER_OFF] = [PORTS.range(8), PORTS.range(8), PORTS.range(8), PORTS.range(8)];

const MONITOR = { interS: 1, rise: 2, fall: 2 };
const NOT_READY_MS = 3000;
const VARIANTS: Exclude<BackendMode, 'ready'>[] = ['not-ready', 'reset', 'refused'];

interface Outcome {
  failures: number;
  failureSample: string;
  requestsWhileNotReady: number;
  /** Sessions haproxy itself sent to the member while it was not ready. */
  sessionsWhileNotReady: number;
  upWhileNotReady: boolean;
  servedAfterReadyMs: number | null;
  existingServed: number[];
}

async function addMemberUnderLoad(
  h: (typeof HAPROXIES)[number],
  net: TestNetwork,
  dir: string,
  existing: TestBackend[],
  mode: BackendMode,
  ports: { member: number; listener: number },
  protect: boolean,
): Promise<Outcome> {
  const lbId = `lb-${mode}-${protect ? 'on' : 'off'}`;
  const engine = testEngine(h, dir, net.netns, protect);
  const added = await new TestBackend('new', net.hostIp, ports.member, mode).start();
  const bind = `${net.nsIp}:${ports.listener}`;
  const config = (members: TestBackend[]) =>
    octaviaStyleConfig({
      lbId,
      baseDir: dir,
      bind,
      monitor: MONITOR,
      members: members.map((m) => ({ id: m.name, address: m.address })),
    });
  try {
    await applyConfig(engine, lbId, 'amp', config(existing));
    await waitFor('existing members UP', async () => (await serverStates(engine, lbId)).every((s) => s.opState === 2));
    const load = new LoadGenerator(`http://${bind}/`, 250).start();
    await sleep(300);

    const addedAt = Date.now();
    await applyConfig(engine, lbId, 'amp', config([...existing, added]));
    let upWhileNotReady = false;
    while (Date.now() - addedAt < NOT_READY_MS) {
      const s = (await serverStates(engine, lbId)).find((e) => e.server === 'new');
      if (s?.opState === 2) upWhileNotReady = true;
      await sleep(20);
    }
    const requestsWhileNotReady = added.requests;
    const sessionsWhileNotReady = (await serverCounters(engine, lbId)).get('new')?.sessions ?? -1;

    const readyAt = Date.now();
    await added.setMode('ready');
    const deadline = readyAt + (MONITOR.rise * MONITOR.interS + 1) * 1000;
    await waitFor('the new member to serve', () => added.firstServedAt !== null, 6000).catch(() => undefined);
    await sleep(300);
    await load.stop();
    const perMember = load.byMember(addedAt);
    return {
      failures: load.failures.length,
      failureSample: load.describeFailures(),
      requestsWhileNotReady,
      sessionsWhileNotReady,
      upWhileNotReady,
      servedAfterReadyMs: added.firstServedAt === null || added.firstServedAt > deadline + 5000 ? null : added.firstServedAt - readyAt,
      existingServed: existing.map((m) => perMember.get(m.name) ?? 0),
    };
  } finally {
    await engine.stop(lbId).catch(() => undefined);
    await added.stop();
  }
}

for (const h of HAPROXIES) {
  const t = suite(`new-member protection (${h.label})`);
  let net: TestNetwork;
  let dir: string;
  let existing: TestBackend[];

  t.before(
    loud(async () => {
      net = createTestNetwork();
      dir = await testDir('protect');
      existing = await Promise.all([new TestBackend('m1', net.hostIp, M1).start(), new TestBackend('m2', net.hostIp, M2).start()]);
    }),
  );

  t.after(async () => {
    await Promise.all(existing.map((m) => m.stop()));
    net.destroy();
  });

  VARIANTS.forEach((mode, i) => {
    t(`protection on, new member ${mode}: 0 requests until ready, then traffic; 0 failures`, async () => {
      const o = await addMemberUnderLoad(h, net, dir, existing, mode, { member: ADDED_ON(i), listener: LISTENER_ON(i) }, true);
      assert.is(o.requestsWhileNotReady, 0, 'requests reached the member before it was ready');
      assert.is(o.sessionsWhileNotReady, 0, 'haproxy sent sessions to the member before it was ready');
      assert.not.ok(o.upWhileNotReady, 'haproxy marked the unready member UP');
      assert.ok(o.servedAfterReadyMs !== null, 'the member never received traffic after turning ready');
      assert.ok(
        o.servedAfterReadyMs! <= (MONITOR.rise * MONITOR.interS + 1) * 1000,
        `first request ${o.servedAfterReadyMs} ms after ready; limit rise x inter + 1 s`,
      );
      assert.ok(
        o.existingServed.every((n) => n > 0),
        `existing members served ${o.existingServed}`,
      );
      assert.is(o.failures, 0, `failed requests: ${o.failureSample}`);
    });
  });

  VARIANTS.forEach((mode, i) => {
    t(`protection off, new member ${mode}: the failure shows (the test can fail)`, async () => {
      const o = await addMemberUnderLoad(h, net, dir, existing, mode, { member: ADDED_OFF(i), listener: LISTENER_OFF(i) }, false);
      assert.ok(o.upWhileNotReady, 'without protection haproxy starts the new member UP');
      assert.ok(o.sessionsWhileNotReady > 0, 'without protection haproxy sends sessions to the unready member');
      // With a refused connection haproxy retries and redispatches (Octavia's
      // defaults), so clients may not see it; the other modes reach clients.
      if (mode !== 'refused') assert.ok(o.failures > 0, `expected failed requests, got none (${o.requestsWhileNotReady} reached the member)`);
    });
  });

  t.run();
}
