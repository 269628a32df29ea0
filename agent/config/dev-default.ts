// The built-in development configuration: everything in one local folder, a
// development CA with server and client certificates made on first start, the
// API on 127.0.0.1:9443 with mutual TLS. It is an ordinary amphora-agent.conf,
// so the agent runs on it exactly as on an amphora.
//
// VIPs on a development machine: haproxy runs beside the agent (no network
// namespace), and right before haproxy loads a config each of its bind
// addresses in DEV_VIP_NETWORK is made local on loopback, one /32 at a time
// (`ip route replace local 203.0.113.10/32 dev lo table local`, the kernel's
// "AnyIP"). A spec whose VIP is there binds as on an amphora, the host reaches
// the listener directly, and haproxy reaches members listening on the host's
// own loopback. 203.0.113.0/24 is TEST-NET-3 (RFC 5737), where the test
// fixtures' VIPs come from; only the addresses a load balancer binds are
// taken, because some networks do use the range (this project's own CI
// machines reach their package mirrors at 203.0.113.80, and a route for the
// whole prefix cut them off). Production configs never come through here.
import { chmod, chown, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { run } from '../system/exec.js';
import { ensureDir, exists, writeFileAtomic } from '../system/files.js';

/** IPv4 VIPs the development default makes usable (local on loopback). */
export const DEV_VIP_NETWORK = '203.0.113.0/24';

/**
 * A listener without connection_limit gets Octavia's 50,000, for which haproxy
 * wants about 125,000 file descriptors: more than a workstation's hard limit
 * often is (an amphora's unit sets LimitNOFILE=2600000), and haproxy would not start.
 */
const DEV_CONNECTION_LIMIT = 'default_connection_limit = 5000';

/** The first line of a config this file wrote. */
const HEADER = '# Development configuration written by `amphora-agent serve` on first start.';

export interface DevSetup {
  configFile: string;
  caFile: string;
  clientCert: string;
  clientKey: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  const res = await run(['openssl', ...args], { cwd });
  if (res.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${res.output.trim()}`);
}

/** Create (once) the development CA, certificates and config under `dir`. */
export async function ensureDevSetup(dirArg: string): Promise<DevSetup> {
  const dir = resolve(dirArg);
  const certs = join(dir, 'certs');
  await ensureDir(certs, 0o700);
  const setup: DevSetup = {
    configFile: join(dir, 'amphora-agent.conf'),
    caFile: join(certs, 'ca.pem'),
    clientCert: join(certs, 'client.pem'),
    clientKey: join(certs, 'client.key'),
  };
  if (!(await exists(join(certs, 'server.pem')))) {
    const days = '3650';
    await openssl(
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        'ca.key',
        '-out',
        'ca.pem',
        '-days',
        days,
        '-subj',
        '/CN=amphora-agent development CA',
      ],
      certs,
    );
    for (const [name, subject, ext] of [
      ['server', '/CN=localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth'],
      ['client', '/CN=octavia-controller', 'extendedKeyUsage=clientAuth'],
    ] as const) {
      await writeFileAtomic(join(certs, `${name}.ext`), `${ext}\n`, 0o600);
      await openssl(
        ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject],
        certs,
      );
      await openssl(
        [
          'x509',
          '-req',
          '-in',
          `${name}.csr`,
          '-CA',
          'ca.pem',
          '-CAkey',
          'ca.key',
          '-CAcreateserial',
          '-days',
          days,
          '-extfile',
          `${name}.ext`,
          '-out',
          `${name}.crt`,
        ],
        certs,
      );
    }
    // Octavia's server.pem holds the certificate followed by its key.
    const serverPem = (await readFile(join(certs, 'server.crt'), 'utf8')) + (await readFile(join(certs, 'server.key'), 'utf8'));
    await writeFileAtomic(join(certs, 'server.pem'), serverPem, 0o600);
    await writeFileAtomic(setup.clientCert, await readFile(join(certs, 'client.crt'), 'utf8'), 0o600);
    await giveToSudoUser([dir, certs], [setup.caFile, setup.clientCert, setup.clientKey]);
  }
  if (!(await exists(setup.configFile))) {
    await writeFileAtomic(
      setup.configFile,
      [
        HEADER,
        '[DEFAULT]',
        'debug = False',
        '',
        '[haproxy_amphora]',
        `base_path = ${join(dir, 'lib')}`,
        `base_cert_dir = ${join(dir, 'lib', 'certs')}`,
        'bind_host = 127.0.0.1',
        `bind_port = ${devPort()}`,
        'haproxy_cmd = haproxy',
        // A workstation's memory is not an amphora's: sized from it, a TLS
        // listener's session cache would take gigabytes.
        'tune_from_amphora_details = false',
        DEV_CONNECTION_LIMIT,
        '',
        '[health_manager]',
        'controller_ip_port_list =',
        'heartbeat_interval = 10',
        '',
        '[amphora_agent]',
        `agent_server_ca = ${setup.caFile}`,
        `agent_server_cert = ${join(certs, 'server.pem')}`,
        `agent_server_network_dir = ${join(dir, 'interfaces')}`,
        'amphora_id = development-amphora',
        'process_manager = direct',
        // haproxy runs beside the agent, where the development VIPs are local
        // (DEV_VIP_NETWORK) and members on this host's loopback are reachable.
        'network_namespace =',
        `systemd_unit_dir = ${join(dir, 'units')}`,
        '',
        '[controller_worker]',
        'loadbalancer_topology = SINGLE',
        '',
        // Readable: it holds paths and ports, and examples/lb reads it without root.
      ].join('\n'),
      0o644,
    );
  } else {
    // Written by an earlier version: haproxy ran in an empty namespace, where
    // no VIP could bind and no member was reachable, and a spec without a
    // connection limit did not start.
    const text = await readFile(setup.configFile, 'utf8');
    if (text.startsWith(HEADER)) {
      let updated = text.replace(/^network_namespace = amphora-haproxy$/m, 'network_namespace =');
      if (!/^\s*default_connection_limit\s*=/m.test(updated)) {
        updated = updated.replace(/^tune_from_amphora_details = false$/m, `$&\n${DEV_CONNECTION_LIMIT}`);
      }
      if (updated !== text) await writeFileAtomic(setup.configFile, updated, 0o644);
    }
  }
  return setup;
}

/** The API port of a new development config; AMPHORA_AGENT_DEV_PORT lets tests run beside a developer's agent. */
function devPort(): number {
  const port = Number(process.env.AMPHORA_AGENT_DEV_PORT ?? 9443);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`AMPHORA_AGENT_DEV_PORT: not a port: ${process.env.AMPHORA_AGENT_DEV_PORT}`);
  return port;
}

/**
 * `sudo npm start` writes the certificates as root; the client certificate,
 * its key and the CA go to the user who ran sudo, so their curl can read them.
 */
async function giveToSudoUser(dirs: string[], files: string[]): Promise<void> {
  const uid = Number(process.env.SUDO_UID);
  const gid = Number(process.env.SUDO_GID);
  if (process.getuid?.() !== 0 || !Number.isInteger(uid) || !Number.isInteger(gid) || uid === 0) return;
  // The folders stay root's (the agent reads its config there), only passable.
  for (const d of dirs) await chmod(d, 0o711);
  for (const f of files) await chown(f, uid, gid);
}

/** Why development VIPs cannot be made local (not root), or null. */
export function devVipsUnusable(): string | null {
  return process.getuid?.() === 0 ? null : 'not running as root';
}

/** Make each address of DEV_VIP_NETWORK among `addresses` local on loopback (idempotent; needs root). */
export async function ensureDevVips(addresses: string[]): Promise<void> {
  if (devVipsUnusable()) return;
  for (const a of new Set(addresses)) {
    if (!/^203\.0\.113\.\d{1,3}$/.test(a)) continue;
    await run(['ip', 'route', 'replace', 'local', `${a}/32`, 'dev', 'lo', 'table', 'local']);
  }
}
