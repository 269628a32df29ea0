// system/exec's run(): what every caller relies on (it replaced execa).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { launchDaemon, run } from '../../agent/system/exec.js';
import { haproxyEnvironment } from '../../agent/haproxy/process/environment.js';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

test('exit code, stdout apart, stdout and stderr interleaved in output', async () => {
  const r = await run(['sh', '-c', 'echo out; echo err >&2; exit 3']);
  assert.is(r.exitCode, 3);
  assert.is(r.stdout, 'out\n');
  assert.is(r.output, 'out\nerr\n');
  assert.is(r.timedOut, false);
  assert.is(r.command, 'sh -c echo out; echo err >&2; exit 3');
});

test('input goes to stdin; without input stdin is empty, not a pipe left open', async () => {
  assert.is((await run(['cat'], { input: 'abc' })).stdout, 'abc');
  assert.is((await run(['cat'])).stdout, '');
  // A command that stops reading early is no error.
  assert.is((await run(['head', '-c', '1'], { input: 'x'.repeat(1_000_000) })).exitCode, 0);
});

test('LC_ALL=C over the environment, and cwd', async () => {
  const r = await run(['sh', '-c', 'echo "$LC_ALL $PATH"; pwd'], { cwd: '/' });
  assert.is(r.stdout, `C ${process.env.PATH}\n/\n`);
});

test('a timeout kills the command: exit code -1, timedOut', async () => {
  const started = Date.now();
  const r = await run(['sleep', '10'], { timeoutMs: 200 });
  assert.is(r.exitCode, -1);
  assert.ok(r.timedOut);
  assert.ok(Date.now() - started < 5000);
});

test('a command that cannot start, or is killed, has exit code -1', async () => {
  const r = await run(['/nonexistent/command']);
  assert.is(r.exitCode, -1);
  assert.match(r.output, /ENOENT/);
  assert.is((await run(['sh', '-c', 'kill -9 $$'])).exitCode, -1);
});

test('a process left behind with the pipes does not hold run() past a short grace', async () => {
  const started = Date.now();
  const r = await run(['sh', '-c', 'sleep 5 & echo hi']);
  assert.is(r.exitCode, 0);
  assert.is(r.stdout, 'hi\n');
  assert.ok(Date.now() - started < 4500, `took ${Date.now() - started} ms`);
});

test("env is the whole environment of the command; without it, the agent's with C messages", async () => {
  process.env.AAT_EXEC_PROBE = 'agent';
  const names = (text: string) =>
    text
      .trim()
      .split('\n')
      .map((l) => l.slice(0, l.indexOf('=')))
      .filter((n) => n !== 'PWD')
      .sort();
  assert.equal(names((await run(['/usr/bin/env'], { env: haproxyEnvironment() })).stdout), ['LC_ALL', 'PATH']);
  const inherited = (await run(['/usr/bin/env'])).stdout;
  assert.match(inherited, /^AAT_EXEC_PROBE=agent$/m);
  assert.match(inherited, /^LC_ALL=C$/m);
  const log = join(mkdtempSync(join(tmpdir(), 'aat-exec-')), 'launch.log');
  await launchDaemon(['/usr/bin/env'], log, { env: haproxyEnvironment() });
  assert.equal(names(readFileSync(log, 'utf8')), ['LC_ALL', 'PATH']);
});

test.run();
