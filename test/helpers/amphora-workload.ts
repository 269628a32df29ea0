// The standard amphora workload (issue 28), what an amphora's memory size is
// judged by: one load balancer with an HTTP and a TLS-terminated listener,
// 1,000 health-checked members (500 in each listener's pool, on the host),
// and 20 updates through Octavia 19's own amphora driver
// (update_amphora_listeners: the certificate and the config uploaded, then a
// reload over API 1.0), each replacing 5% of the members, under a constant
// client load on both listeners. It passes with 0 failed requests and no
// process killed for want of memory.
//
// Used by bench/amphora-memory (the smallest memory size, this image against
// Octavia's).
import { readFileSync } from 'node:fs';
import type { AmphoraVm } from './amphora-vm.js';
import { TestBackend } from './backend.js';
import { issue, makeCa } from './certs.js';
import { testDir } from './haproxies.js';
import { LoadGenerator, sleep, waitFor } from './load.js';
import { testPorts } from './ports.js';

export const WORKLOAD = {
  members: 1000,
  updates: 20,
  /** Members replaced by each update, half in each pool. */
  churn: 50,
  /** Requests per second on the HTTP and the HTTPS listener. */
  httpRate: 10,
  httpsRate: 5,
  /** Seconds after one update returns before the next is sent: the control plane's pace, not the agent's. */
  pause: 3,
  /**
   * How long a client waits for an answer (ms). An emulated amphora (TCG, one
   * vCPU) that reloads 1,000 members takes seconds of CPU: a slow answer is
   * reported (the longest wait), a missing one fails.
   */
  clientTimeoutMs: 30_000,
  /** 100 checks a second over the 1,000 members. */
  monitor: { delay: 10, timeout: 5, fall: 3, rise: 2, path: '/healthz' },
} as const;

/** Ports on the VIP-side host address; a ring larger than the members, so replaced members take fresh ports. */
const RING = WORKLOAD.members + 2 * WORKLOAD.churn;
const PORTS = testPorts('amphora-workload').range(RING);

export interface WorkloadResult {
  requests: number;
  failed: number;
  /** The first failures, for the report. */
  failures: string;
  /** The longest a request waited for its answer (ms). */
  longestWaitMs: number;
  updates: number;
  oomKills: number;
  seconds: number;
}

interface Member {
  id: string;
  address: string;
  port: number;
}

/** The members of update `step`: a window of the ring that moves by `churn` each step; ids say which step added them. */
function membersAt(step: number, host: string): { http: Member[]; https: Member[] } {
  const all: Member[] = [];
  for (let k = 0; k < WORKLOAD.members; k++) {
    const slot = step * WORKLOAD.churn + k;
    // A member's id is its slot on the unrolled ring: the same member keeps its id until it leaves.
    all.push({ id: `m${slot}`, address: host, port: PORTS(slot % RING) });
  }
  return { http: all.filter((_, i) => i % 2 === 0), https: all.filter((_, i) => i % 2 === 1) };
}

/**
 * Runs the workload on a booted amphora whose VIP is plugged: starts the
 * members, creates (or replaces) the load balancer, waits for both listeners
 * to serve, then the updates under load.
 */
export async function runWorkload(amp: AmphoraVm): Promise<WorkloadResult> {
  const started = Date.now();
  const dir = await testDir(`${amp.name}-workload`);
  const tenant = issue(makeCa(dir, 'tenant-ca'), 'www', { dnsName: 'www.example.org', usage: 'serverAuth' });
  const backends: TestBackend[] = [];
  for (let i = 0; i < RING; i++) backends.push(new TestBackend(`r${i}`, amp.vipHost, PORTS(i)));
  await Promise.all(backends.map((b) => b.start()));
  const http = new LoadGenerator(amp.vipUrl, WORKLOAD.httpRate, 2, WORKLOAD.clientTimeoutMs);
  const https = new LoadGenerator(`https://${amp.vip}:${amp.listenerPort + 1}/`, WORKLOAD.httpsRate, 2, WORKLOAD.clientTimeoutMs);
  let updates = 0;
  const update = async (step: number) => {
    const members = membersAt(step, amp.vipHost);
    const answer = await amp.peer!.request('update_lb', {
      lb_id: amp.lbId,
      vip: amp.vip,
      monitor: WORKLOAD.monitor,
      certificate: readFileSync(tenant.cert, 'utf8'),
      private_key: readFileSync(tenant.key, 'utf8'),
      http: { listener_id: amp.listenerId, port: amp.listenerPort, pool_id: amp.poolId, members: members.http },
      // The TLS listener's and pool's ids: the HTTP ones with another last group.
      https: { listener_id: `${amp.listenerId.slice(0, -3)}e14`, port: amp.listenerPort + 1, pool_id: `${amp.poolId.slice(0, -3)}f14`, members: members.https },
    });
    if (!answer.ok) throw new Error(`update ${step}: ${answer.exception}: ${answer.message}\n${answer.trace ?? ''}`);
    updates++;
  };
  try {
    await update(0);
    // Both listeners serve once their members have passed their checks (this agent holds new members until they do).
    for (const [what, url] of [
      ['HTTP', amp.vipUrl],
      ['HTTPS', `https://${amp.vip}:${amp.listenerPort + 1}/`],
    ] as const) {
      const probe = new LoadGenerator(url, 2, 1).start();
      try {
        await waitFor(`the ${what} listener to serve`, () => probe.records.some((r) => r.status === 200), 10 * 60_000, 500);
      } finally {
        await probe.stop();
      }
    }
    http.start();
    https.start();
    for (let step = 1; step <= WORKLOAD.updates; step++) {
      await update(step);
      await sleep(WORKLOAD.pause * 1000);
    }
  } finally {
    await Promise.all([http.stop(), https.stop()]);
    await Promise.all(backends.map((b) => b.stop()));
  }
  const records = [...http.records, ...https.records];
  const failed = records.filter((r) => r.status !== 200);
  return {
    requests: records.length,
    failed: failed.length,
    failures: [http.describeFailures(), https.describeFailures()].filter(Boolean).join('; '),
    longestWaitMs: Math.max(...records.map((r) => r.end - r.start)),
    updates,
    oomKills: amp.oomKills(),
    seconds: (Date.now() - started) / 1000,
  };
}

export function describeWorkload(r: WorkloadResult): string {
  return `${r.updates} updates, ${r.requests} requests, ${r.failed} failed${r.failed ? ` (${r.failures})` : ''}, longest wait ${r.longestWaitMs} ms, ${r.oomKills} OOM kills, ${r.seconds.toFixed(0)} s`;
}
