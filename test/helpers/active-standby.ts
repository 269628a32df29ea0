// Two amphorae on one machine in ACTIVE_STANDBY, set up through Octavia's own
// controller code in the order its flows use (plug_vip on both, GET
// /interface/<vrrp_ip>, plug_network, per-amphora haproxy configs from the
// JinjaTemplater with peers, keepalived configs from KeepalivedJinjaTemplater,
// upload + start of VRRP on both).
//
//   client ns (10.61.0.1, .21-.30) --+
//                                    +-- br0 in a VIP namespace of its own
//   amphora A ns: eth1 (VIP NIC) ----+   (VIP 10.61.0.100, VRRP .11 / .12)
//   amphora B ns: eth1 (VIP NIC) ----+
//   amphora A/B ns: eth2 (member NIC) -- host bridge 172.31.N.1: the members
//
// AmphoraPair holds what does not depend on how the amphorae run; the
// direct rig (ActiveStandbyRig) runs each agent on the host, with its own
// namespace, base_path, certificates, interface files, amphora id and API
// address (127.0.0.2 / 127.0.0.3, one port); active-standby-systemd.ts boots
// image containers instead.
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { restartAgent, startAgent, type AgentUnderTest } from './agent-process.js';
import { testDir, type HaproxyUnderTest, type OctaviaUnderTest } from './haproxies.js';
import { sleep, waitFor } from './load.js';
import { OctaviaPeer } from './octavia-peer.js';

const LOAD_MAIN = fileURLToPath(new URL('./ns-load-main.js', import.meta.url));

export const VIP = '10.61.0.100';
export const CLIENT_SOURCES = Array.from({ length: 10 }, (_, i) => `10.61.0.${21 + i}`);

const PARTITION_TABLE = 'aat_partition';

const sh = (...args: string[]) => execFileSync(args[0]!, args.slice(1), { encoding: 'utf8' });
const quiet = (...args: string[]) => {
  try {
    execFileSync(args[0]!, args.slice(1), { stdio: 'ignore' });
  } catch {
    // already gone
  }
};

/** What both rigs know of an amphora: its addresses, its Octavia client, where its VIP NIC is. */
export interface AmphoraBase {
  name: 'A' | 'B';
  amphoraId: string;
  apiHost: string;
  vrrpIp: string;
  memberIp: string;
  /** The bridge end of its VIP NIC (in the VIP namespace): down = its link cut. */
  vipBridgePort: string;
  peer: OctaviaPeer;
  /** argv that runs `ip` in its tenant namespace (where plug_vip put the VIP NIC). */
  ip: string[];
}

/** An amphora of the direct rig: an agent on the host, its tenant namespace `netns`. */
export interface Amphora extends AmphoraBase {
  netns: string;
  agent: AgentUnderTest;
  dir: string;
}

/** The veths a hot-plugged VIP port and member port are made of, and their MACs. */
export interface PluggedPorts {
  vipMac: string;
  memberMac: string;
  vipBridgePort: string;
}

export interface ListenerSpec {
  listenerId: string;
  poolId: string;
  port: number;
  persistence?: 'SOURCE_IP' | 'APP_COOKIE' | null;
  cookieName?: string;
  /** Octavia's connection_limit (2,000 unless given): a change makes a planned reload. */
  connectionLimit?: number;
}

/** A load balancer: its first listener, and `more` listeners beside it (each with its own pool of the same members). */
export interface LbSpec extends ListenerSpec {
  lbId: string;
  more?: ListenerSpec[];
}

/** The cookie the members set (APP_COOKIE persistence): a new session when a request carries none. */
export const SESSION_COOKIE = 'SESSIONID';

export interface LoadRecord {
  start: number;
  end: number;
  status: number | null;
  member: string | null;
  /** The amphora's member-side address the member saw. */
  via: string | null;
  error: string | null;
  src: string | null;
  /** The cookie the request carried (name=value; APP_COOKIE loads only). */
  cookie: string | null;
}

