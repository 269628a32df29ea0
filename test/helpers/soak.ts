// A soak of one agent process: applies without end in the mix a control plane
// sends (API 1.0 uploads with reloads, API 2.0 member calls and whole-spec
// PUTs, some of which reload), under constant traffic to both load balancers,
// while the agent's RSS and open file descriptors are sampled. Shared by the
// CI test (a few hundred applies) and bench/soak (10,000).
import { execFileSync } from 'node:child_process';
import https from 'node:https';
import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { startAgent, agentHaproxy, type AgentUnderTest } from './agent-process.js';
import { filesUnder } from './file-tree.js';
import { apiRequest, type ApiReply } from './api-client.js';
import { CHECK_PATH, TestBackend } from './backend.js';
import { testDir, type HaproxyUnderTest } from './haproxies.js';
import { LoadGenerator, waitFor } from './load.js';
import { createTestNetwork } from './netns.js';
import { octaviaStyleConfig } from './octavia-config.js';

export interface SoakPorts {
  agent: number;
  /** Six members: two that stay in every pool and four that come and go. */
  backend: (i: number) => number;
}

export interface SoakOptions {
  haproxy: HaproxyUnderTest;
  applies: number;
  ports: SoakPorts;
  /** Sample RSS and fds every this many applies. */
  sampleEvery: number;
  /** Applies before the slopes start: the heap grows to its working size (default a tenth of the run). */
  warmup?: number;
  /** Requests per second to each load balancer. */
  rate?: number;
  progress?: (line: string) => void;
}

export interface Sample {
  apply: number;
  rssKb: number;
  fds: number;
}

export interface SoakResult {
  applies: number;
  seconds: number;
  /** Applies of each kind, and what the 2.0 API said each did (runtime, reload...). */
  kinds: Record<string, number>;
  requests: number;
  failedRequests: string[];
  /** API calls that did not answer as a control plane expects. */
  failedApplies: string[];
  /** Master reloads of each load balancer's haproxy over the run. */
  reloads: Record<string, number>;
  /** Files under base_path at the end that were not there after setup. */
  filesAppeared: string[];
  /** Temporary files anywhere under base_path at the end. */
  temporaries: string[];
  basePathBytes: { before: number; after: number };
  /** Files under base_path that grew over the run, with their sizes before and after. */
  grown: string[];
  samples: Sample[];
  /** Least-squares slopes after the warm-up. */
  rssKbPer1000: number;
  fdsPer1000: number;
}

const V1 = 'lb-soak-v1';
const V2 = 'lb-soak-v2';
const POOL = 'p-soak';
const V1_PORT = 8080;
const V2_PORT = 8081;
const STABLE = [0, 1];
const CHURN = [2, 3, 4, 5];

/** Least-squares slope of y over x. */
export function slope(points: [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

function sample(pid: number, apply: number): Sample {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]);
  return { apply, rssKb, fds: ownFds(pid) };
}

/**
 * The agent's open descriptors, less its ends of its running children's
 * stdio: an address announcement after a reload runs arping for about a
 * second in the background, and a sample taken meanwhile would count its
 * pipes as a leak. Node gives a child's stdio as pipes or as socket pairs
 * (libuv); a pipe has one inode at both ends, a socket pair two, so the
 * pairs are matched through `ss` in the agent's network namespace.
 */
function ownFds(pid: number): number {
  const links = (p: number) => {
    try {
      return readdirSync(`/proc/${p}/fd`).map((fd) => {
        try {
          return readlinkSync(`/proc/${p}/fd/${fd}`);
        } catch {
          return ''; // closed meanwhile
        }
      });
    } catch {
      return []; // the child exited meanwhile
    }
  };
  const children = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    });
  const theirs = new Set(children.flatMap((c) => links(Number(c))).filter((l) => l.startsWith('pipe:')));
  if (children.length > 0) {
    // "u_str ESTAB 0 0 * <inode> * <peer inode> users:((\"arping\",pid=N,fd=1))"
    const sockets = execFileSync('nsenter', ['-t', String(pid), '-n', 'ss', '-xpH'], { encoding: 'utf8' });
    for (const line of sockets.split('\n')) {
      const fields = line.trim().split(/\s+/);
      if (children.some((c) => line.includes(`pid=${c},`)) && fields[7]) theirs.add(`socket:[${fields[7]}]`);
    }
  }
  return links(pid).filter((l) => !theirs.has(l)).length;
}

/** Every file under `root` (sockets included) with its size. */
function files(root: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const f of filesUnder(root)) {
    let size = 0;
    try {
      size = statSync(f.path).size;
    } catch {
      /* gone meanwhile */
    }
    out.set(f.rel, size);
  }
  return out;
}

