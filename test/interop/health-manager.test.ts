// Heartbeats through Octavia's whole health manager: the agent's real
// datagrams, from real haproxy, go to Octavia's receiver and to its
// UpdateHealthDb.update_health, which writes operating statuses into a SQLite
// database made from Octavia's models (test/interop/health_manager.py). The
// statuses asserted are what Octavia's API would then show.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, OCTAVIAS, octaviaPython, testDir, type OctaviaUnderTest } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { waitFor } from '../helpers/load.js';
import { agentHaproxy, startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { testPorts } from '../helpers/ports.js';
import { OctaviaPeer } from '../helpers/octavia-peer.js';
import { OctaviaRenderer, octaviaSettings } from '../helpers/octavia-render.js';
import { DEFAULT_RENDER_SETTINGS } from '../../agent/render/settings.js';
import { validateSpec } from '../../agent/model/spec/validate.js';

const PORTS = testPorts('health-manager');
const [AGENT, HEALTH_MANAGER] = [PORTS.range(OCTAVIAS.length), PORTS.range(OCTAVIAS.length)];
const MEMBERS = OCTAVIAS.map(() => PORTS.range(5));
const [POOL1_PORT, POOL2_PORT, POOL3_PORT] = [PORTS.one(), PORTS.one(), PORTS.one()];

const SCRIPT = fileURLToPath(new URL('../../../test/interop/health_manager.py', import.meta.url));
const KEY = 'health-manager-test-key';
const LB = '6e6e6e6e-0000-4000-8000-0000000000aa';
const L1 = '6e6e6e6e-0000-4000-8000-0000000000b1';
const L2 = '6e6e6e6e-0000-4000-8000-0000000000b2';
const P1 = '6e6e6e6e-0000-4000-8000-0000000000c1';
const P2 = '6e6e6e6e-0000-4000-8000-0000000000c2';
const L3 = '6e6e6e6e-0000-4000-8000-0000000000b3';
const P3 = '6e6e6e6e-0000-4000-8000-0000000000c3';
const member = (n: number) => `6e6e6e6e-0000-4000-8000-0000000000${String(n).padStart(2, '0')}`;
const M = { up: member(1), fail: member(2), admin: member(3), drain: member(4), fresh: member(5), first: member(6), joining: member(7) };
const BIG_POOL = 5000;

interface Processed {
  seq: number;
  pools: Record<string, { status: string; members?: Record<string, string>; member_count?: number }>;
  ms: number;
  db: Record<string, string>;
  log: string[];
}

interface Statuses {
  loadbalancer: string;
  listeners: Record<string, string>;
  pools: Record<string, string>;
  members: Record<string, string>;
}

// Octavia's DB holds one member per address and port in a pool.
interface MemberPlan {
  id: string;
  address: string;
  port: number;
  weight?: number;
  enabled?: boolean;
}
/** rise: haproxy's rise (Octavia's max_retries), 1 unless given. */
interface PoolPlan {
  id: string;
  listener: string;
  port: number;
  delay: number;
  rise?: number;
  members: MemberPlan[];
}

/** Octavia's health manager (receiver + update_health + its DB) in one Python process of a release. */
class HealthManager {
  readonly processed: Processed[] = [];
  readonly rejected: string[] = [];
  stderr = '';
  private ready = false;
  private readonly replies: ((a: { ok: boolean; result?: unknown; error?: string }) => void)[] = [];
  private readonly child: ChildProcessWithoutNullStreams;

  constructor(
    readonly port: number,
    release: OctaviaUnderTest,
  ) {
    this.child = spawn(...octaviaPython(release, SCRIPT, [String(port), KEY]));
    this.child.stderr.on('data', (d) => {
      this.stderr = (this.stderr + d).slice(-4000);
    });
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const d = JSON.parse(line) as { ready?: boolean; reply?: boolean; processed?: Processed; rejected?: string };
      if (d.ready) this.ready = true;
      else if (d.processed) this.processed.push(d.processed);
      else if (d.rejected) this.rejected.push(d.rejected);
      else if (d.reply) this.replies.shift()?.(d as { ok: boolean });
    });
  }

  async waitReady(): Promise<void> {
    await waitFor(`Octavia's health manager (${this.stderr})`, () => this.ready, 60_000);
  }

  private async request(op: string, args: unknown): Promise<unknown> {
    const answer = await new Promise<{ ok: boolean; result?: unknown; error?: string }>((resolve) => {
      this.replies.push(resolve);
      this.child.stdin.write(`${JSON.stringify({ op, args })}\n`);
    });
    if (!answer.ok) throw new Error(`health_manager.py ${op}: ${answer.error}`);
    return answer.result;
  }

  apply(pools: PoolPlan[], amphoraId: string): Promise<unknown> {
    return this.request('apply', {
      lb_id: LB,
      amphora_id: amphoraId,
      listeners: pools.map((p) => ({ id: p.listener, port: p.port, pool_id: p.id })),
      pools: pools.map((p) => ({
        id: p.id,
        monitor: true,
        members: p.members.map((m) => ({ id: m.id, address: m.address, port: m.port, weight: m.weight ?? 1, enabled: m.enabled ?? true })),
      })),
    });
  }

  status(members?: string[]): Promise<Statuses> {
    return this.request('status', members ? { members } : {}) as Promise<Statuses>;
  }

  stop(): void {
    this.child.kill('SIGKILL');
  }
}

