// Octavia's heartbeat receiver (test/interop/heartbeat_receiver.py) as a test
// peer: every datagram it gets, accepted (decoded message) or rejected.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { waitFor } from './load.js';
import { OCTAVIAS, octaviaPython, type OctaviaUnderTest } from './haproxies.js';

const SCRIPT = fileURLToPath(new URL('../../../test/interop/heartbeat_receiver.py', import.meta.url));

export interface Received {
  /** When the datagram arrived, by the receiver's clock: this process may read the line much later (a synchronous ssh in a VM test). */
  at: number;
  ok: boolean;
  message?: {
    id: string;
    seq: number;
    ver: number;
    listeners: Record<string, { status: string; stats: Record<string, number> }>;
    pools: Record<string, { status: string; members: Record<string, string> }>;
  };
  error?: string;
}

export class HeartbeatReceiver {
  readonly received: Received[] = [];
  private ready = false;
  private readonly child: ChildProcessWithoutNullStreams;

  constructor(
    readonly port: number,
    key: string,
    readonly release: OctaviaUnderTest = OCTAVIAS[0]!,
  ) {
    this.child = spawn(...octaviaPython(release, SCRIPT, [String(port), key]));
    this.child.stderr.resume();
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const d = JSON.parse(line) as { ready?: boolean } & Received;
      if (d.ready) this.ready = true;
      else this.received.push(d);
    });
  }

  async waitReady(): Promise<void> {
    await waitFor('the Octavia heartbeat receiver', () => this.ready, 30_000);
  }

  accepted(since = 0): NonNullable<Received['message']>[] {
    return this.received.filter((r) => r.ok && r.at >= since).map((r) => r.message!);
  }

  stop(): void {
    this.child.kill('SIGKILL');
  }
}
