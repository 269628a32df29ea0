// Stick tables across back-to-back reloads (ACTIVE_STANDBY's SOURCE_IP
// persistence). haproxy's old worker hands its tables to the new one only if
// it had finished learning them itself; with the other amphora gone that
// takes haproxy's 5 s remote timeout after a start. A reload right after the
// start, or right after another reload, used to leave the new worker with an
// empty table: every client balanced afresh. The agent now waits for the
// lesson to end before reloading (agent/haproxy/process/peers-resync.ts).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { LoadGenerator, waitFor } from '../helpers/load.js';
import { octaviaStyleConfig } from '../helpers/octavia-config.js';
import { applyConfig, serverStates, testEngine } from '../helpers/engine.js';
import { testPorts } from '../helpers/ports.js';
import { workerCommand } from '../../agent/haproxy/process/master-cli.js';
import { peerName } from '../../agent/model/names.js';
import type { HaproxyEngine } from '../../agent/haproxy/apply/engine.js';

const PORTS = testPorts('stick-tables-reload');
const [M1, M2] = [PORTS.one(), PORTS.one()];
const PEER_PORT = PORTS.one();

const LB = 'lb-sticky';
const AMP = 'a1b2c3d4-0000-4000-8000-00000000aaaa';
const BACKEND = 'pool-1:listener-1';
const RELOADS = 3;

/** The table's entries: client address -> server id. */
async function stickTable(engine: HaproxyEngine): Promise<Map<string, string>> {
  const text = await workerCommand(engine.files(LB).masterSocket, `show table ${BACKEND}`, 2000);
  return new Map([...text.matchAll(/key=(\S+) .*server_id=(\d+)/g)].map((m) => [m[1]!, m[2]!]));
}

for (const h of HAPROXIES) {
  const t = suite(`stick tables across back-to-back reloads (${h.label})`);
  let net: TestNetwork;
  let engine: HaproxyEngine;
  let members: TestBackend[];
  let config: (generation: number) => string;

  t.before(
    loud(async () => {
      net = createTestNetwork();
      const dir = await testDir('sticky');
      engine = testEngine(h, dir, net.netns);
      members = await Promise.all([new TestBackend('m1', net.hostIp, M1).start(), new TestBackend('m2', net.hostIp, M2).start()]);
      config = (generation) =>
        octaviaStyleConfig({
          lbId: LB,
          baseDir: dir,
          bind: `${net.nsIp}:8080`,
          generation,
          monitor: null,
          members: members.map((m) => ({ id: m.name, address: m.address })),
          // The other amphora is gone (an address nothing answers for): haproxy
          // gives up learning from it after its 5 s timeout.
          peers: { local: { name: peerName(AMP), address: `${net.nsIp}:${PEER_PORT}` }, remote: { name: 'other-amphora', address: `192.0.2.1:${PEER_PORT}` } },
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

  t(`the client's entry and member survive ${RELOADS} reloads, the first right after the start`, async () => {
    const first = new LoadGenerator(`http://${net.nsIp}:8080/`, 50, 1).start();
    await waitFor('a first answer', () => first.records.some((r) => r.status === 200), 5000);
    await first.stop();
    const member = first.records.find((r) => r.status === 200)!.member;
    const before = await stickTable(engine);
    assert.is(before.size, 1, `the table after the first request: ${[...before]}`);
    const waits: number[] = [];
    for (let i = 1; i <= RELOADS; i++) {
      const started = Date.now();
      const report = await applyConfig(engine, LB, AMP, config(i));
      waits.push(Date.now() - started);
      assert.is(report.outcome, 'reloaded');
      assert.equal(await stickTable(engine), before, `the table after reload ${i}`);
    }
    console.log(`[${h.label}] reloads took ${waits.join(', ')} ms (the first waits for haproxy's remote timeout)`);
    const after = new LoadGenerator(`http://${net.nsIp}:8080/`, 50, 1).start();
    await waitFor('ten answers', () => after.records.filter((r) => r.status === 200).length >= 10, 5000);
    await after.stop();
    assert.equal([...new Set(after.records.map((r) => r.member))], [member], 'every request on the same member');
  });

  t.run();
}