/** The client load from the client namespace: one new connection per request. */
export class NsLoad {
  readonly records: LoadRecord[] = [];
  private child: ChildProcessWithoutNullStreams | null = null;
  private exited: Promise<void> | null = null;

  constructor(
    private readonly netns: string,
    private readonly url: string,
    private readonly opts: { rate?: number; timeoutMs?: number; sources?: string[] | null; cookie?: boolean } = {},
  ) {}

  start(): this {
    const options = {
      url: this.url,
      rate: this.opts.rate ?? 100,
      timeoutMs: this.opts.timeoutMs ?? 3000,
      sources: this.opts.sources ?? null,
      cookie: this.opts.cookie ?? false,
    };
    const child = spawn('ip', ['netns', 'exec', this.netns, process.execPath, LOAD_MAIN, JSON.stringify(options)], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    createInterface({ input: child.stdout }).on('line', (l) => this.records.push(JSON.parse(l) as LoadRecord));
    this.exited = new Promise((r) => child.once('exit', () => r()));
    return this;
  }

  async stop(): Promise<void> {
    this.child?.stdin.end();
    await this.exited;
  }

  ok(r: LoadRecord): boolean {
    return r.status === 200;
  }
}

/** Two members on the host bridge; each answers with its name and the amphora address it saw. */
async function startMembers(host: string): Promise<{ servers: http.Server[]; addresses: { id: string; address: string; port: number }[] }> {
  const servers: http.Server[] = [];
  const addresses = [];
  for (const [i, name] of ['m1', 'm2'].entries()) {
    const port = 8081 + i;
    let sessions = 0;
    const server = http.createServer((req, res) => {
      const via = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
      const headers: Record<string, string> = { 'x-member': name, 'x-via': via, 'content-type': 'text/plain' };
      if (!(req.headers.cookie ?? '').includes(`${SESSION_COOKIE}=`)) headers['set-cookie'] = `${SESSION_COOKIE}=${name}-${++sessions}; Path=/`;
      res.writeHead(200, headers);
      res.end(name);
    });
    server.keepAliveTimeout = 1000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port, exclusive: true }, () => resolve());
    });
    servers.push(server);
    addresses.push({ id: `${name}-0000-4000-8000-000000000001`, address: host, port });
  }
  return { servers, addresses };
}

/**
 * What both rigs share: the VIP bridge in a namespace of its own, the client
 * namespace on it, the members on a host bridge, hot-plugged ports, and
 * Octavia's controller flow (plug_vip, get_interface, plug_network, the
 * templaters' configs, VRRP). A subclass supplies the amphorae: agents on
 * the host (ActiveStandbyRig) or containers booted by systemd.
 */
export abstract class AmphoraPair<A extends AmphoraBase> {
  amphorae: A[] = [];
  members: { id: string; address: string; port: number }[] = [];
  private memberServers: http.Server[] = [];
  protected readonly id = randomBytes(2).toString('hex');
  readonly vipNs: string;
  readonly clientNs: string;
  readonly memberBridge: string;
  readonly memberNet: string;
  private networksDestroyed = false;

  /** `nsPrefix` names its namespaces, `linkPrefix` (two letters) its links: unique per test file. */
  protected constructor(
    readonly label: string,
    readonly nsPrefix: string,
    readonly linkPrefix: string,
  ) {
    this.vipNs = `${nsPrefix}v${this.id}`;
    this.clientNs = `${nsPrefix}c${this.id}`;
    this.memberBridge = `${linkPrefix}b${this.id}`;
    this.memberNet = `172.31.${parseInt(this.id, 16) % 250}`;
    process.on('exit', () => this.destroyNetworks());
  }

  /** `rig` once `build` is done; a failed build takes down what it made before the error goes on. */
  protected static async built<R extends AmphoraPair<AmphoraBase>>(rig: R, build: () => Promise<void>): Promise<R> {
    try {
      await build();
    } catch (err) {
      await rig.destroy();
      throw err;
    }
    return rig;
  }

