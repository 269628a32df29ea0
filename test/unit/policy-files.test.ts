// The files an uploaded config names (policy/files.ts) and the certificate
// files both APIs store (loadbalancer/certificates.ts): links resolved on
// disk, PEM only, crt-lists that name only the load balancer's own
// certificates. The Octavia bundle is built by Octavia 11's own build_pem.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import { linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentConfig } from '../../agent/config/agent-config.js';
import { checkFiles, resolveLinks } from '../../agent/haproxy/config/policy/files.js';
import { parseCrtList } from '../../agent/haproxy/config/policy/crt-list.js';
import { readPem } from '../../agent/haproxy/config/policy/pem.js';
import type { FileReference, PolicyContext } from '../../agent/haproxy/config/policy/types.js';
import { certificateFileProblem, InvalidCertificateFileError, storeCertificate } from '../../agent/loadbalancer/certificates.js';
import { issue, makeCa } from '../helpers/certs.js';

const root = mkdtempSync(join(tmpdir(), 'aat-policy-files-'));
const base = join(root, 'lib');
const certs = join(root, 'certs');
const etc = join(root, 'etc');
const LB = 'lb-1';
const mine = join(certs, LB);
const theirs = join(certs, 'lb-2');
for (const d of [join(base, LB), mine, theirs, etc]) mkdirSync(d, { recursive: true });

const ca = makeCa(etc, 'ca');
const leaf = issue(ca, 'leaf', { dnsName: 'www.example.test', usage: 'serverAuth' });
const PEM = readFileSync(leaf.pem);
const serverPem = join(etc, 'server.pem');
writeFileSync(serverPem, PEM);
writeFileSync(join(mine, 'own.pem'), PEM);
writeFileSync(join(theirs, 'other.pem'), PEM);
writeFileSync(join(etc, 'outside.pem'), PEM);
execFileSync('openssl', ['ca', '-help'], { stdio: 'ignore' }); // openssl is there for the CRL below
writeFileSync(join(etc, 'index.txt'), '');
writeFileSync(join(etc, 'crlnumber'), '1000\n');
writeFileSync(
  join(etc, 'crl.cnf'),
  `[ca]\ndefault_ca = t\n[t]\ndatabase = ${etc}/index.txt\ncrlnumber = ${etc}/crlnumber\ndefault_md = sha256\ndefault_crl_days = 3\n`,
);
execFileSync('openssl', ['ca', '-gencrl', '-batch', '-config', join(etc, 'crl.cnf'), '-cert', ca.cert, '-keyfile', ca.key, '-out', join(etc, 'crl.pem')], {
  stdio: 'pipe',
});
const CRL = readFileSync(join(etc, 'crl.pem'));

const ctx: PolicyContext = { lbId: LB, basePath: base, baseCertDir: certs, protectedFiles: [serverPem, join(etc, 'amphora-agent.conf')] };
const config = {
  haproxyAmphora: { baseCertDir: certs, basePath: base },
  amphoraAgent: { agentServerCert: serverPem, agentServerCa: ca.cert },
} as unknown as AgentConfig;

const ref = (path: string, kind: FileReference['kind'] = 'certificate', directive = 'bind crt'): FileReference => ({ line: 7, directive, path, kind });
const refused = async (r: FileReference, why: RegExp) => {
  const out = await checkFiles([r], ctx);
  assert.ok(out.length > 0, `${r.path} passed`);
  assert.is(out[0]!.line, 7);
  assert.match(out.map((v) => v.reason).join('\n'), why);
};
const passes = async (r: FileReference) => assert.equal(await checkFiles([r], ctx), []);
const crtList = (name: string, text: string) => {
  writeFileSync(join(mine, name), text);
  return ref(join(mine, name), 'crt-list', 'bind crt-list');
};

/**
 * The bundle in the form Octavia's build_pem gives (certificate, key in
 * OpenSSL's traditional format, intermediates, joined by newlines). The
 * bytes of Octavia 11, 16 and 19's own build_pem are checked in
 * integration/policy-files, where their code is installed.
 */
