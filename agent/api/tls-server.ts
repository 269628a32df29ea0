// HTTPS with mutual TLS only: the client certificate is required and verified
// against the controller CA before any request is read. The server certificate
// (certificate + key in one PEM, as Octavia ships it) can be swapped for new
// connections without restarting the listener.
//
// The management network can hold clients that are not the controller (a
// compromised neighbour, a scanner): every stage of a connection has a time
// limit, so idle, slow and half-open connections are closed and cost nothing
// for long, and the number of connections is capped. The values are far from
// what Octavia's controller does: it connects (10 s connect timeout), sends a
// whole request at once and waits up to 60 s for the answer (its
// rest_request_read_timeout), reusing the connection while it has work.
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

/** The API's connection limits (docs/operations.md, "Limits of the API"). */
export const API_LIMITS = {
  /** TCP connect to the end of the TLS handshake (node's default is 120 s). */
  handshakeTimeoutMs: 10_000,
  /** After the handshake, until a request's headers are in; again between kept-alive requests (keepAliveTimeoutMs). */
  firstRequestTimeoutMs: 10_000,
  /** First byte of a request to its last header (slow headers). */
  headersTimeoutMs: 10_000,
  /** A kept-alive connection with no request in flight (node's default). */
  keepAliveTimeoutMs: 5_000,
  /** How often node looks for connections past headersTimeout/requestTimeout (default 30 s, which would triple the time slow headers hold a connection). */
  checkIntervalMs: 1_000,
  /** Connections at once; more are closed on accept until timeouts free some. */
  maxConnections: 2_000,
  /** Header lines read per request; Octavia sends about ten. */
  maxHeadersCount: 100,
} as const;

export interface MtlsServer {
  server: https.Server;
  /** Re-read the server certificate; new connections get it. */
  reloadCertificate(): Promise<void>;
}

export async function createMtlsServer(files: TlsFiles, handler: RequestListener): Promise<MtlsServer> {
  const server = https.createServer(
    {
      ...(await contextOptions(files)),
      requestCert: true,
      rejectUnauthorized: true,
      handshakeTimeout: API_LIMITS.handshakeTimeoutMs,
      headersTimeout: API_LIMITS.headersTimeoutMs,
      keepAliveTimeout: API_LIMITS.keepAliveTimeoutMs,
      connectionsCheckingInterval: API_LIMITS.checkIntervalMs,
    },
    handler,
  );
  server.maxConnections = API_LIMITS.maxConnections;
  server.maxHeadersCount = API_LIMITS.maxHeadersCount;
  // node's HTTP timeouts start with a request's first byte: a connection
  // that completes the handshake and then sends nothing would stay open for
  // ever. Idle until its first request, it is closed (node destroys a socket
  // whose timeout nobody handles); once a request is in, the timer is off and
  // node's own timeouts take over, keep-alive included.
  server.on('secureConnection', (socket) => socket.setTimeout(API_LIMITS.firstRequestTimeoutMs));
  server.on('request', (req) => req.socket.setTimeout(0));
  return {
    server,
    async reloadCertificate() {
      server.setSecureContext(await contextOptions(files));
    },
  };
}