  /** The VIP bridge, the client on it, the members' bridge and the members. */
  protected async buildNetworks(): Promise<void> {
    const l = `${this.linkPrefix}c${this.id}`;
    for (const ns of [this.vipNs, this.clientNs]) {
      sh('ip', 'netns', 'add', ns);
      sh('ip', '-n', ns, 'link', 'set', 'lo', 'up');
    }
    sh('ip', '-n', this.vipNs, 'link', 'add', 'br0', 'type', 'bridge');
    sh('ip', '-n', this.vipNs, 'link', 'set', 'br0', 'up');
    // The client: on the VIP bridge, with ten source addresses.
    sh('ip', 'link', 'add', l, 'netns', this.clientNs, 'type', 'veth', 'peer', 'name', `${l}p`, 'netns', this.vipNs);
    sh('ip', '-n', this.vipNs, 'link', 'set', `${l}p`, 'master', 'br0', 'up');
    sh('ip', '-n', this.clientNs, 'addr', 'add', '10.61.0.1/24', 'dev', l);
    for (const a of CLIENT_SOURCES) sh('ip', '-n', this.clientNs, 'addr', 'add', `${a}/24`, 'dev', l);
    sh('ip', '-n', this.clientNs, 'link', 'set', l, 'up');
    // The members' network on the host.
    sh('ip', 'link', 'add', this.memberBridge, 'type', 'bridge');
    sh('ip', 'addr', 'add', `${this.memberNet}.1/24`, 'dev', this.memberBridge);
    sh('ip', 'link', 'set', this.memberBridge, 'up');
    const m = await startMembers(`${this.memberNet}.1`);
    this.memberServers = m.servers;
    this.members = m.addresses;
  }

  /**
   * The "hot-plugged ports" of amphora i: veths whose amphora ends wait in
   * the amphora's main namespace (`into`; null: the host's) for plug_vip and
   * plug_network, and whose other ends are on the VIP and member bridges.
   */
  protected hotPlug(i: number, into: string | null): PluggedPorts {
    const { id } = this;
    const x = 'ab'[i]!;
    const vipMac = `02:61:${id.slice(0, 2)}:${id.slice(2)}:0${i}:01`;
    const memberMac = `02:62:${id.slice(0, 2)}:${id.slice(2)}:0${i}:01`;
    const vip = `${this.linkPrefix}v${id}${x}`;
    const member = `${this.linkPrefix}m${id}${x}`;
    sh('ip', 'link', 'add', vip, 'address', vipMac, 'type', 'veth', 'peer', 'name', `${vip}p`, 'netns', this.vipNs);
    sh('ip', '-n', this.vipNs, 'link', 'set', `${vip}p`, 'master', 'br0', 'up');
    sh('ip', 'link', 'add', member, 'address', memberMac, 'type', 'veth', 'peer', 'name', `${member}p`);
    sh('ip', 'link', 'set', `${member}p`, 'master', this.memberBridge, 'up');
    if (into) for (const l of [vip, member]) sh('ip', 'link', 'set', l, 'netns', into);
    return { vipMac, memberMac, vipBridgePort: `${vip}p` };
  }

  /** Octavia's order: plug_vip, the VRRP address's interface looked up, plug_network for the members' subnet. */
  protected async plug(amp: A, ports: PluggedPorts): Promise<void> {
    await amp.peer.call('plug_vip', VIP, {
      subnet_cidr: '10.61.0.0/24',
      gateway: '10.61.0.1',
      mac_address: ports.vipMac,
      vrrp_ip: amp.vrrpIp,
      mtu: 1500,
      host_routes: [],
      additional_vips: [],
    });
    const found = (await amp.peer.call('get_interface', amp.vrrpIp)) as { interface: string };
    if (found.interface !== 'eth1') throw new Error(`amphora ${amp.name}: the VRRP address is on ${found.interface}`);
    await amp.peer.call('plug_network', {
      mac_address: ports.memberMac,
      mtu: 1500,
      fixed_ips: [{ ip_address: amp.memberIp, subnet_cidr: `${this.memberNet}.0/24`, host_routes: [] }],
    });
  }

