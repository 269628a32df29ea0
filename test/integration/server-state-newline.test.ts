// The server-state file the agent writes before a reload ends with a newline:
// haproxy 3.0 and 3.4 call a last line without one "corrupted global server
// state file ... at line N" and ignore it, so the last member listed would
// start again as if it had no state (measured on both).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { waitFor } from '../helpers/load.js';
import { testPorts } from '../helpers/ports.js';
import { serverStates, applyConfig, testEngine } from '../helpers/engine.js';
import { octaviaStyleConfig } from '../helpers/octavia-config.js';
import type { HaproxyEngine } from '../../agent/haproxy/apply/engine.js';

const PORTS = testPorts('server-state-newline');
const LISTENER_PORT = PORTS.one();
const [M1, M2] = [PORTS.range(HAPROXIES.length), PORTS.range(HAPROXIES.length)];

HAPROXIES.filter((h) => ['haproxy-3.0', 'haproxy-3.4'].includes(h.label)).forEach((h, i) => {
  const t = suite(`server-state file through a reload (${h.label})`);
  const lbId = `lb-state-nl-${i}`;
  let net: TestNetwork;
  let engine: HaproxyEngine;
  let up: TestBackend;
  let dir: string;
  const config = (generation: number) =>
    octaviaStyleConfig({
      lbId,
      baseDir: dir,
      bind: `${net.nsIp}:${LISTENER_PORT}`,
      generation,
      // m2 has no server behind it: it goes DOWN, and it is the file's last line.
      members: [
        { id: 'm1', address: `${net.hostIp}:${M1(i)}` },
        { id: 'm2', address: `${net.hostIp}:${M2(i)}` },
      ],
    });

  t.before(
    loud(async () => {
      net = createTestNetwork();
      dir = await testDir('sec3-state-nl');
      up = await new TestBackend('m1', net.hostIp, M1(i)).start();
      engine = testEngine(h, dir, net.netns);
    }),
  );

  t.after(async () => {
    await engine?.stop(lbId).catch(() => undefined);
    await up?.stop();
    net?.destroy();
  });

  t('the last member keeps its DOWN state across the reload', async () => {
    await applyConfig(engine, lbId, 'amp', config(1));
    const m2 = async () => (await serverStates(engine, lbId)).find((e) => e.server === 'm2');
    const m1 = async () => (await serverStates(engine, lbId)).find((e) => e.server === 'm1');
    await waitFor('m1 UP and m2 DOWN', async () => (await m1())?.opState === 2 && (await m2())?.opState === 0, 15_000);
    const report = await applyConfig(engine, lbId, 'amp', config(2));
    assert.is(report.outcome, 'reloaded');
    const state = readFileSync(join(dir, lbId, 'servers-state'), 'utf8');
    assert.ok(state.endsWith('\n'), 'the state file has no final newline');
    assert.match(state.trim().split('\n').at(-1)!, / m2 /);
    // Read right after the reload, before any check of the new worker could
    // have taken m2 down again: without its state line it would be UP (2).
    assert.is((await m2())?.opState, 0);
    assert.is((await m1())?.opState, 2);
  });

  t.run();
});
