// HTTPS with mutual TLS only: the client certificate is required and verified
// against the controller CA before any request is read. The server certificate
// (certificate + key in one PEM, as Octavia ships it) can be swapped for new
// connections without restarting the listener.
import https from 'node:https';
import { readFile } from 'node:fs/promises';
import type { RequestListener } from 'node:http';
import type { SecureContextOptions } from 'node:tls';

export interface TlsFiles {
  /** PEM with the server certificate followed by its private key. */
  serverPem: string;
  /** CA that signs the controller's client certificates. */
  clientCa: string;
  minVersion: 'TLSv1.2' | 'TLSv1.3';
}

async function contextOptions(files: TlsFiles): Promise<SecureContextOptions> {
  const pem = await readFile(files.serverPem, 'utf8');
  const ca = await readFile(files.clientCa, 'utf8');
  // Node reads the certificate chain and the key out of the same PEM text.
  return { cert: pem, key: pem, ca, minVersion: files.minVersion };
}

export interface MtlsServer {
  server: https.Server;
  /** Re-read the server certificate; new connections get it. */
  reloadCertificate(): Promise<void>;
}

export async function createMtlsServer(files: TlsFiles, handler: RequestListener): Promise<MtlsServer> {
  const server = https.createServer({
    ...(await contextOptions(files)),
    requestCert: true,
    rejectUnauthorized: true,
  }, handler);
  return {
    server,
    async reloadCertificate() {
      server.setSecureContext(await contextOptions(files));
    },
  };
}