  /** Addresses of amphora i on the VIP and member networks. */
  protected addresses(i: number): Pick<AmphoraBase, 'vrrpIp' | 'memberIp'> {
    return { vrrpIp: `10.61.0.${11 + i}`, memberIp: `${this.memberNet}.${11 + i}` };
  }

  get a(): A {
    return this.amphorae[0]!;
  }

  get b(): A {
    return this.amphorae[1]!;
  }

  other(amp: A): A {
    return amp === this.a ? this.b : this.a;
  }

  /** The spec both amphorae get from the templaters: Octavia 11 and later give the MASTER role priority 100, BACKUP 90. */
  private asSpec(lb: LbSpec): Record<string, unknown> {
    return {
      lb_id: lb.lbId,
      listener_id: lb.listenerId,
      pool_id: lb.poolId,
      vip: VIP,
      port: lb.port,
      connection_limit: lb.connectionLimit ?? 2000,
      members: this.members.map((m) => ({ id: m.id, address: m.address, port: m.port })),
      persistence: lb.persistence ?? null,
      cookie_name: lb.cookieName ?? null,
      more_listeners: (lb.more ?? []).map((l) => ({
        listener_id: l.listenerId,
        pool_id: l.poolId,
        port: l.port,
        persistence: l.persistence ?? null,
        cookie_name: l.cookieName ?? null,
        // Octavia's global maxconn is the listeners' sum; haproxy needs about two fds per connection,
        // and this machine's hard limit is 20,000 (three listeners at 5,000 exceed it).
        connection_limit: l.connectionLimit ?? 2000,
      })),
      amphorae: this.amphorae.map((a, i) => ({
        id: a.amphoraId,
        lb_network_ip: a.apiHost,
        vrrp_ip: a.vrrpIp,
        role: i === 0 ? 'MASTER' : 'BACKUP',
        priority: i === 0 ? 100 : 90,
      })),
    };
  }

  /** haproxy config per amphora (JinjaTemplater, peers), uploaded and loaded through the client. */
  async deployListener(lb: LbSpec, haproxyVersion: string): Promise<void> {
    for (const amp of this.amphorae) await this.deployListenerTo(amp, lb, haproxyVersion);
  }

  /** One amphora's part of Octavia's listener update: its config rendered, uploaded and reloaded. */
  async deployListenerTo(amp: A, lb: LbSpec, haproxyVersion: string): Promise<void> {
    const r = await amp.peer.request('as_render', { ...this.asSpec(lb), haproxy_version: haproxyVersion });
    if (!r.ok) throw new Error(`JinjaTemplater: ${r.exception}: ${r.message}\n${r.trace ?? ''}`);
    await amp.peer.call('upload_config', lb.lbId, r.result as string);
    await amp.peer.call('reload_listener', lb.lbId);
  }

  /** keepalived configs (KeepalivedJinjaTemplater through the driver's update_vrrp_conf), uploaded and started on both. */
  async deployVrrp(lb: LbSpec): Promise<void> {
    for (const amp of this.amphorae) {
      const r = await amp.peer.request('as_vrrp', { ...this.asSpec(lb), vip_cidr: '10.61.0.0/24', gateway: '10.61.0.1', start: true });
      if (!r.ok) throw new Error(`update_vrrp_conf/start_vrrp_service: ${r.exception}: ${r.message}\n${r.trace ?? ''}`);
    }
  }

  holdsVip(amp: A): boolean {
    try {
      return sh(...amp.ip, '-o', 'addr', 'show', 'dev', 'eth1').includes(` ${VIP}/32 `);
    } catch {
      return false;
    }
  }

  /** The amphora that holds the VIP, once exactly one does. */
  async master(timeoutMs = 15_000): Promise<A> {
    return (await waitFor(
      'exactly one amphora to hold the VIP',
      () => {
        const holders = this.amphorae.filter((a) => this.holdsVip(a));
        return holders.length === 1 ? holders[0]! : null;
      },
      timeoutMs,
      50,
    ))!;
  }

  /** The amphorae holding the VIP now. */
  vipHolders(): A[] {
    return this.amphorae.filter((a) => this.holdsVip(a));
  }

