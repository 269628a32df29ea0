// Octavia's own controller code (python3-octavia) as a test peer: the REST
// client a worker uses, and its JinjaTemplater. See test/interop/octavia_peer.py.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { OCTAVIAS, octaviaPython, type OctaviaUnderTest } from './haproxies.js';
import type { AgentUnderTest } from './agent-process.js';

const PEER = fileURLToPath(new URL('../../../test/interop/octavia_peer.py', import.meta.url));

/** What a worker's client is configured with for an agent: its certificates, port, base_path and cert dir. */
export type PeerTarget = Pick<AgentUnderTest, 'amphoraId' | 'client' | 'serverCa' | 'port' | 'basePath' | 'certDir'>;

export interface PeerAnswer {
  ok: boolean;
  result?: unknown;
  exception?: string;
  message?: string;
  trace?: string;
}

export class OctaviaPeer {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly answers: ((a: PeerAnswer) => void)[] = [];
  stderr = '';

  constructor(readonly release: OctaviaUnderTest = OCTAVIAS[0]!) {
    this.child = spawn(...octaviaPython(release, PEER));
    this.child.stderr.on('data', (d) => {
      this.stderr += d;
    });
    createInterface({ input: this.child.stdout }).on('line', (line) => this.answers.shift()?.(JSON.parse(line) as PeerAnswer));
    // A Python that died answers every waiting request with its last words,
    // instead of leaving the test waiting for ever.
    this.child.on('exit', (code, signal) => {
      this.exited = { ok: false, exception: 'PeerExited', message: `octavia_peer.py exited (${signal ?? code})`, trace: this.stderr };
      for (const answer of this.answers.splice(0)) answer(this.exited);
    });
  }

  private exited: PeerAnswer | null = null;

  /**
   * A release's client configured as a worker's would be for the agent under
   * test (its certificates, port and paths as the agent sees them; a few quick retries).
   */
  /** `more`: further oslo.config overrides by group (a certificate manager, for TERMINATED_HTTPS listeners). */
  static async connect(
    release: OctaviaUnderTest,
    agent: PeerTarget,
    lbNetworkIp = '127.0.0.1',
    more: Record<string, Record<string, unknown>> = {},
  ): Promise<OctaviaPeer> {
    const peer = new OctaviaPeer(release);
    const setup = await peer.request('setup', {
      amphora_id: agent.amphoraId,
      lb_network_ip: lbNetworkIp,
      overrides: {
        haproxy_amphora: {
          client_cert: agent.client.pem,
          server_ca: agent.serverCa.cert,
          bind_port: agent.port,
          base_path: agent.basePath,
          base_cert_dir: agent.certDir,
          connection_max_retries: 3,
          connection_retry_interval: 1,
        },
        ...more,
      },
    });
    if (!setup.ok) {
      peer.close();
      throw new Error(`Octavia client setup (${release.label}): ${setup.message}\n${setup.trace ?? ''}`);
    }
    return peer;
  }

  /** haproxy.cfg for one listener and pool, rendered by this release's JinjaTemplater (octavia_peer.py's render op). */
  async renderConfig(args: Record<string, unknown>): Promise<string> {
    const a = await this.request('render', args);
    if (!a.ok) throw new Error(`JinjaTemplater (${this.release.label}) failed: ${a.exception}: ${a.message}\n${a.trace ?? ''}`);
    return a.result as string;
  }

  request(op: string, args: unknown): Promise<PeerAnswer> {
    if (this.exited) return Promise.resolve(this.exited);
    return new Promise((resolve) => {
      this.answers.push(resolve);
      this.child.stdin.write(`${JSON.stringify({ op, args })}\n`);
    });
  }

  /** Call a method of AmphoraAPIClient1_0 with the amphora as first argument; throws on a Python exception. */
  async call(method: string, ...params: unknown[]): Promise<unknown> {
    const a = await this.request('call', { method, params });
    if (!a.ok) throw Object.assign(new Error(`${a.exception}: ${a.message}\n${a.trace ?? ''}`), { exception: a.exception });
    return a.result;
  }

  /** Like call, but returns the Python exception class name (or null when none was raised). */
  async callExpectingError(method: string, ...params: unknown[]): Promise<string | null> {
    const a = await this.request('call', { method, params });
    return a.ok ? null : a.exception!;
  }

  close(): void {
    this.child.stdin.end();
  }
}