const octaviaBundle = () => {
  const key = createPrivateKey(readFileSync(leaf.key)).export({ type: 'sec1', format: 'pem' });
  return Buffer.from([readFileSync(leaf.cert, 'utf8').trim(), key.toString().trim(), readFileSync(ca.cert, 'utf8').trim(), ''].join('\n'));
};

test.after(() => rmSync(root, { recursive: true, force: true }));

test('links are resolved as the kernel does, dangling ones and `link/..` included', async () => {
  symlinkSync(join(etc, 'nowhere', 'x'), join(mine, 'dangling.pid'));
  mkdirSync(join(etc, 'sub'));
  symlinkSync(join(etc, 'sub'), join(mine, 'up'));
  assert.is(await resolveLinks(join(mine, 'dangling.pid')), join(etc, 'nowhere', 'x'));
  assert.is(await resolveLinks(`${mine}/up/../server.pem`), serverPem);
  assert.is(await resolveLinks(join(mine, 'own.pem')), join(mine, 'own.pem'));
  assert.is(await resolveLinks(join(mine, 'missing', 'x.pem')), join(mine, 'missing', 'x.pem'));
  await refused(ref(join(mine, 'dangling.pid'), 'file', 'pidfile'), /leads to .*nowhere\/x", outside/);
});

test('own files pass; a missing one passes (haproxy -c refuses it)', async () => {
  await passes(ref(join(mine, 'own.pem')));
  await passes(ref(join(mine, 'missing.pem')));
  await passes(ref(join(base, LB, 'errors', '503.http'), 'file', 'errorfile'));
});

test("a symlink out of the directory, and one to the agent's server.pem, are refused", async () => {
  symlinkSync(join(etc, 'outside.pem'), join(mine, 'out.pem'));
  await refused(ref(join(mine, 'out.pem')), /leads to ".*etc\/outside\.pem", outside .*certs\/lb-1\//);
  symlinkSync(serverPem, join(mine, 'agent.pem'));
  await refused(ref(join(mine, 'agent.pem')), /outside/);
  // Even if the agent's certificate lived in the load balancer's directory.
  await refused(ref(serverPem), /outside/);
  symlinkSync('../lb-2/other.pem', join(mine, 'relative.pem'));
  await refused(ref(join(mine, 'relative.pem')), /lb-2\/other\.pem", outside/);
});

test('a parent directory that is a symlink, and a load balancer directory that is one, are refused', async () => {
  symlinkSync(theirs, join(mine, 'sub'));
  await refused(ref(join(mine, 'sub', 'other.pem')), /lb-2\/other\.pem", outside/);
  symlinkSync(theirs, join(certs, 'lb-3'));
  const out = await checkFiles([ref(join(certs, 'lb-3', 'other.pem'))], { ...ctx, lbId: 'lb-3' });
  assert.match(out[0]?.reason ?? '', /lb-2\/other\.pem", outside .*certs\/lb-3\//);
  symlinkSync(etc, join(base, LB, 'errors-link'));
  await refused(ref(join(base, LB, 'errors-link', 'server.pem'), 'file', 'errorfile'), /outside/);
});

test("a hard link (to the agent's key, say) is refused", async () => {
  linkSync(join(etc, 'outside.pem'), join(mine, 'hard.pem'));
  await refused(ref(join(mine, 'hard.pem')), /2 hard links/);
});

test('certificate files must hold PEM: a path or a directory is refused, text around the blocks is not', async () => {
  writeFileSync(join(mine, 'junk.pem'), Buffer.concat([PEM, Buffer.from('global\n  daemon\n')]));
  await passes(ref(join(mine, 'junk.pem')));
  writeFileSync(join(mine, 'path.pem'), `${serverPem}\n`);
  await refused(ref(join(mine, 'path.pem'), 'certificate', 'bind ca-file'), /not a PEM file.*holds no PEM block/);
  mkdirSync(join(mine, 'dir.pem'));
  await refused(ref(join(mine, 'dir.pem')), /not a regular file/);
  writeFileSync(join(mine, 'crl.pem'), CRL);
  await passes(ref(join(mine, 'crl.pem'), 'certificate', 'bind crl-file'));
});

test('a file haproxy opens next to a certificate (.key, .ocsp...) is confined too', async () => {
  writeFileSync(join(mine, 'nokey.pem'), readFileSync(leaf.cert));
  await passes(ref(join(mine, 'nokey.pem')));
  symlinkSync(serverPem, join(mine, 'nokey.pem.key'));
  await refused(ref(join(mine, 'nokey.pem')), /next to the certificate, .*nokey\.pem\.key" leads to .*server\.pem", outside/);
});

test("crt-lists: Octavia's form passes; /etc/shadow, another load balancer's or the agent's certificate are refused", async () => {
  writeFileSync(join(mine, 'sni.pem'), PEM);
  await passes(crtList('octavia.pem', `${[join(mine, 'own.pem'), join(mine, 'sni.pem')].join('\n')}\n`));
  await refused(crtList('shadow.pem', '/etc/shadow\n'), /line 1: certificate "\/etc\/shadow" is outside the load balancer's certificate directory/);
  await refused(crtList('theirs.pem', `${join(mine, 'own.pem')}\n${join(theirs, 'other.pem')} www.example.test\n`), /line 2: .*lb-2\/other\.pem" is outside/);
  await refused(crtList('agent-cert.pem', `${serverPem}\n`), /line 1: .*server\.pem" is outside/);
  await refused(crtList('dotdot.pem', `${mine}/../lb-2/other.pem\n`), /line 1: .* is outside/);
  // Links inside a crt-list's entries are resolved, and what they name must be PEM.
  await refused(crtList('via-link.pem', `${join(mine, 'agent.pem')}\n`), /line 1: .*agent\.pem" leads to .*server\.pem", outside/);
  await refused(crtList('path-entry.pem', `${join(mine, 'path.pem')}\n`), /line 1: .*path\.pem" is not a PEM file/);
  // A certificate file with text around its block is still read line by line when named as a crt-list.
  await refused(ref(join(mine, 'junk.pem'), 'crt-list', 'bind crt-list'), /"-----BEGIN" is not an absolute path/);
});

test('crt-lists are read as haproxy reads them: relative paths, options and brackets', async () => {
  await refused(crtList('relative-list.pem', 'own.pem\n'), /"own\.pem" is not an absolute path/);
  await refused(crtList('indented-comment.pem', ` # ${join(mine, 'own.pem')}\n`), /"#" is not an absolute path/);
  await refused(crtList('store.pem', '@store/cert\n'), /not an absolute path/);
  await refused(crtList('key-option.pem', `${join(mine, 'own.pem')} [key /etc/shadow] a.example.test\n`), /ssl option "key" is not one/);
  await refused(crtList('ca-option.pem', `${join(mine, 'own.pem')} [verify required ca-file ${serverPem}]\n`), /ca-file ".*server\.pem" is outside/);
  await refused(crtList('glued.pem', `${join(mine, 'own.pem')}[ca-file\t/etc/shadow]\n`), /ca-file "\/etc\/shadow" is outside/);
  await refused(crtList('unbalanced.pem', `${join(mine, 'own.pem')} [alpn h2\n`), /'\[' without '\]'/);
  await passes(
    crtList('comments.pem', `# Octavia\n\n${join(mine, 'own.pem')} [alpn h2,http/1.1 ca-file ${join(mine, 'crl.pem')}] a.example.test !b.example.test\r\n`),
  );
  assert.equal(parseCrtList(`#c\n/a/b.pem [verify none] x y\n`).entries, [{ line: 2, path: '/a/b.pem', optionFiles: [] }]);
  assert.equal(parseCrtList('/a\0/b\n').problems, [{ line: 1, reason: 'holds a NUL character' }]);
});

test("PEM reading: Octavia's bundle, CRLs, and what is not PEM", () => {
  const bundle = octaviaBundle();
  assert.equal(readPem(bundle), { ok: true, labels: ['CERTIFICATE', 'EC PRIVATE KEY', 'CERTIFICATE'] });
  assert.equal(readPem(CRL), { ok: true, labels: ['X509 CRL'] });
  assert.equal(readPem(Buffer.from(bundle.toString().replace(/\n/g, '\r\n'))).ok, true);
  const no = (data: Buffer | string, why: RegExp) => {
    const r = readPem(Buffer.from(data));
    assert.ok(!r.ok, `accepted ${String(data).slice(0, 40)}`);
    if (!r.ok) assert.match(r.reason, why);
  };
  no('', /no PEM block/);
  no(`${serverPem}\n`, /holds no PEM block/);
  no(Buffer.from([0x30, 0x82, 0x01, 0x00, 0xff]), /binary data \(byte 0x82 at offset 1\)/);
  no(Buffer.concat([bundle, Buffer.from('\0')]), /byte 0x00/);
  assert.equal(readPem(Buffer.concat([bundle, Buffer.from('trailing text\n')])).ok, true);
  assert.equal(readPem(Buffer.from(`Certificate:\n    Data: ...\n${PEM}`)).ok, true);
  no('-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n', /"OPENSSH PRIVATE KEY" block; only CERTIFICATE/);
  no('-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END CERTIFICATE-----\n', /DER structure says/);
  const lines = PEM.toString().split('\n');
  no([...lines.slice(0, 2), ...lines.slice(3)].join('\n'), /the CERTIFICATE block of line 1 holds \d+ bytes where its DER structure says/);
  no('-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n', /does not hold a DER structure/);
  no('-----BEGIN CERTIFICATE-----\n/etc/shadow x\n-----END CERTIFICATE-----\n', /is not base64/);
  no(PEM.toString().replace('-----END CERTIFICATE-----', '-----END X509 CRL-----'), /ends a X509 CRL block/);
  no(PEM.toString().replace(/-----END PRIVATE KEY-----\s*$/, ''), /never ends/);
});

test("certificate uploads: PEM, or (API 1.0) a crt-list of this load balancer's certificates; nothing else is written", async () => {
  const octavia = { crtList: true };
  assert.is(certificateFileProblem(config, LB, octaviaBundle(), octavia), null);
  assert.is(certificateFileProblem(config, LB, CRL, { crtList: false }), null);
  // Octavia's REST driver: the certificates' paths joined by newlines, with one at the end.
  const list = Buffer.from(`${[join(mine, 'aaa.pem'), join(mine, 'bbb.pem')].join('\n')}\n`);
  assert.is(certificateFileProblem(config, LB, list, octavia), null);
  assert.match(certificateFileProblem(config, LB, list, { crtList: false }) ?? '', /not a PEM file/);
  const no = (body: Buffer | string, why: RegExp) => assert.match(certificateFileProblem(config, LB, Buffer.from(body), octavia) ?? 'accepted', why);
  no(`${serverPem}`, /crt-list of this load balancer's certificates: line 1: certificate ".*server\.pem" is outside/);
  no(`${join(theirs, 'other.pem')}\n`, /is outside/);
  no('/etc/shadow\n', /is outside/);
  no('hello world\n', /"hello" is not an absolute path/);
  no('', /names no certificate/);
  no(Buffer.from([0x30, 0x82, 0x01, 0x00]), /neither PEM nor a crt-list: byte 0x82/);
  // Text beside a block is kept (haproxy skips it); named as a crt-list, the file is read line by line.
  assert.is(certificateFileProblem(config, LB, Buffer.concat([PEM, Buffer.from('\n/etc/shadow\n')]), octavia), null);

  await storeCertificate(config, LB, 'up.pem', octaviaBundle(), octavia);
  assert.equal(readFileSync(join(mine, 'up.pem')), octaviaBundle());
  try {
    await storeCertificate(config, LB, 'bad.pem', Buffer.from(`${serverPem}\n`), octavia);
    assert.unreachable('stored a path');
  } catch (err) {
    assert.instance(err, InvalidCertificateFileError);
  }
  assert.throws(() => readFileSync(join(mine, 'bad.pem')), /ENOENT/);
});

test.run();
