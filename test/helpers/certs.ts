// Test PKI with openssl: CAs, server certificates that name the amphora (the
// controller checks the SAN against the amphora id), client certificates in
// Octavia's one-file form (certificate + key), and expired ones.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Ca {
  dir: string;
  name: string;
  cert: string;
  key: string;
}

export interface Issued {
  cert: string;
  key: string;
  /** Certificate followed by its key, as Octavia ships server.pem and client.pem. */
  pem: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/**
 * Python 3.13 verifies with VERIFY_X509_STRICT (Octavia 19's controller on sid):
 * a CA needs key usage, an issued certificate an authority key identifier.
 */
export function makeCa(dir: string, name: string): Ca {
  openssl(dir, [
    'req',
    '-x509',
    ...EC,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
    '-days',
    '30',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { dir, name, cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
}

/** Issue a certificate. `expired` makes one whose validity ended yesterday. */
export function issue(ca: Ca, name: string, opts: { dnsName?: string; usage: 'serverAuth' | 'clientAuth'; expired?: boolean }): Issued {
  const { dir } = ca;
  const ext = [
    `extendedKeyUsage=${opts.usage}`,
    'keyUsage=critical,digitalSignature',
    'basicConstraints=CA:FALSE',
    'subjectKeyIdentifier=hash',
    'authorityKeyIdentifier=keyid,issuer',
    ...(opts.dnsName ? [`subjectAltName=DNS:${opts.dnsName},IP:127.0.0.1`] : []),
  ].join('\n');
  writeFileSync(join(dir, `${name}.ext`), `${ext}\n`);
  openssl(dir, ['req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${opts.dnsName ?? name}`]);
  if (opts.expired) {
    // `openssl ca` is the one 3.0 command that takes explicit validity dates.
    writeFileSync(join(dir, 'index.txt'), '');
    writeFileSync(
      join(dir, 'ca.cnf'),
      [
        '[ca]',
        'default_ca = test',
        '[test]',
        `dir = ${dir}`,
        'database = $dir/index.txt',
        'new_certs_dir = $dir',
        'serial = $dir/serial',
        'default_md = sha256',
        'policy = any',
        'unique_subject = no',
        '[any]',
        'commonName = supplied',
        '',
      ].join('\n'),
    );
    writeFileSync(join(dir, 'serial'), '1000\n');
    openssl(dir, [
      'ca',
      '-batch',
      '-config',
      'ca.cnf',
      '-cert',
      ca.cert,
      '-keyfile',
      ca.key,
      '-in',
      `${name}.csr`,
      '-out',
      `${name}.crt`,
      '-startdate',
      '20200101000000Z',
      '-enddate',
      '20200102000000Z',
      '-extfile',
      `${name}.ext`,
      '-notext',
    ]);
  } else {
    openssl(dir, [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      ca.cert,
      '-CAkey',
      ca.key,
      '-CAcreateserial',
      '-days',
      '30',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    ]);
  }
  const pem = join(dir, `${name}-combined.pem`);
  writeFileSync(pem, readFileSync(join(dir, `${name}.crt`), 'utf8') + readFileSync(join(dir, `${name}.key`), 'utf8'));
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`), pem };
}