  amphoraByMemberIp(ip: string | null): string {
    return this.amphorae.find((a) => a.memberIp === ip)?.name ?? '?';
  }

  load(opts: { rate?: number; timeoutMs?: number; sources?: string[] | null; cookie?: boolean } = {}, port = 80): NsLoad {
    return new NsLoad(this.clientNs, `http://${VIP}:${port}/`, opts);
  }

  /** The namespaces the subclass made (killed with everything in them, then deleted). */
  protected abstract amphoraNamespaces(): string[];

  destroyNetworks(): void {
    if (this.networksDestroyed) return;
    this.networksDestroyed = true;
    for (const ns of [...this.amphoraNamespaces(), this.vipNs, this.clientNs]) {
      try {
        const pids = execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
        for (const pid of pids.split('\n').filter(Boolean)) quiet('kill', '-9', pid);
      } catch {
        // no such namespace
      }
      quiet('ip', 'netns', 'del', ns);
    }
    // The amphora ends of the ports (moved into the amphorae's namespaces or
    // not) go with the namespaces or here; the member ends here.
    for (const x of ['a', 'b']) {
      quiet('ip', 'link', 'del', `${this.linkPrefix}v${this.id}${x}`);
      quiet('ip', 'link', 'del', `${this.linkPrefix}m${this.id}${x}`);
      quiet('ip', 'link', 'del', `${this.linkPrefix}m${this.id}${x}p`);
    }
    quiet('ip', 'link', 'del', this.memberBridge);
  }

  /** The amphorae's own teardown (agents, containers), before the networks go. */
  protected abstract stopAmphorae(): Promise<void>;

  async destroy(): Promise<void> {
    for (const amp of this.amphorae) amp.peer.close();
    await this.stopAmphorae();
    for (const s of this.memberServers) {
      s.closeAllConnections();
      await new Promise((r) => s.close(() => r(null)));
    }
    // Let the namespaces' keepalived and haproxy go with them.
    await sleep(0);
    this.destroyNetworks();
  }
}

/** Two agents on the host (direct supervision), each with its own tenant namespace. */
export class ActiveStandbyRig extends AmphoraPair<Amphora> {
  private constructor(
    readonly haproxy: HaproxyUnderTest,
    readonly release: OctaviaUnderTest,
    readonly port: number,
  ) {
    super(`${haproxy.label} ${release.label}`, 'aat-', 'aa');
  }

  /** Build the networks, start both agents and plug both amphorae through Octavia's client. */
  static async create(haproxy: HaproxyUnderTest, release: OctaviaUnderTest, port: number): Promise<ActiveStandbyRig> {
    const rig = new ActiveStandbyRig(haproxy, release, port);
    return AmphoraPair.built(rig, () => rig.build());
  }

  protected amphoraNamespaces(): string[] {
    return [`${this.nsPrefix}a${this.id}`, `${this.nsPrefix}b${this.id}`];
  }

  private async build(): Promise<void> {
    await this.buildNetworks();
    const dir = await testDir('active-standby');
    for (const [i, name] of (['A', 'B'] as const).entries()) {
      const x = name.toLowerCase();
      const netns = this.amphoraNamespaces()[i]!;
      sh('ip', 'netns', 'add', netns);
      // As the image's sysctls: haproxy binds the VIP on the BACKUP too.
      sh('ip', 'netns', 'exec', netns, 'sysctl', '-q', '-w', 'net.ipv4.ip_nonlocal_bind=1');
      const ports = this.hotPlug(i, null);
      const adir = join(dir, x);
      mkdirSync(adir, { recursive: true });
      const amphoraId = `a0a0a0a${i}-0000-4000-8000-0000${this.id}000${i}`;
      const apiHost = `127.0.0.${2 + i}`;
      const agent = await startAgent(this.haproxy, adir, netns, this.port, undefined, [], [], {
        amphoraId,
        bindHost: apiHost,
        sections: ['[controller_worker]', 'loadbalancer_topology = ACTIVE_STANDBY'],
      });
      const peer = await OctaviaPeer.connect(this.release, agent, apiHost);
      const amp: Amphora = {
        name,
        netns,
        amphoraId,
        apiHost,
        ...this.addresses(i),
        vipBridgePort: ports.vipBridgePort,
        agent,
        peer,
        dir: adir,
        ip: ['ip', '-n', netns],
      };
      this.amphorae.push(amp);
      await this.plug(amp, ports);
    }
  }

