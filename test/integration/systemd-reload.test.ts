// The systemd back end when a reload meets an inactive unit (haproxy died
// and systemd is restarting it; Octavia bug 2054666). No systemd runs here,
// so `systemctl` is a stand-in on PATH that answers a reload with systemctl's
// real words and runs the real haproxy for a start, as the unit would.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SystemdSupervisor } from '../../agent/haproxy/process/systemd.js';
import { loadBalancerFiles } from '../../agent/haproxy/layout.js';
import { testDir } from '../helpers/haproxies.js';
import { testPorts } from '../helpers/ports.js';

const LISTENER_PORT = testPorts('systemd-reload').one();

const LB = 'lb-inactive';

/**
 * Runs `fn` with a stand-in `systemctl` first on PATH: it logs each call to
 * `<dir>/calls` and answers by `cases` (lines of a shell `case "$1"`).
 */
async function withSystemctl(dir: string, cases: string[], fn: () => Promise<void>): Promise<void> {
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'systemctl'), ['#!/bin/sh', `echo "$@" >> ${dir}/calls`, 'case "$1" in', ...cases, 'esac', 'exit 0', ''].join('\n'));
  chmodSync(join(bin, 'systemctl'), 0o755);
  const path = process.env.PATH;
  process.env.PATH = `${bin}:${path}`;
  try {
    await fn();
  } finally {
    process.env.PATH = path;
  }
}

test('reload of an inactive unit ("is not active, cannot reload") starts it and waits for a worker', async () => {
  const dir = await testDir('sec3-systemd');
  const files = loadBalancerFiles(dir, LB);
  mkdirSync(files.dir, { recursive: true });
  writeFileSync(
    files.live,
    [
      'global',
      `    stats socket ${join(files.dir, 's.sock')} mode 0600 level admin`,
      'defaults',
      '    mode http',
      '    timeout connect 1s',
      '    timeout client 1s',
      '    timeout server 1s',
      'frontend f',
      `    bind 127.0.0.1:${LISTENER_PORT}`,
      '',
    ].join('\n'),
  );
  // What the unit's ExecStart runs, as a daemon (systemd would keep it in the foreground).
  writeFileSync(join(dir, 'start.sh'), `exec /usr/sbin/haproxy -W -D -f ${files.live} -p ${files.pidFile} -S ${files.masterSocket},mode,600\n`);
  await withSystemctl(
    dir,
    [`  reload) echo "Failed to reload $2: Unit $2 is not active, cannot reload." >&2; exit 1 ;;`, `  start) exec sh ${dir}/start.sh ;;`],
    async () => {
      const sup = new SystemdSupervisor(['/usr/sbin/haproxy'], 'unused', join(dir, 'ug.conf'), join(dir, 'units'));
      mkdirSync(join(dir, 'units'));
      const inst = { lbId: LB, files, peerName: 'peer' };
      const before = { running: true, masterPid: 1, workerPid: 2, table: null };
      const after = await sup.reload(inst, before);
      assert.ok(after.running && after.workerPid, 'no haproxy worker after the reload');
      const calls = readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n');
      assert.equal(calls.slice(-2), [`reload haproxy-${LB}.service`, `start haproxy-${LB}.service`]);
      await sup.stop(inst).catch(() => undefined);
      process.kill(after.masterPid!, 'SIGTERM');
    },
  );
});

test('a unit past its start limit is reported failed (systemctl show); a start on request runs reset-failed first, and a refused start leaves it stopped', async () => {
  const dir = await testDir('sec3-systemd-failed');
  const files = loadBalancerFiles(dir, LB);
  mkdirSync(files.dir, { recursive: true });
  // systemd 252's answer for a unit that hit StartLimitBurst, and a start that fails as it would then.
  await withSystemctl(
    dir,
    [
      '  show) printf "Result=start-limit-hit\\nNRestarts=5\\nLoadState=loaded\\nActiveState=failed\\nSubState=failed\\n" ;;',
      `  start) echo "Job for $2 failed because the control process exited with error code." >&2; exit 1 ;;`,
    ],
    async () => {
      mkdirSync(join(dir, 'units'));
      const sup = new SystemdSupervisor(['/usr/sbin/haproxy'], 'unused', join(dir, 'ug.conf'), join(dir, 'units'));
      const inst = { lbId: LB, files, peerName: 'peer' };
      const unit = await sup.unitState(inst);
      assert.equal(unit, {
        name: `haproxy-${LB}.service`,
        load_state: 'loaded',
        active_state: 'failed',
        sub_state: 'failed',
        result: 'start-limit-hit',
        restarts: 5,
        failed: true,
      });
      await sup.start(inst).then(
        () => assert.unreachable('the start should fail'),
        (err: Error) => assert.match(err.message, /control process exited/),
      );
      const calls = readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n');
      assert.ok(calls[0]!.startsWith(`show -p LoadState -p ActiveState -p SubState -p Result -p NRestarts haproxy-${LB}.service`), calls[0]);
      // Stopped after the refusal: Restart=always must not retry a config the agent withdraws.
      assert.equal(calls.slice(-3), [`reset-failed haproxy-${LB}.service`, `start haproxy-${LB}.service`, `stop haproxy-${LB}.service`]);
    },
  );
});

test.run();