/** The load balancer as Octavia's API holds it, as an agent spec for Octavia's own renderer. */
function lbSpec(vip: string, pools: PoolPlan[]) {
  return validateSpec({
    id: LB,
    project_id: 'hm-test-project',
    vip_address: vip,
    listeners: pools.map((p) => ({
      id: p.listener,
      protocol: 'HTTP',
      protocol_port: p.port,
      // Octavia's default (50,000 each) needs more file descriptors than a test process may open.
      connection_limit: 1000,
      default_pool: {
        id: p.id,
        protocol: 'HTTP',
        lb_algorithm: 'ROUND_ROBIN',
        // Two failed checks to go down: one slow check on a busy test machine must not flip a member.
        healthmonitor: { type: 'HTTP', delay: p.delay, timeout: 1, max_retries: p.rise ?? 1, max_retries_down: 2, url_path: '/healthz' },
        members: p.members.map((m) => ({ id: m.id, address: m.address, protocol_port: m.port, weight: m.weight ?? 1, admin_state_up: m.enabled ?? true })),
      },
    })),
  });
}

// Each Octavia release with another haproxy: 2.6 protects new members through
// the server-state file and maintenance, 3.4 through init-state.
OCTAVIAS.forEach((octavia, i) => {
  const haproxy = HAPROXIES[[0, 1, 3][i]!]!;
  const t = suite(`heartbeats through Octavia's health manager (${octavia.label}, ${haproxy.label})`);
  let net: TestNetwork;
  let agent: AgentUnderTest;
  let peer: OctaviaPeer;
  let renderer: OctaviaRenderer;
  let hm: HealthManager;
  let backends: TestBackend[];
  let ready: TestBackend[];
  let flaky: TestBackend;
  let unready: TestBackend;
  let p1: PoolPlan;
  let p2: PoolPlan;
  let p3: PoolPlan | undefined;
  let haproxyVersion: string;

  /** What Octavia's API does for a change: the DB first, then the amphora driver renders and reloads. */
  const apply = async () => {
    const pools = [p1, p2, ...(p3 ? [p3] : [])];
    await hm.apply(pools, agent.amphoraId);
    const rendered = await renderer.render(
      lbSpec(net.nsIp, pools),
      haproxyVersion,
      octaviaSettings({ ...DEFAULT_RENDER_SETTINGS, basePath: agent.basePath, baseCertDir: agent.certDir }),
    );
    await peer.call('upload_config', LB, rendered.haproxy);
    await peer.call('reload_listener', LB).catch((err: Error) => {
      throw new Error(`${err.message}\nlaunch log:\n${readFileSync(agentHaproxy(agent, LB).files.launchLog, 'utf8')}`);
    });
  };
  const statusesSatisfy = (what: string, ok: (s: Statuses) => boolean, ms = 10_000) =>
    waitFor(
      what,
      async () => {
        const s = await hm.status([M.up, M.fail, M.admin, M.drain, M.fresh, ...p2.members.map((m) => m.id)]);
        return ok(s) ? s : null;
      },
      ms,
      100,
    ) as Promise<Statuses>;

  t.before(
    loud(async () => {
      net = createTestNetwork();
      const dir = await testDir('health-manager');
      backends = await Promise.all([
        ...[0, 1, 2].map((k) => new TestBackend(`ready-${k}`, net.hostIp, MEMBERS[i]!(k)).start()),
        new TestBackend('flaky', net.hostIp, MEMBERS[i]!(3)).start(),
        new TestBackend('unready', net.hostIp, MEMBERS[i]!(4), 'not-ready').start(),
      ]);
      ready = backends.slice(0, 3);
      [flaky, unready] = backends.slice(3) as [TestBackend, TestBackend];
      hm = new HealthManager(HEALTH_MANAGER(i), octavia);
      renderer = await OctaviaRenderer.start(octavia);
      await hm.waitReady();
      agent = await startAgent(haproxy, dir, net.netns, AGENT(i), [
        `controller_ip_port_list = 127.0.0.1:${hm.port}`,
        'heartbeat_interval = 1',
        `heartbeat_key = ${KEY}`,
      ]);
      // The whole controller side is one release: templater, amphora client, health manager.
      peer = await OctaviaPeer.connect(octavia, agent);
      const info = (await peer.call('get_info')) as { haproxy_version: string };
      haproxyVersion = info.haproxy_version.split('.').slice(0, 2).join('.');
      const at = (b: TestBackend) => ({ address: b.host, port: b.port });
      p1 = {
        id: P1,
        listener: L1,
        port: POOL1_PORT,
        delay: 1,
        members: [
          { id: M.up, ...at(ready[0]!) },
          { id: M.fail, ...at(flaky) },
          { id: M.admin, ...at(ready[1]!), enabled: false },
          { id: M.drain, ...at(ready[2]!), weight: 0 },
        ],
      };
      p2 = { id: P2, listener: L2, port: POOL2_PORT, delay: 1, members: ready.map((b, k) => ({ id: member(11 + k), ...at(b) })) };
      await apply();
    }),
  );

  t.after(async () => {
    peer?.close();
    await renderer?.close();
    await agent?.stop();
    hm?.stop();
    await Promise.all((backends ?? []).map((b) => b.stop()));
    net?.destroy();
  });

  t('healthy: members UP are ONLINE, and so are the listeners, the pools and the load balancer', async () => {
    // Every member is held down until its first check passes, each on its own
    // timer: wait for all of them. Meanwhile nothing has failed, so nothing is ERROR or DEGRADED.
    const online = [M.up, M.fail, ...p2.members.map((m) => m.id)];
    const seen: Statuses[] = [];
    const s = await statusesSatisfy('members ONLINE', (x) => {
      seen.push(x);
      return online.every((id) => x.members[id] === 'ONLINE') && x.loadbalancer === 'ONLINE';
    });
    for (const x of seen) {
      assert.ok(
        online.every((id) => ['OFFLINE', 'ONLINE'].includes(x.members[id]!)),
        `members ${JSON.stringify(x.members)}`,
      );
      assert.ok(['OFFLINE', 'ONLINE'].includes(x.pools[P1]!) && ['OFFLINE', 'ONLINE'].includes(x.pools[P2]!), `pools ${JSON.stringify(x.pools)}`);
      assert.ok(!['ERROR', 'DEGRADED'].includes(x.loadbalancer), `load balancer ${x.loadbalancer}`);
    }
    assert.equal(s.listeners, { [L1]: 'ONLINE', [L2]: 'ONLINE' });
    assert.equal(s.pools, { [P1]: 'ONLINE', [P2]: 'ONLINE' });
    // The status query can overtake the receiver's report of the update that made them ONLINE.
    const last = await waitFor(
      'the update that made them ONLINE',
      () => {
        const p = hm.processed.at(-1)!;
        return p2.members.every((m) => p.db[m.id] === 'ONLINE') ? p : null;
      },
      10_000,
      50,
    );
    assert.equal(last!.log, [], 'Octavia logged no warning or error');
    assert.equal(hm.rejected, []);
  });

  t('admin down member: haproxy MAINT, Octavia OFFLINE; it does not degrade the pool', async () => {
    const s = await hm.status([M.admin]);
    assert.is(s.members[M.admin], 'OFFLINE');
    assert.is(hm.processed.at(-1)!.pools[`${P1}:${L1}`]!.members![M.admin], 'MAINT');
    assert.is(s.pools[P1], 'ONLINE');
  });

  t('drained member (weight 0): reported DRAIN, Octavia DRAINING', async () => {
    const s = await hm.status([M.drain]);
    assert.is(s.members[M.drain], 'DRAINING');
    assert.is(hm.processed.at(-1)!.pools[`${P1}:${L1}`]!.members![M.drain], 'DRAIN');
  });

  t('failing checks: the member is ERROR, its pool and the load balancer DEGRADED; all down makes them ERROR', async () => {
    await flaky.setMode('not-ready');
    const s = await statusesSatisfy('m-fail ERROR', (x) => x.members[M.fail] === 'ERROR');
    assert.is(s.pools[P1], 'DEGRADED');
    assert.is(s.loadbalancer, 'DEGRADED');
    assert.is(s.pools[P2], 'ONLINE');
    assert.is(s.listeners[L1], 'ONLINE');
    await Promise.all(ready.map((b) => b.setMode('not-ready')));
    // The two pools' checks fail at different moments: wait for both.
    const down = await statusesSatisfy('every member down', (x) => x.members[M.up] === 'ERROR' && x.pools[P1] === 'ERROR' && x.pools[P2] === 'ERROR');
    assert.is(down.loadbalancer, 'ERROR');
    assert.is(down.listeners[L1], 'ONLINE', 'the listener stays ONLINE: haproxy still accepts connections');
    await Promise.all([flaky, ...ready].map((b) => b.setMode('ready')));
    await statusesSatisfy('recovery', (x) => x.loadbalancer === 'ONLINE' && x.members[M.up] === 'ONLINE' && x.members[M.fail] === 'ONLINE');
  });

  t('a new member whose check fails: OFFLINE (reported RESTARTING) until its first check fails, then ERROR; ONLINE once it passes', async () => {
    const before = hm.processed.length;
    p1.members.push({ id: M.fresh, address: unready.host, port: unready.port });
    await apply();
    const key = `${P1}:${L1}`;
    const withFresh = () => hm.processed.slice(before).filter((p) => p.pools[key]?.members?.[M.fresh]);
    await waitFor('the new member ERROR after a failed check', () => withFresh().some((p) => p.db[M.fresh] === 'ERROR'), 10_000, 50);
    const seen = withFresh();
    assert.ok(
      seen.every((p) => ['RESTARTING', 'DOWN'].includes(p.pools[key]!.members![M.fresh]!)),
      'RESTARTING or DOWN, never UP',
    );
    assert.ok(
      seen.every((p) => ['OFFLINE', 'ERROR'].includes(p.db[M.fresh]!)),
      `never ONLINE: ${seen.map((p) => p.db[M.fresh])}`,
    );
    assert.is(seen.at(-1)!.db[M.up], 'ONLINE', 'the running members kept their state through the reload');
    await unready.setMode('ready');
    await statusesSatisfy('the new member ONLINE once its check passes', (x) => x.members[M.fresh] === 'ONLINE');
  });

  // Section 3 of the "Octavia whole" issue: a healthy node added to a pool is
  // no alarm. Checks every 2 s with rise 3 keep each member in admission for
  // seconds, so several heartbeats fall inside it.
  t('healthy members being admitted: never ERROR, their pool and the load balancer never DEGRADED or ERROR', async () => {
    const key = `${P3}:${L3}`;
    const watch = async (what: string, done: (s: Statuses) => boolean) => {
      const seen: Statuses[] = [];
      await waitFor(
        what,
        async () => {
          const s = await hm.status([M.first, M.joining]);
          seen.push(s);
          return done(s);
        },
        30_000,
        100,
      );
      return seen;
    };
    // A new pool whose only member waits for its checks: left out of the heartbeats, so OFFLINE.
    const before = hm.processed.length;
    p3 = { id: P3, listener: L3, port: POOL3_PORT, delay: 2, rise: 3, members: [{ id: M.first, address: ready[0]!.host, port: ready[0]!.port }] };
    await apply();
    const created = await watch("the new pool's first member ONLINE", (s) => s.members[M.first] === 'ONLINE');
    assert.ok(
      hm.processed.slice(before).some((p) => !p.pools[key]),
      'a heartbeat left the admitting pool out',
    );
    for (const s of created) {
      assert.not.equal(s.members[M.first], 'ERROR');
      assert.ok(['OFFLINE', 'ONLINE'].includes(s.pools[P3]!), `pool ${s.pools[P3]}`);
      assert.is(s.loadbalancer, 'ONLINE');
    }
    // A second node joins the running pool (members only: the runtime path on every haproxy).
    const joinedAt = hm.processed.length;
    p3.members.push({ id: M.joining, address: ready[1]!.host, port: ready[1]!.port });
    await apply();
    const joined = await watch('the joining member ONLINE', (s) => s.members[M.joining] === 'ONLINE');
    const reported = hm.processed
      .slice(joinedAt)
      .map((p) => p.pools[key]?.members?.[M.joining])
      .filter((x) => x !== undefined);
    assert.ok(reported.includes('RESTARTING'), `heartbeats during its admission said RESTARTING: ${reported}`);
    assert.not.ok(
      reported.some((x) => x.startsWith('DOWN')),
      'never DOWN',
    );
    for (const s of joined) {
      assert.ok(['OFFLINE', 'ONLINE'].includes(s.members[M.joining]!), `member ${s.members[M.joining]}`);
      assert.is(s.members[M.first], 'ONLINE');
      assert.is(s.pools[P3], 'ONLINE');
      assert.is(s.loadbalancer, 'ONLINE');
    }
  });

  t(`a ${BIG_POOL}-member pool: its member statuses are left out, Octavia writes its members OFFLINE and keeps the pool's status`, async () => {
    const key2 = `${P2}:${L2}`;
    const old = p2.members.map((m) => m.id);
    // The new members' addresses (198.18.0.0/15, for benchmarks) lead nowhere: their
    // checks, every 30 s, fail at once and cost haproxy little.
    const added = Array.from({ length: BIG_POOL - old.length }, (_, k) => ({ id: randomUUID(), address: `198.18.${k >> 8}.${k & 255}`, port: 80 }));
    p2 = { ...p2, delay: 30, members: [...p2.members, ...added] };
    const before = hm.processed.length;
    const started = Date.now();
    await apply();
    const applied = Date.now() - started;
    const trimmed = await waitFor(
      "a heartbeat without the big pool's members",
      () => hm.processed.slice(before).find((p) => p.pools[key2] && p.pools[key2]!.members && Object.keys(p.pools[key2]!.members!).length === 0),
      20_000,
      100,
    );
    const s = await hm.status();
    const bigPool = Object.entries(s.members).filter(([id]) => !Object.values(M).includes(id));
    assert.is(bigPool.length, BIG_POOL);
    assert.equal([...new Set(bigPool.map(([, st]) => st))], ['OFFLINE'], 'every member of the big pool OFFLINE, the three that were ONLINE too');
    assert.is(trimmed!.pools[key2]!.status, 'UP');
    assert.is(s.pools[P2], 'ONLINE', 'the pool status stays exact');
    assert.is(s.members[M.up], 'ONLINE', 'the small pool keeps its member statuses');
    assert.is(s.pools[P1], 'ONLINE');
    assert.is(s.loadbalancer, 'ONLINE');
    assert.equal(trimmed!.log, []);
    console.log(`  ${octavia.label}: ${BIG_POOL}-member apply (render + upload + reload) ${applied} ms, update_health ${trimmed!.ms} ms`);
  });

  t.run();
});