const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const log = o.progress ?? (() => undefined);
  const net = createTestNetwork();
  const backends: TestBackend[] = [];
  let agent: AgentUnderTest | undefined;
  const loads: LoadGenerator[] = [];
  try {
    const dir = await testDir('soak');
    for (let i = 0; i < STABLE.length + CHURN.length; i++) backends.push(await new TestBackend(`b${i}`, net.hostIp, o.ports.backend(i)).start());
    const a = await startAgent(o.haproxy, dir, net.netns, o.ports.agent);
    agent = a;
    // One kept-alive TLS connection, as a control plane keeps one.
    const connection = new https.Agent({ keepAlive: true, maxSockets: 1 });
    const failedApplies: string[] = [];
    const kinds: Record<string, number> = {};
    const count = (k: string) => {
      kinds[k] = (kinds[k] ?? 0) + 1;
    };
    const expect = (what: string, r: ApiReply, ...ok: number[]) => {
      if (!ok.includes(r.status)) failedApplies.push(`${what}: ${r.status} ${r.text.slice(0, 300)}`);
      return r;
    };

    // API 1.0: the config as Octavia would render it; the generation changes a timeout (a real reload).
    let generation = 1;
    const v1Members = new Set<number>(STABLE);
    const upload = async (what: string) => {
      const config = octaviaStyleConfig({
        lbId: V1,
        baseDir: a.basePath,
        bind: `${net.nsIp}:${V1_PORT}`,
        generation,
        members: [...v1Members].sort().map((i) => ({ id: `m${i}`, address: backends[i]!.address })),
      });
      expect(
        `${what} upload`,
        await apiRequest(a, 'PUT', `/1.0/loadbalancer/${a.amphoraId}/${V1}/haproxy`, { raw: config, headers: { 'Content-Type': 'text/plain' }, connection }),
        202,
      );
    };
    /** Octavia's pair: upload, then reload. */
    const uploadAndReload = async (what: string) => {
      await upload(what);
      expect('1.0 reload', await apiRequest(a, 'PUT', `/1.0/loadbalancer/${V1}/reload`, { connection }), 202);
    };
    await upload('first');
    expect('start', await apiRequest(a, 'PUT', `/1.0/loadbalancer/${V1}/start`, { connection }), 202);

    // API 2.0: members by id; the connection limit changes for a reload.
    let connectionLimit = 1000;
    const v2Members = new Map<number, number>(STABLE.map((i) => [i, 1]));
    const memberBody = (i: number, weight: number) => ({ address: backends[i]!.host, protocol_port: backends[i]!.port, weight });
    const spec = () => ({
      id: V2,
      vip_address: net.nsIp,
      listeners: [
        {
          id: 'l-soak',
          protocol: 'HTTP',
          protocol_port: V2_PORT,
          connection_limit: connectionLimit,
          default_pool: {
            id: POOL,
            protocol: 'HTTP',
            lb_algorithm: 'ROUND_ROBIN',
            healthmonitor: { type: 'HTTP', delay: 1, timeout: 1, max_retries: 2, max_retries_down: 2, url_path: CHECK_PATH },
            members: [...v2Members].sort(([x], [y]) => x - y).map(([i, w]) => ({ id: `m${i}`, ...memberBody(i, w) })),
          },
        },
      ],
    });
    const v2Result = (kind: string, r: ApiReply) => {
      expect(kind, r, 200, 201);
      count(`${kind} -> ${r.json?.result ?? r.status}`);
    };
    const putSpec = async (kind: string) => v2Result(kind, await apiRequest(a, 'PUT', `/2.0/loadbalancers/${V2}`, { body: spec(), connection }));
    await putSpec('first spec');
    await waitFor(
      'both load balancers to serve',
      async () => {
        const ok = async (port: number) => (await fetch(`http://${net.nsIp}:${port}/`).catch(() => null))?.status === 200;
        return (await ok(V1_PORT)) && (await ok(V2_PORT));
      },
      20_000,
    );

    const rate = o.rate ?? 100;
    loads.push(new LoadGenerator(`http://${net.nsIp}:${V1_PORT}/`, rate, 4).start(), new LoadGenerator(`http://${net.nsIp}:${V2_PORT}/`, rate, 4).start());
    const settle = Date.now();
    await waitFor('traffic to flow', () => loads.every((l) => l.records.length > 0), 10_000);
    const before = files(a.basePath);
    const reloadsBefore = { [V1]: (await agentHaproxy(a, V1).processes()).reloads, [V2]: (await agentHaproxy(a, V2).processes()).reloads };
    const pid = a.process.pid!;
    const samples: Sample[] = [sample(pid, 0)];

    const toggle = (set: Set<number> | Map<number, number>, i: number) => {
      if (set.has(i)) set.delete(i);
      else if (set instanceof Set) set.add(i);
      else set.set(i, 1);
    };
    const memberPath = (i: number) => `/2.0/loadbalancers/${V2}/pools/${POOL}/members/m${i}`;
    const started = Date.now();
    for (let n = 1; n <= o.applies; n++) {
      const churn = CHURN[(n >> 1) % CHURN.length]!;
      switch (n % 10) {
        case 0:
          generation++;
          count('1.0 upload + reload (config changed)');
          await uploadAndReload('1.0 config');
          break;
        case 1:
        case 9:
          toggle(v1Members, churn);
          count('1.0 upload + reload (members changed)');
          await uploadAndReload('1.0 members');
          break;
        case 2:
        case 3:
        case 7:
        case 8:
          if (v2Members.has(churn)) {
            v2Members.delete(churn);
            v2Result('2.0 member DELETE', await apiRequest(a, 'DELETE', memberPath(churn), { connection }));
          } else {
            v2Members.set(churn, 1 + (n % 3));
            v2Result('2.0 member PUT', await apiRequest(a, 'PUT', memberPath(churn), { body: memberBody(churn, v2Members.get(churn)!), connection }));
          }
          break;
        case 4:
          toggle(v2Members, CHURN[(n + 1) % CHURN.length]!);
          v2Members.set(STABLE[Math.floor(n / 10) % 2]!, 1 + (Math.floor(n / 20) % 4));
          await putSpec('2.0 spec PUT (members changed)');
          break;
        case 5: {
          const i = STABLE[Math.floor(n / 10) % 2]!;
          v2Members.set(i, 2 + (v2Members.get(i)! % 4));
          v2Result('2.0 member PUT', await apiRequest(a, 'PUT', memberPath(i), { body: memberBody(i, v2Members.get(i)!), connection }));
          break;
        }
        case 6:
          connectionLimit = connectionLimit === 1000 ? 1001 : 1000;
          await putSpec('2.0 spec PUT (listener changed)');
          break;
      }
      if (n % o.sampleEvery === 0) samples.push(sample(pid, n));
      if (n % 500 === 0) {
        const s = samples[samples.length - 1]!;
        log(
          `${n} applies, ${Math.round((Date.now() - started) / 1000)} s, RSS ${s.rssKb} kB, ${s.fds} fds, ${loads.reduce((t, l) => t + l.failures.length, 0)} failed requests, ${failedApplies.length} failed applies`,
        );
      }
    }
    const seconds = (Date.now() - started) / 1000;
    // Let the last drains and checks finish before the files are compared.
    await waitFor('traffic after the last apply', () => loads.every((l) => l.records.some((r) => r.start > started + seconds * 1000)), 10_000);
    for (const l of loads) await l.stop();
    const after = files(a.basePath);
    const reloads = {
      [V1]: (await agentHaproxy(a, V1).processes()).reloads - reloadsBefore[V1]!,
      [V2]: (await agentHaproxy(a, V2).processes()).reloads - reloadsBefore[V2]!,
    };
    const steady = samples.filter((s) => s.apply >= (o.warmup ?? o.applies / 10));
    return {
      applies: o.applies,
      seconds,
      kinds,
      reloads,
      requests: loads.reduce((t, l) => t + l.records.filter((r) => r.start >= settle).length, 0),
      failedRequests: loads.flatMap((l, i) => l.failures.map((r) => `${i === 0 ? V1 : V2}: ${r.status ?? r.error} at +${r.start - started} ms`)),
      failedApplies,
      filesAppeared: [...after.keys()].filter((k) => !before.has(k)),
      temporaries: [...after.keys()].filter((k) => /\.tmp|~$|\.new$|\.old$/.test(k)),
      basePathBytes: { before: sum(before), after: sum(after) },
      grown: [...after].filter(([k, size]) => size > (before.get(k) ?? size)).map(([k, size]) => `${k} ${before.get(k)} -> ${size}`),
      samples,
      rssKbPer1000: slope(steady.map((s) => [s.apply, s.rssKb])) * 1000,
      fdsPer1000: slope(steady.map((s) => [s.apply, s.fds])) * 1000,
    };
  } finally {
    for (const l of loads) await l.stop();
    await agent?.stop();
    await Promise.all(backends.map((b) => b.stop()));
    net.destroy();
  }
}
