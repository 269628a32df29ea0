// HTTPS with the controller's client certificate to a test agent, for the
// API 2.0 tests (API 1.0 tests use Octavia's own client instead).
import https from 'node:https';
import { readFileSync } from 'node:fs';
import type { AgentUnderTest } from './agent-process.js';

export interface ApiReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body parsed as JSON, or null. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever fields the route under test answers with
  json: any;
}

/** `connection`: a keep-alive https.Agent to reuse TLS connections (default: a new connection per request). */
export function apiRequest(
  agent: AgentUnderTest,
  method: string,
  path: string,
  opts: { body?: unknown; raw?: string | Buffer; headers?: Record<string, string>; connection?: https.Agent } = {},
): Promise<ApiReply> {
  const payload = opts.raw !== undefined ? opts.raw : opts.body !== undefined ? JSON.stringify(opts.body) : undefined;
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port: agent.port,
        method,
        path,
        servername: agent.amphoraId,
        ca: readFileSync(agent.serverCa.cert),
        cert: readFileSync(agent.client.cert),
        key: readFileSync(agent.client.key),
        headers: { ...(payload !== undefined ? { 'Content-Type': 'application/json' } : {}), ...opts.headers },
        agent: opts.connection ?? false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown = null;
          try {
            json = JSON.parse(text);
          } catch {
            /* not JSON */
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${path}: timeout`)));
    req.on('error', reject);
    req.end(payload);
  });
}
