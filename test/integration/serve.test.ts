// The README's first command: `amphora-agent serve` with no config creates the
// development CA and certificates, listens on 127.0.0.1:9443 with mutual TLS,
// and prints a curl line that works.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loud } from '../helpers/hooks.js';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { testDir } from '../helpers/haproxies.js';
import { waitFor } from '../helpers/load.js';

const MAIN = fileURLToPath(new URL('../../agent/main.js', import.meta.url));
const exec = promisify(execFile);
let agent: ChildProcess;
let output = '';

test.before(
  loud(async () => {
    const cwd = await testDir('serve');
    agent = spawn(process.execPath, [MAIN, 'serve'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    agent.stdout!.on('data', (d) => {
      output += d;
    });
    agent.stderr!.on('data', (d) => {
      output += d;
    });
    await waitFor('the curl line', () => /curl .*\/1\.0\/info/.test(output), 30_000);
  }),
);

test.after(() => {
  agent.kill('SIGTERM');
});

test('the printed curl line answers /1.0/info over mutual TLS', async () => {
  const line = /^\s*(curl .*)$/m.exec(output)![1]!;
  const { stdout } = await exec('sh', ['-c', `${line} -sS -i`]);
  assert.match(stdout, /^HTTP\/1\.1 200/);
  assert.match(stdout, /content-type: application\/json\r\n/i);
  const body = JSON.parse(stdout.slice(stdout.indexOf('\r\n\r\n') + 4)) as Record<string, string>;
  assert.is(body.api_version, '1.0');
  assert.match(body.haproxy_version!, /^\d+\.\d+/);
});

test("version discovery on / and //; unknown paths get Octavia's JSON 404", async () => {
  const line = /^\s*(curl .*)\/1\.0\/info$/m.exec(output)![1]!;
  for (const path of ['/', '//']) {
    const { stdout } = await exec('sh', ['-c', `${line}${path} -sS`]);
    assert.equal(JSON.parse(stdout), { api_version: '1.0' });
  }
  const { stdout } = await exec('sh', ['-c', `${line}/1.0/nothing -sS -w ' %{http_code}'`]);
  assert.match(stdout, /"http_code":404\} 404$/);
});

test('a client without a certificate is refused at the handshake', async () => {
  const ca = /--cacert (\S+)/.exec(output)![1]!;
  const res = await exec('curl', ['-sS', '--cacert', ca, 'https://127.0.0.1:9443/'], {}).then(
    () => 0,
    (e: { code: number }) => e.code,
  );
  assert.ok(res !== 0, 'the request without a client certificate succeeded');
});

test.run();
