// The built-in development configuration: everything in one local folder, a
// development CA with server and client certificates made on first start, the
// API on 127.0.0.1:9443 with mutual TLS. It is an ordinary amphora-agent.conf,
// so the agent runs on it exactly as on an amphora.
import { join, resolve } from 'node:path';
import { run } from '../system/exec.js';
import { ensureDir, exists, writeFileAtomic } from '../system/files.js';
import { readFile } from 'node:fs/promises';

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
export async function ensureDevSetup(dirArg: string, runsAsRoot: boolean): Promise<DevSetup> {
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
    await openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', 'ca.key', '-out', 'ca.pem', '-days', days, '-subj', '/CN=amphora-agent development CA'], certs);
    for (const [name, subject, ext] of [
      ['server', '/CN=localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth'],
      ['client', '/CN=octavia-controller', 'extendedKeyUsage=clientAuth'],
    ] as const) {
      await writeFileAtomic(join(certs, `${name}.ext`), `${ext}\n`, 0o600);
      await openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
        '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject], certs);
      await openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
        '-days', days, '-extfile', `${name}.ext`, '-out', `${name}.crt`], certs);
    }
    // Octavia's server.pem holds the certificate followed by its key.
    const serverPem = (await readFile(join(certs, 'server.crt'), 'utf8')) + (await readFile(join(certs, 'server.key'), 'utf8'));
    await writeFileAtomic(join(certs, 'server.pem'), serverPem, 0o600);
    await writeFileAtomic(setup.clientCert, await readFile(join(certs, 'client.crt'), 'utf8'), 0o600);
  }
  if (!(await exists(setup.configFile))) {
    await writeFileAtomic(setup.configFile, [
      '# Development configuration written by `amphora-agent serve` on first start.',
      '[DEFAULT]',
      'debug = False',
      '',
      '[haproxy_amphora]',
      `base_path = ${join(dir, 'lib')}`,
      `base_cert_dir = ${join(dir, 'lib', 'certs')}`,
      'bind_host = 127.0.0.1',
      'bind_port = 9443',
      'haproxy_cmd = haproxy',
      // A workstation's memory is not an amphora's: sized from it, a TLS
      // listener's session cache would take gigabytes.
      'tune_from_amphora_details = false',
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
      // Without root there is no namespace to create: haproxy runs beside the agent.
      `network_namespace = ${runsAsRoot ? 'amphora-haproxy' : ''}`,
      `systemd_unit_dir = ${join(dir, 'units')}`,
      '',
      '[controller_worker]',
      'loadbalancer_topology = SINGLE',
      '',
    ].join('\n'), 0o600);
  }
  return setup;
}
