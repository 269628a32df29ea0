// Issue 30's figure: how long a batch member update takes to reach ACTIVE as
// the pool grows (10, 100 and 1,000 members), in Octavia in a box (Octavia
// 19's real API and worker, docs/octavia-box.md), three ways in one run:
//   spec driver, this agent          API 2.0: the agent renders the spec, members change at runtime
//   Octavia's driver, this agent     API 1.0: the controller renders, uploads and reloads; members change at runtime
//   Octavia's driver, Octavia's agent  the same calls, haproxy reloaded
// Each update replaces one node (the oldest member out, a new one in), as a
// cluster's autoscaler does, on a pool already at the size; ROUNDS of them
// per size, the median reported. The pool has no health monitor and nothing
// answers on its members' addresses: the figure is the control plane's and
// the agent's, not a check's. ACTIVE is polled every 100 ms.
//
//   sudo npm run bench:member-update          (about 20 minutes once cached)
import { OctaviaBox, PROJECT_ID, TENANT_SUBNET_ID, type AgentKind, type AmphoraDriver, type Json } from '../test/helpers/octavia-box/octavia-box.js';
import { waitFor } from '../test/helpers/load.js';

const SIZES = [10, 100, 1000];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

interface Way {
  label: string;
  agent: AgentKind;
  driver: AmphoraDriver;
}

const WAYS: Way[] = [
  { label: 'spec driver, this agent', agent: 'this', driver: 'spec' },
  { label: "Octavia's driver, this agent", agent: 'this', driver: 'octavia' },
  { label: "Octavia's driver, Octavia's agent", agent: 'reference', driver: 'octavia' },
];

/** Member `i`: an address in no network of the box, so nothing answers (and nothing is checked). */
const member = (i: number) => ({ name: `n${i}`, address: `10.98.${Math.floor(i / 250)}.${(i % 250) + 1}`, protocol_port: 8080 });
const members = (first: number, size: number) => Array.from({ length: size }, (_, k) => member(first + k));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** From the PUT until the load balancer is ACTIVE again, in ms. */
async function timedUpdate(box: OctaviaBox, lbId: string, poolId: string, body: unknown): Promise<number> {
  const started = Date.now();
  await box.api('PUT', `/lbaas/pools/${poolId}/members`, body);
  await waitFor(
    'the member update to finish',
    async () => {
      const lb = await box.loadBalancer(lbId);
      if (lb.provisioning_status === 'ERROR') throw new Error(`load balancer ${lbId} went to ERROR:\n${box.plane.logTail('octavia-worker', 60)}`);
      return lb.provisioning_status === 'ACTIVE';
    },
    600_000,
    100,
  );
  return Date.now() - started;
}

/** Median ms to ACTIVE per pool size, for one way. */
async function measure(way: Way): Promise<Map<number, number>> {
  const box = await OctaviaBox.start({ suite: 'sid', agent: way.agent, amphoraDriver: way.driver });
  try {
    const created = await box.api<{ loadbalancer: Json & { pools: { id: string }[] } }>('POST', '/lbaas/loadbalancers', {
      loadbalancer: {
        name: 'member-update',
        project_id: PROJECT_ID,
        vip_subnet_id: TENANT_SUBNET_ID,
        listeners: [
          {
            name: 'http',
            protocol: 'HTTP',
            protocol_port: 80,
            default_pool: { name: 'pool', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [] },
          },
        ],
      },
    });
    const lbId = created.loadbalancer.id as string;
    const poolId = created.loadbalancer.pools[0]!.id;
    await box.waitProvisioning(lbId, 'ACTIVE');
    const medians = new Map<number, number>();
    let oldest = 0;
    for (const size of SIZES) {
      const grown = await timedUpdate(box, lbId, poolId, { members: members(oldest, size) });
      const rounds: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        oldest++;
        rounds.push(await timedUpdate(box, lbId, poolId, { members: members(oldest, size) }));
      }
      medians.set(size, median(rounds));
      console.log(`[member-update] ${way.label}: ${size} members: grown in ${grown} ms; one node replaced: ${rounds.join(', ')} ms`);
    }
    return medians;
  } finally {
    await box.stop();
  }
}

const results = new Map<string, Map<number, number>>();
for (const way of WAYS) results.set(way.label, await measure(way));

const [spec, octaviaOnThis, octaviaOnTheirs] = WAYS.map((w) => results.get(w.label)!);
console.log(`\nOctavia 19 in a box, ${new Date().toISOString().slice(0, 10)}: a batch member update (one node replaced) to ACTIVE, median of ${ROUNDS} (ms)\n`);
console.log(`| members | ${WAYS.map((w) => w.label).join(' | ')} | spec / Octavia's driver (this agent) | spec / Octavia's agent |`);
console.log(`|---|${WAYS.map(() => '---|').join('')}---|---|`);
for (const size of SIZES) {
  const [a, b, c] = [spec!.get(size)!, octaviaOnThis!.get(size)!, octaviaOnTheirs!.get(size)!];
  console.log(`| ${size} | ${a} | ${b} | ${c} | ${(a / b).toFixed(2)}x | ${(a / c).toFixed(2)}x |`);
}