  protected async stopAmphorae(): Promise<void> {
    for (const amp of this.amphorae) await amp.agent.stop().catch(() => undefined);
  }

  vrrpConfig(amp: Amphora): string {
    return readFileSync(join(amp.agent.basePath, 'vrrp', 'octavia-keepalived.conf'), 'utf8');
  }

  /** Power-off: every process in the amphora's namespace and its agent killed, its VIP link cut. */
  powerOff(amp: Amphora): void {
    // The link first, then everything frozen before anything dies: keepalived's
    // VRRP child gets SIGTERM when its parent dies (PDEATHSIG) and would say
    // goodbye with a priority 0 advert, which a powered-off amphora cannot.
    sh('ip', '-n', this.vipNs, 'link', 'set', amp.vipBridgePort, 'down');
    amp.agent.process.kill('SIGKILL');
    const pids = sh('ip', 'netns', 'pids', amp.netns).split('\n').filter(Boolean);
    for (const pid of pids) quiet('kill', '-STOP', pid);
    for (const pid of pids) quiet('kill', '-9', pid);
  }

  /**
   * The pids of a load balancer's haproxy (master and workers) in the
   * amphora's namespace: haproxy processes whose command lines name its
   * config (keepalived's check script and its socat name its socket too).
   */
  haproxyPids(amp: Amphora, lbId: string): number[] {
    return sh('ip', 'netns', 'pids', amp.netns)
      .split('\n')
      .filter(Boolean)
      .filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('haproxy') && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(lbId);
        } catch {
          return false;
        }
      })
      .map(Number);
  }

  /** The amphora's agent started again (after amp.agent.stop()), with the same config. */
  async startAgentAgain(amp: Amphora): Promise<void> {
    amp.agent = await restartAgent(amp.agent);
  }

  /**
   * The amphora's VIP NIC down in its namespace. The kernel drops the routes
   * through it (the default route of the VIP's routing table), which link up
   * does not bring back: vipLinkUp restores what this saw.
   */
  vipLinkDown(amp: Amphora): string[] {
    const routes = this.routes(amp);
    sh('ip', '-n', amp.netns, 'link', 'set', 'eth1', 'down');
    return routes;
  }

  /** Link up, and every route of `routes` (vipLinkDown's) whose destination has none now added back. */
  vipLinkUp(amp: Amphora, routes: string[]): string[] {
    sh('ip', '-n', amp.netns, 'link', 'set', 'eth1', 'up');
    // The kernel puts the subnet's route back with the link (proto kernel).
    const destination = (r: string) => r.split(' ')[0]!;
    const now = new Set(this.routes(amp).map(destination));
    const missing = routes.filter((r) => !now.has(destination(r)));
    for (const r of missing) sh('ip', '-n', amp.netns, 'route', 'add', ...r.split(' '));
    return missing;
  }

  /**
   * The routes of the namespace's main table, one per line, without flags:
   * those the agent set up when it plugged the VIP. The local table comes
   * back with link up; table 1 is keepalived's (virtual_routes), which it
   * adds when it becomes master.
   */
  private routes(amp: Amphora): string[] {
    return sh('ip', '-n', amp.netns, 'route', 'show')
      .split('\n')
      .map((l) => l.replace(/\s+(linkdown|dead)\b/g, '').trim())
      .filter(Boolean);
  }

  /** VRRP between the amphorae cut in `amp`'s namespace (both directions), the link left up: a split brain. */
  partition(amp: Amphora): void {
    execFileSync('ip', ['netns', 'exec', amp.netns, 'nft', '-f', '-'], {
      input:
        `table ip ${PARTITION_TABLE} {\n  chain in { type filter hook input priority 0; ip protocol vrrp drop; }\n` +
        `  chain out { type filter hook output priority 0; ip protocol vrrp drop; }\n}\n`,
    });
  }

  heal(amp: Amphora): void {
    quiet('ip', 'netns', 'exec', amp.netns, 'nft', 'delete', 'table', 'ip', PARTITION_TABLE);
  }

  /** The pid of the VRRP keepalived's VRRP child, from its pid file. */
  vrrpChildPid(amp: Amphora): number {
    return Number(readFileSync(join(amp.agent.basePath, 'vrrp', 'octavia-keepalived.vrrp.pid'), 'utf8').trim());
  }
}

