// The certificate files the spec fixtures (test/fixtures/specs/*.json) name in
// their *_ref fields, as the agent holds them in <base_cert_dir>/<lb_id>/:
//
//   server.pem       default listener certificate + key, CN www.example.test
//   sni-a.pem        SNI certificate + key, CN/SAN a.example.test
//   sni-b.pem        SNI certificate + key, CN/SAN b.example.test
//   client-ca.pem    CA that listeners verify client certificates with
//   client-crl.pem   CRL issued by client-ca (empty)
//   pool-client.pem  client certificate + key the listener presents to members
//   pool-ca.pem      CA that members' server certificates are verified with
//   pool-crl.pem     CRL issued by pool-ca (empty)
//
// The CAs' keys and the intermediate files stay in a scratch directory that is
// removed afterwards, so `dir` ends up with exactly these eight files.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issue, makeCa, type Ca } from './certs.js';
import { testDir } from './haproxies.js';

export const FIXTURE_CERT_FILES = [
  'server.pem',
  'sni-a.pem',
  'sni-b.pem',
  'client-ca.pem',
  'client-crl.pem',
  'pool-client.pem',
  'pool-ca.pem',
  'pool-crl.pem',
] as const;

/** An empty CRL signed by `ca`, via `openssl ca -gencrl` with a minimal config. */
function makeCrl(ca: Ca, out: string): void {
  writeFileSync(join(ca.dir, 'index.txt'), '');
  writeFileSync(join(ca.dir, 'crlnumber'), '1000\n');
  writeFileSync(
    join(ca.dir, 'crl.cnf'),
    [
      '[ca]',
      'default_ca = test',
      '[test]',
      `dir = ${ca.dir}`,
      'database = $dir/index.txt',
      'crlnumber = $dir/crlnumber',
      'default_md = sha256',
      'default_crl_days = 30',
      '',
    ].join('\n'),
  );
  execFileSync('openssl', ['ca', '-batch', '-gencrl', '-config', 'crl.cnf', '-cert', ca.cert, '-keyfile', ca.key, '-out', out], { cwd: ca.dir, stdio: 'pipe' });
}

export function writeFixtureCerts(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'fixture-pki-'));
  try {
    // One directory per CA: openssl ca keeps its database and serials next to it.
    const caIn = (name: string): Ca => {
      const caDir = join(work, name);
      mkdirSync(caDir);
      return makeCa(caDir, name);
    };
    const listenerCa = caIn('listener-ca');
    const clientCa = caIn('client-ca');
    const poolCa = caIn('pool-ca');

    const server = issue(listenerCa, 'server', { dnsName: 'www.example.test', usage: 'serverAuth' });
    const sniA = issue(listenerCa, 'sni-a', { dnsName: 'a.example.test', usage: 'serverAuth' });
    const sniB = issue(listenerCa, 'sni-b', { dnsName: 'b.example.test', usage: 'serverAuth' });
    const poolClient = issue(poolCa, 'pool-client', { dnsName: 'pool-client.example.test', usage: 'clientAuth' });

    copyFileSync(server.pem, join(dir, 'server.pem'));
    copyFileSync(sniA.pem, join(dir, 'sni-a.pem'));
    copyFileSync(sniB.pem, join(dir, 'sni-b.pem'));
    copyFileSync(poolClient.pem, join(dir, 'pool-client.pem'));
    copyFileSync(clientCa.cert, join(dir, 'client-ca.pem'));
    copyFileSync(poolCa.cert, join(dir, 'pool-ca.pem'));
    makeCrl(clientCa, join(dir, 'client-crl.pem'));
    makeCrl(poolCa, join(dir, 'pool-crl.pem'));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** A test directory with the fixture certificates in certs/ and an empty work/ for `checkSpec` scratch trees. */
export async function fixtureWorkspace(prefix: string): Promise<{ certDir: string; workRoot: string }> {
  const dir = await testDir(prefix);
  const certDir = join(dir, 'certs');
  const workRoot = join(dir, 'work');
  mkdirSync(certDir);
  mkdirSync(workRoot);
  writeFixtureCerts(certDir);
  return { certDir, workRoot };
}
