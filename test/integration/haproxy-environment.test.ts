// haproxy runs with a minimal environment, not the agent's (issue 26, class
// 2): under direct supervision it inherited the agent's whole environment,
// which a config can read back (the env() sample fetch, "${NAME}" in a word).
// Read from /proc/<pid>/environ of the master and of its worker, after the
// start and after a reload (the master re-executes itself then), on each
// haproxy; and a "${NAME}" of the agent's environment expands to nothing.
// The capability probe's haproxy runs (-v, -c and a throwaway master) get
// the same environment: a wrapper records each run's names, then execs haproxy.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, testDir, type HaproxyUnderTest } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { waitFor } from '../helpers/load.js';
import { testPorts } from '../helpers/ports.js';
import { applyConfig, testEngine } from '../helpers/engine.js';
import { octaviaStyleConfig } from '../helpers/octavia-config.js';
import { currentWorker, masterCommand, parseShowProc } from '../../agent/haproxy/process/master-cli.js';
import { haproxyEnvironment } from '../../agent/haproxy/process/environment.js';
import { probeHaproxy } from '../../agent/haproxy/process/capabilities.js';
import type { HaproxyEngine } from '../../agent/haproxy/apply/engine.js';

const PORTS = testPorts('haproxy-environment');
const LISTENER = PORTS.range(HAPROXIES.length);
const MEMBER = PORTS.range(HAPROXIES.length);
/** A variable of the agent's environment that no haproxy process may hold. */
const SECRET = 'AAT_AGENT_SECRET';

/** The variable names of a process, from the kernel. */
function environOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/environ`, 'latin1')
    .split('\0')
    .filter(Boolean)
    .map((kv) => kv.slice(0, kv.indexOf('=')));
}

/**
 * Names other than the agent's list and haproxy's own HAPROXY_* variables.
 * The test rig runs 3.x through a chroot wrapper, a shell script, and the
 * shell exports PWD: allowed for those only (an amphora runs haproxy itself).
 */
function unexpected(h: HaproxyUnderTest, names: string[]): string[] {
  const listed = new Set([...Object.keys(haproxyEnvironment()), ...(h.command[0]!.endsWith('/haproxy') ? [] : ['PWD'])]);
  return names.filter((n) => !listed.has(n) && !n.startsWith('HAPROXY_'));
}

function leakHeader(url: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.headers['x-leak'] as string | undefined));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

HAPROXIES.forEach((h, i) => {
  const t = suite(`haproxy's environment (${h.label})`);
  const lbId = `lb-environment-${i}`;
  let net: TestNetwork;
  let engine: HaproxyEngine;
  let dir: string;
  let member: TestBackend;
  const config = (generation: number) =>
    octaviaStyleConfig({
      lbId,
      baseDir: dir,
      bind: `${net.nsIp}:${LISTENER(i)}`,
      generation,
      monitor: null,
      members: [{ id: 'm1', address: `${net.hostIp}:${MEMBER(i)}` }],
    }).replace(/^( {4}default_backend .*)$/m, `$1\n    http-response set-header X-Leak "v=\${${SECRET}}"`);

  t.before(
    loud(async () => {
      process.env[SECRET] = 'agent-only';
      net = createTestNetwork();
      dir = await testDir('sec26-env');
      member = await new TestBackend('m1', net.hostIp, MEMBER(i)).start();
      engine = testEngine(h, dir, net.netns);
    }),
  );

  t.after(async () => {
    await engine?.stop(lbId).catch(() => undefined);
    await member?.stop();
    net?.destroy();
  });

  t('master and worker hold only the listed variables, after the start and after a reload', async () => {
    const socket = engine.files(lbId).masterSocket;
    for (const generation of [1, 2]) {
      const report = await applyConfig(engine, lbId, 'amp', config(generation));
      assert.ok(['started', 'reloaded'].includes(report.outcome), report.outcome);
      const table = parseShowProc(await masterCommand(socket, 'show proc', 2000))!;
      const worker = currentWorker(table)!;
      for (const [role, pid] of [
        ['master', table.masterPid],
        ['worker', worker],
      ] as const) {
        const names = environOf(pid);
        assert.equal(unexpected(h, names), [], `${role} ${pid} (generation ${generation}) holds ${names.join(' ')}`);
        assert.ok(names.includes('PATH'), `${role} has no PATH`);
      }
    }
    assert.equal(await waitFor('an answer', () => leakHeader(`http://${net.nsIp}:${LISTENER(i)}/`)), 'v=', "the agent's variable reached a client");
  });

  t('the capability probe runs haproxy with the same environment', async () => {
    const log = join(dir, 'probe-env.log');
    const wrapper = join(dir, 'haproxy-recording-env');
    // One line of variable names per run (the shell adds PWD, allowed above for wrappers).
    writeFileSync(wrapper, `#!/bin/sh\nenv | cut -d= -f1 | tr '\\n' ' ' >>'${log}'\necho >>'${log}'\nexec ${h.command.join(' ')} "$@"\n`);
    chmodSync(wrapper, 0o755);
    const caps = await probeHaproxy([wrapper], join(dir, 'probe'));
    assert.ok(caps.version.length > 0);
    const runs = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.trim().split(' ').filter(Boolean));
    assert.ok(runs.length >= 3, `${runs.length} probe runs recorded`);
    for (const names of runs) {
      assert.ok(!names.includes(SECRET), `a probe run held ${SECRET}`);
      assert.equal(
        names.filter((n) => !['PWD', 'SHLVL', '_'].includes(n) && !Object.keys(haproxyEnvironment()).includes(n)),
        [],
        names.join(' '),
      );
    }
  });

  t.run();
});