/** What one scenario measured: printed, and returned for assertions. */
export interface ScenarioFigures {
  vipMoveMs: number | null;
  longestGapMs: number;
  failed: { offsetMs: number; error: string }[];
  servedBefore: Record<string, number>;
  servedAfter: Record<string, number>;
  inFlightAtEvent: number;
  successAfterMove: number;
}

/** Figures of one scenario: t0 is the event, movedAt when the VIP reached the other amphora (null: it did not move). */
export function figures<A extends AmphoraBase>(
  rig: AmphoraPair<A>,
  name: string,
  records: LoadRecord[],
  t0: number,
  movedAt: number | null,
  releasedAt: number | null = null,
): ScenarioFigures {
  const served = (from: number, to: number) => {
    const out: Record<string, number> = {};
    for (const r of records)
      if (r.status === 200 && r.start >= from && r.start < to) out[rig.amphoraByMemberIp(r.via)] = (out[rig.amphoraByMemberIp(r.via)] ?? 0) + 1;
    return out;
  };
  const ok = records
    .filter((r) => r.status === 200)
    .map((r) => r.end)
    .sort((a, b) => a - b);
  let gap = 0;
  for (let i = 1; i < ok.length; i++) gap = Math.max(gap, ok[i]! - ok[i - 1]!);
  const failed = records.filter((r) => r.status !== 200).map((r) => ({ offsetMs: r.start - t0, error: r.error ?? String(r.status) }));
  const settle = (movedAt ?? t0) + 1000;
  const after = records.filter((r) => r.start >= settle);
  const f: ScenarioFigures = {
    vipMoveMs: movedAt === null ? null : movedAt - t0,
    longestGapMs: gap,
    failed,
    servedBefore: served(0, t0),
    servedAfter: served(settle, Number.MAX_SAFE_INTEGER),
    // In flight when the old master let the VIP go (or at the event): their
    // connections were accepted there, and the backup resets them.
    inFlightAtEvent: records.filter((r) => r.start <= (releasedAt ?? t0) && r.end > (releasedAt ?? t0)).length,
    successAfterMove: after.length ? after.filter((r) => r.status === 200).length / after.length : 1,
  };
  const offsets = failed.map((x) => `${x.offsetMs}ms(${x.error})`);
  console.log(
    `[${rig.label}] ${name}: ${releasedAt === null ? '' : `VIP released by the master after ${releasedAt - t0} ms, `}VIP on the other amphora after ${f.vipMoveMs === null ? 'never' : `${f.vipMoveMs} ms`}, ` +
      `longest gap between successes ${gap} ms, ${records.length} requests, ${failed.length} failed` +
      `${failed.length ? ` at ${offsets.slice(0, 12).join(' ')}${offsets.length > 12 ? ' ...' : ''}` : ''}, in flight at the event ${f.inFlightAtEvent}, ` +
      `served before ${JSON.stringify(f.servedBefore)} after ${JSON.stringify(f.servedAfter)}, success after move+1s ${(f.successAfterMove * 100).toFixed(1)}%`,
  );
  return f;
}

/** Poll (every 20 ms) until `amp` holds the VIP (or, with holds false, no longer does); the time it was first seen. */
export async function vipArrival<A extends AmphoraBase>(rig: AmphoraPair<A>, amp: A, timeoutMs: number, holds = true): Promise<number | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (rig.holdsVip(amp) === holds) return Date.now();
    await sleep(20);
  }
  return null;
}
