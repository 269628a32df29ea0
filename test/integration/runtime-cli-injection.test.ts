// A member added with a server-line word that haproxy's master CLI would
// split (issue 26, class 3): `check-sni "x;@1 disable frontend listener-1"`
// once reached `add server` as written, the master took the ';' as the end
// of a command and ran the rest on the worker, pausing the frontend, while
// the change was reported done. Now the word sends the change down the
// reload path: the frontend stays open, and the new member takes traffic.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { waitFor } from '../helpers/load.js';
import { testPorts } from '../helpers/ports.js';
import { applyConfig, serverStates, testEngine } from '../helpers/engine.js';
import { octaviaStyleConfig } from '../helpers/octavia-config.js';
import { workerCommand } from '../../agent/haproxy/process/master-cli.js';
import { parseShowStat } from '../../agent/haproxy/process/stats.js';
import type { HaproxyEngine } from '../../agent/haproxy/apply/engine.js';

const PORTS = testPorts('runtime-cli-injection');
const LISTENER = PORTS.range(HAPROXIES.length);
const [M1, M2, M3] = [PORTS.range(HAPROXIES.length), PORTS.range(HAPROXIES.length), PORTS.range(HAPROXIES.length)];
const INJECTED = 'check-sni "x;@1 disable frontend listener-1"';

/** The member that answered one request to the listener, or the error. */
function memberOf(url: string): Promise<string> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(`${res.statusCode} ${res.headers['x-member'] ?? '-'}`));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve(`error ${e.message}`));
  });
}

HAPROXIES.forEach((h, i) => {
  const t = suite(`runtime CLI injection through a server word (${h.label})`);
  const lbId = `lb-cli-injection-${i}`;
  let net: TestNetwork;
  let engine: HaproxyEngine;
  let dir: string;
  const backends: TestBackend[] = [];
  const config = (members: { id: string; address: string }[]) =>
    octaviaStyleConfig({
      lbId,
      baseDir: dir,
      bind: `${net.nsIp}:${LISTENER(i)}`,
      members,
    });

  t.before(
    loud(async () => {
      net = createTestNetwork();
      dir = await testDir('sec26-cli');
      backends.push(
        await new TestBackend('m1', net.hostIp, M1(i)).start(),
        await new TestBackend('m2', net.hostIp, M2(i)).start(),
        await new TestBackend('m3', net.hostIp, M3(i)).start(),
      );
      engine = testEngine(h, dir, net.netns);
    }),
  );

  t.after(async () => {
    await engine?.stop(lbId).catch(() => undefined);
    for (const b of backends) await b.stop();
    net?.destroy();
  });

  t('the member comes in with a reload, the frontend stays open and both members serve', async () => {
    const m1 = { id: 'm1', address: `${net.hostIp}:${M1(i)}` };
    await applyConfig(engine, lbId, 'amp', config([m1]));
    const text = config([m1, { id: 'm2', address: `${net.hostIp}:${M2(i)}` }]).replace(/(server m2 \S+ .*)$/m, `$1 ${INJECTED}`);
    assert.ok(text.includes(INJECTED));

    const report = await engine.apply(lbId, 'amp', text);
    assert.is.not(report.outcome, 'runtime', 'the change went through the runtime API');
    assert.match(report.reloadReason ?? '', /would not reach haproxy's CLI as one word/);

    const socket = engine.files(lbId).masterSocket;
    const frontend = parseShowStat(await workerCommand(socket, 'show stat', 2000)).find((r) => r.pxname === 'listener-1' && r.svname === 'FRONTEND');
    assert.is(frontend?.status, 'OPEN', `frontend listener-1 is ${frontend?.status}`);
    await waitFor('m2 UP', async () => (await serverStates(engine, lbId)).find((e) => e.server === 'm2')?.opState === 2, 15_000);

    const url = `http://${net.nsIp}:${LISTENER(i)}/`;
    const seen = new Set<string>();
    await waitFor(
      'both members answer through the listener',
      async () => {
        seen.add(await memberOf(url));
        return seen.has('200 m1') && seen.has('200 m2');
      },
      15_000,
    );
    assert.equal(
      [...seen].filter((s) => !s.startsWith('200 ')),
      [],
      'every request was answered',
    );

    // The same keyword with a plain host name still goes through the runtime API, without a reload.
    const plain = `${text}\n`.replace(
      /(server m2 .*)\n/,
      `$1\n    server m3 ${net.hostIp}:${M3(i)} weight 1 check inter 1s fall 2 rise 2 check-sni m3.example\n`,
    );
    const added = await engine.apply(lbId, 'amp', plain);
    assert.is(added.outcome, 'runtime', added.reloadReason ?? '');
    // Forced DOWN at once, m3 is admitted by haproxy's own checks: the agent has nothing to promote.
    assert.equal(added.pending, [], 'm3 waits for the agent');
    await waitFor('m3 answers through the listener', async () => (await memberOf(url)) === '200 m3', 15_000);
  });

  t.run();
});
