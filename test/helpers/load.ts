// A constant-rate HTTP (or HTTPS) load generator that records every request
// and its outcome. Each request opens a new connection (and TLS session), as
// most clients of a load balancer do, so reloads are exercised on accept as
// well as on transfer.
import http from 'node:http';
import https from 'node:https';

export interface RequestRecord {
  start: number;
  end: number;
  status: number | null;
  member: string | null;
  error: string | null;
}

export class LoadGenerator {
  readonly records: RequestRecord[] = [];
  private running = false;
  private loops: Promise<void>[] = [];

  /** `timeoutMs`: how long a client waits for an answer before it counts the request as failed. */
  constructor(
    private readonly url: string,
    private readonly ratePerSecond = 300,
    private readonly concurrency = 12,
    private readonly timeoutMs = 5000,
  ) {}

  start(): this {
    this.running = true;
    const interval = (1000 * this.concurrency) / this.ratePerSecond;
    for (let i = 0; i < this.concurrency; i++) this.loops.push(this.loop(interval, (i * interval) / this.concurrency));
    return this;
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    this.loops = [];
  }

  get failures(): RequestRecord[] {
    return this.records.filter((r) => r.status !== 200);
  }

  /** Requests answered by each member. */
  byMember(since = 0): Map<string, number> {
    const m = new Map<string, number>();
    for (const r of this.records) {
      if (r.start >= since && r.member) m.set(r.member, (m.get(r.member) ?? 0) + 1);
    }
    return m;
  }

  rate(): number {
    if (this.records.length < 2) return 0;
    const span = this.records[this.records.length - 1]!.start - this.records[0]!.start;
    return (this.records.length * 1000) / Math.max(span, 1);
  }

  describeFailures(max = 5): string {
    return this.failures
      .slice(0, max)
      .map((r) => `${r.status ?? r.error} at +${r.start - (this.records[0]?.start ?? 0)}ms`)
      .join(', ');
  }

  private async loop(interval: number, offset: number): Promise<void> {
    await sleep(offset);
    let next = Date.now();
    while (this.running) {
      this.records.push(await this.once());
      next += interval;
      const wait = next - Date.now();
      if (wait > 0) await sleep(wait);
      else next = Date.now();
    }
  }

  private once(): Promise<RequestRecord> {
    const start = Date.now();
    return new Promise((resolve) => {
      // A TLS-terminated listener's certificate is a test CA's: what is measured is the load balancer, not the chain.
      const get = this.url.startsWith('https:') ? https.get : http.get;
      const req = get(this.url, { agent: false, timeout: this.timeoutMs, headers: { connection: 'close' }, rejectUnauthorized: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            start,
            end: Date.now(),
            status: res.statusCode ?? null,
            member: (res.headers['x-member'] as string | undefined) ?? null,
            error: null,
          }),
        );
        res.on('error', (e) => resolve({ start, end: Date.now(), status: null, member: null, error: e.message }));
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (e) => resolve({ start, end: Date.now(), status: null, member: null, error: e.message }));
    });
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Poll until `check` returns a truthy value, or fail with `what` at the deadline. */
export async function waitFor<T>(what: string, check: () => Promise<T> | T, timeoutMs = 15_000, everyMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
