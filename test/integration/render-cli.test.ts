// `amphora-agent render` and `check` as an operator runs them.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { writeFixtureCerts } from '../helpers/fixture-certs.js';

const MAIN = join(process.cwd(), 'dist', 'agent', 'main.js');
const FIXTURE = join(process.cwd(), 'test', 'fixtures', 'specs', 'terminated-https-sni.json');

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [MAIN, ...args], { env: { ...process.env, TMPDIR: join(certDirRoot, 'tmp') } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

let certDirRoot = '';
const t = suite('render and check commands');

t.before(async () => {
  certDirRoot = await testDir('cli');
  mkdirSync(join(certDirRoot, 'tmp'));
  mkdirSync(join(certDirRoot, 'certs'));
  writeFixtureCerts(join(certDirRoot, 'certs'));
});

t('render prints the haproxy config; --haproxy-version gates init-state', async () => {
  const old = await cli(['render', FIXTURE, '--haproxy-version', '2.6']);
  assert.is(old.code, 0, old.stderr);
  assert.match(old.stdout, /^frontend l-tls$/m);
  assert.match(old.stdout, /ssl crt-list \/var\/lib\/octavia\/certs\/\S+\/l-tls\.pem/);
  assert.not.match(old.stdout, /init-state/);
  const fixed = await cli(['render', FIXTURE, '--haproxy-version', '3.4']);
  assert.match(fixed.stdout, /init-state fully-down/);
});

for (const h of HAPROXIES) {
  t(`check validates with the real binary (${h.label})`, async () => {
    const res = await cli(['check', FIXTURE, '--haproxy', h.command.join(' '), '--cert-dir', join(certDirRoot, 'certs')]);
    assert.is(res.code, 0, `${res.stdout}${res.stderr}`);
    assert.match(res.stdout, /^haproxy: valid$/m);
  });
}

t('check without the certificate files says which one is missing', async () => {
  const res = await cli(['check', FIXTURE, '--haproxy', '/usr/sbin/haproxy', '--cert-dir', join(certDirRoot, 'tmp')]);
  assert.is(res.code, 2);
  assert.match(res.stderr, /certificate file \S+\.pem is missing \(give --cert-dir\)/);
});

t('an invalid spec exits 2 and names the field', async () => {
  const bad = join(certDirRoot, 'bad.json');
  writeFileSync(bad, JSON.stringify({ id: 'x', vip_address: '203.0.113.1', listeners: [{ id: 'l', protocol: 'HTTP', protocol_port: 99999 }] }));
  const res = await cli(['render', bad]);
  assert.is(res.code, 2);
  assert.match(res.stderr, /listeners\[0\]\.protocol_port: must be <= 65535/);
  const garbage = join(certDirRoot, 'garbage.json');
  writeFileSync(garbage, '{not json');
  const g = await cli(['render', garbage, '--haproxy-version', '2.6']);
  assert.is(g.code, 2);
  assert.match(g.stderr, /not valid JSON/);
});

t.run();
