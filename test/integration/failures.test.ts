// Failure paths: an invalid config, a config that validates but cannot load,
// and an agent killed in the middle of an apply. In every case haproxy keeps
// serving and the live config on disk is the one haproxy runs.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loud } from '../helpers/hooks.js';
import { spawn } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { LoadGenerator, sleep, waitFor } from '../helpers/load.js';
import { octaviaStyleConfig } from '../helpers/octavia-config.js';
import { serverStates, applyConfig, testEngine } from '../helpers/engine.js';
import { testPorts } from '../helpers/ports.js';
import { workerCommand } from '../../agent/haproxy/process/master-cli.js';
import { HaproxyFailedError, InvalidConfigError } from '../../agent/haproxy/errors.js';
import type { HaproxyEngine } from '../../agent/haproxy/apply/engine.js';
import { restartDead } from '../../agent/haproxy/process/watchdog.js';
import { probeHaproxy } from '../../agent/haproxy/process/capabilities.js';
import { rootLogger } from '../../agent/log.js';

const PORTS = testPorts('failures');
const [M1, M2] = [PORTS.one(), PORTS.one()];

const APPLY_LOOP = fileURLToPath(new URL('../helpers/apply-loop.js', import.meta.url));

/**
 * The generation marker backend of the config haproxy runs now. A reload the
 * killed agent had sent may reach the master only after the recovery (the
 * command sits in the dead connection's buffer): the master then re-executes
 * with the restored live config and refuses connections for a moment.
 */
async function runningGeneration(engine: HaproxyEngine, lbId: string): Promise<number | null> {
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      const stat = await workerCommand(engine.files(lbId).masterSocket, 'show stat', 2000);
      const m = /^generation-(\d+),BACKEND/m.exec(stat);
      return m ? Number(m[1]) : null;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(50);
    }
  }
}

function generationOf(configText: string): number | null {
  const m = /^backend generation-(\d+)$/m.exec(configText);
  return m ? Number(m[1]) : null;
}

