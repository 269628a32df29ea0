// Hitless reloads: 2 ready members under constant load, 50 reloads, 0 failed
// requests; and with protection on, no healthy member ever leaves UP.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { LoadGenerator, waitFor } from '../helpers/load.js';
import { octaviaStyleConfig } from '../helpers/octavia-config.js';
import { serverStates, applyConfig, testEngine } from '../helpers/engine.js';
import { testPorts } from '../helpers/ports.js';
import type { HaproxyEngine } from '../../agent/haproxy/apply/engine.js';
import { readFile } from 'node:fs/promises';

const PORTS = testPorts('reload-under-load');
const [M1, M2] = [PORTS.one(), PORTS.one()];

const LB = 'lb-reload';
const AMP = 'amphora-1';

for (const h of HAPROXIES) {
  const t = suite(`reloads under load (${h.label})`);
  let net: TestNetwork;
  let dir: string;
  let engine: HaproxyEngine;
  let members: TestBackend[];
  let config: (generation: number) => string;

  t.before(
    loud(async () => {
      net = createTestNetwork();
      dir = await testDir('reload');
      engine = testEngine(h, dir, net.netns);
      members = await Promise.all([new TestBackend('m1', net.hostIp, M1).start(), new TestBackend('m2', net.hostIp, M2).start()]);
      config = (generation) =>
        octaviaStyleConfig({
          lbId: LB,
          baseDir: dir,
          bind: `${net.nsIp}:8080`,
          generation,
          members: members.map((m) => ({ id: m.name, address: m.address })),
        });
      await applyConfig(engine, LB, AMP, config(0));
      await waitFor('both members UP', async () => (await serverStates(engine, LB)).every((s) => s.opState === 2));
    }),
  );

  t.after(async () => {
    await engine.stop(LB).catch(() => undefined);
    await Promise.all(members.map((m) => m.stop()));
    net.destroy();
  });

  t('50 reloads under >= 200 requests/s: 0 failed requests', async () => {
    const load = new LoadGenerator(`http://${net.nsIp}:8080/`, 300).start();
    const workers = new Set<number>();
    for (let i = 1; i <= 50; i++) {
      const report = await applyConfig(engine, LB, AMP, config(i));
      assert.is(report.outcome, 'reloaded');
      if (report.workerPid) workers.add(report.workerPid);
    }
    await load.stop();
    assert.ok(load.rate() >= 200, `load ran at ${load.rate().toFixed(0)} requests/s`);
    assert.is(workers.size, 50, 'every reload brought up a new worker');
    assert.is(load.failures.length, 0, `failed requests: ${load.describeFailures()}`);
    assert.ok(load.records.length > 300, `only ${load.records.length} requests sent`);
  });

  t('10 reloads with protection on: no healthy member ever leaves UP', async () => {
    let polling = true;
    const seen: string[] = [];
    const poller = (async () => {
      while (polling) {
        const states = await serverStates(engine, LB).catch(() => null);
        for (const s of states ?? []) if (s.opState !== 2) seen.push(`${s.server}:${s.opState}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    for (let i = 100; i < 110; i++) {
      const report = await applyConfig(engine, LB, AMP, config(i));
      assert.equal(report.newMembers, [], 'no member counts as new');
    }
    polling = false;
    await poller;
    assert.equal(seen, [], 'members left UP during reloads');
  });

  t('concurrent applies are serialized: each one reloads in turn, the last submitted wins', async () => {
    const load = new LoadGenerator(`http://${net.nsIp}:8080/`, 250).start();
    const reports = await Promise.all(Array.from({ length: 10 }, (_, i) => applyConfig(engine, LB, AMP, config(200 + i))));
    await load.stop();
    const workers = reports.map((r) => r.workerPid);
    assert.is(new Set(workers).size, 10, 'each apply had its own reload');
    assert.match(await readFile(engine.files(LB).live, 'utf8'), /timeout client 50209\n/);
    assert.is(load.failures.length, 0, `failed requests: ${load.describeFailures()}`);
  });

  t.run();
}