HAPROXIES.forEach((h, hIndex) => {
  const t = suite(`failure paths (${h.label})`);
  let net: TestNetwork;
  let dir: string;
  let engine: HaproxyEngine;
  let members: TestBackend[];
  const lbId = 'lb-fail';
  let bind: string;
  const config = (generation: number) =>
    octaviaStyleConfig({
      lbId,
      baseDir: dir,
      bind,
      generation,
      markGeneration: true,
      members: members.map((m) => ({ id: m.name, address: m.address })),
    });

  t.before(
    loud(async () => {
      net = createTestNetwork();
      dir = await testDir('fail');
      bind = `${net.nsIp}:8080`;
      engine = testEngine(h, dir, net.netns);
      members = await Promise.all([new TestBackend('m1', net.hostIp, M1).start(), new TestBackend('m2', net.hostIp, M2).start()]);
      await applyConfig(engine, lbId, 'amp', config(1));
      await waitFor('members UP', async () => (await serverStates(engine, lbId)).every((s) => s.opState === 2));
    }),
  );

  t.after(async () => {
    await engine.stop(lbId).catch(() => undefined);
    await Promise.all(members.map((m) => m.stop()));
    net.destroy();
  });

  t("an invalid config is rejected with haproxy's message; the previous one keeps serving and stays live on disk", async () => {
    const files = engine.files(lbId);
    const liveBefore = await readFile(files.live, 'utf8');
    const acceptedBefore = await readFile(files.config, 'utf8');
    const workerBefore = (await engine.status(lbId)).workerPid;
    const load = new LoadGenerator(`http://${bind}/`, 250).start();
    await sleep(300);
    const broken = config(2).replace('balance roundrobin', 'balance no-such-algorithm');
    const err = await applyConfig(engine, lbId, 'amp', broken).then(
      () => null,
      (e: unknown) => e,
    );
    await sleep(300);
    await load.stop();
    assert.instance(err, InvalidConfigError);
    assert.match((err as InvalidConfigError).output, /ALERT.*haproxy\.cfg\.new:\d+\] : balance only supports/);
    assert.is(await readFile(files.live, 'utf8'), liveBefore, 'live config changed');
    assert.is(await readFile(files.config, 'utf8'), acceptedBefore, 'accepted config changed');
    assert.match(await readFile(files.rejected, 'utf8'), /no-such-algorithm/);
    assert.is((await engine.status(lbId)).workerPid, workerBefore, 'haproxy was reloaded');
    assert.is(load.failures.length, 0, `failed requests: ${load.describeFailures()}`);
  });

  t('a config that validates but cannot load (unavailable bind address) fails typed; old workers keep serving', async () => {
    const files = engine.files(lbId);
    const liveBefore = await readFile(files.live, 'utf8');
    const acceptedBefore = await readFile(files.config, 'utf8');
    const load = new LoadGenerator(`http://${bind}/`, 250).start();
    await sleep(300);
    const unloadable = config(3).replace('    bind ', '    bind 192.0.2.1:8081\n    bind ');
    const err = await applyConfig(engine, lbId, 'amp', unloadable).then(
      () => null,
      (e: unknown) => e,
    );
    const failedAt = Date.now();
    await sleep(500);
    await load.stop();
    assert.instance(err, HaproxyFailedError);
    assert.is(await readFile(files.live, 'utf8'), liveBefore, 'live config not restored');
    assert.is(await readFile(files.config, 'utf8'), acceptedBefore, 'accepted config not restored');
    assert.is(await runningGeneration(engine, lbId), generationOf(liveBefore));
    // haproxy pauses its listeners during the failed load; once the engine
    // reports the failure it has reloaded the previous config, and every
    // request from then on succeeds.
    const after = load.records.filter((r) => r.start >= failedAt);
    assert.ok(after.length > 50, `only ${after.length} requests after the failure`);
    assert.equal(after.filter((r) => r.status !== 200).length, 0, 'requests failed after the engine reported the failure');
    // And the engine still works afterwards.
    const report = await applyConfig(engine, lbId, 'amp', config(4));
    assert.is(report.outcome, 'reloaded');
    assert.is(await runningGeneration(engine, lbId), 4);
  });

  t("a start that haproxy refuses (Octavia's default maxconn 50000 over this machine's fd limit) is reported clearly", async () => {
    const big = octaviaStyleConfig({
      lbId: 'lb-maxconn',
      baseDir: dir,
      bind: `${net.nsIp}:8090`,
      connectionLimit: 50000,
      members: members.map((m) => ({ id: m.name, address: m.address })),
    });
    const err = await applyConfig(engine, 'lb-maxconn', 'amp', big).then(
      () => null,
      (e: unknown) => e,
    );
    assert.instance(err, HaproxyFailedError);
    assert.match((err as HaproxyFailedError).output, /\[ALERT\].*(FD limit|maxconn|file descriptors)/i);
    assert.ok((err as HaproxyFailedError).output.length < 2000, "the message is haproxy's verdict, not its whole log");
    assert.not.ok((await engine.status('lb-maxconn')).running);
    assert.not.ok(await engine.exists('lb-maxconn'), 'the refused config was not kept as accepted');
  });

  t('SIGKILL of the agent mid-apply: haproxy keeps serving; on restart the agent finds it and its live config', async () => {
    const masterBefore = (await engine.status(lbId)).masterPid;
    const load = new LoadGenerator(`http://${bind}/`, 250).start();
    const delays = [40, 150, 300, 600, 1000];
    try {
      await killMidApplyRounds(delays, masterBefore);
    } finally {
      await load.stop();
    }
    assert.is(load.failures.length, 0, `failed requests: ${load.describeFailures()}`);
  });

  /** Each round: an agent applying in a loop is killed after `delay` ms; a new engine recovers. */
  async function killMidApplyRounds(delays: number[], masterBefore: number | null): Promise<void> {
    for (const [round, delay] of delays.entries()) {
      const child = spawn(
        process.execPath,
        [
          APPLY_LOOP,
          JSON.stringify({
            haproxy: hIndex,
            dir,
            netns: net.netns,
            lbId,
            bind,
            start: 100 * (round + 1),
            members: members.map((m) => ({ id: m.name, address: m.address })),
          }),
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      await sleep(delay);
      child.kill('SIGKILL');
      await new Promise((r) => child.on('close', r));

      // A restarted agent: a new engine over the same directories.
      const restarted = testEngine(h, dir, net.netns);
      await restarted.recover();
      const status = await restarted.status(lbId);
      assert.ok(status.running, `round ${round}: haproxy not found running`);
      assert.is(status.masterPid, masterBefore, `round ${round}: haproxy master changed`);
      const live = await readFile(restarted.files(lbId).live, 'utf8');
      assert.is(await runningGeneration(restarted, lbId), generationOf(live), `round ${round}: the live config on disk is not the one haproxy runs`);
    }
    const restarted = testEngine(h, dir, net.netns);
    const report = await applyConfig(restarted, lbId, 'amp', config(999));
    assert.is(report.outcome, 'reloaded');
    assert.is(await runningGeneration(restarted, lbId), 999);
    // A kill may land while an agent probes haproxy: the next start's probe stops the orphan.
    // (This process probed once already and keeps the answer, so probe as a new agent would.)
    const probeDir = join(dir, '.probe');
    await probeHaproxy(h.command, probeDir);
    assert.equal(await processesMentioning(probeDir), [], 'a probe haproxy outlived its agent');
    await sleep(300);
  }

  async function processesMentioning(path: string): Promise<number[]> {
    const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
    const cmdlines = await Promise.all(pids.map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')));
    return pids.filter((_, k) => cmdlines[k]!.includes(path)).map(Number);
  }

  t('a haproxy that dies is started again by the watchdog; one stopped on purpose stays down', async () => {
    const before = await engine.status(lbId);
    process.kill(before.masterPid!, 'SIGKILL');
    for (const w of before.table?.workers ?? []) process.kill(w.pid, 'SIGKILL');
    await waitFor('haproxy to be gone', async () => !(await engine.status(lbId)).running);
    assert.equal(await restartDead(engine, rootLogger), [lbId]);
    const after = await engine.status(lbId);
    assert.ok(after.running && after.masterPid !== before.masterPid);
    await engine.stop(lbId);
    assert.equal(await restartDead(engine, rootLogger), []);
    assert.not.ok((await engine.status(lbId)).running);
    await engine.start(lbId);
    assert.ok((await engine.status(lbId)).running);
  });

  t.run();
});
