// The box's cloud: Nova and Neutron for Octavia's processes, over the JSON-
// lines protocol of test/octavia-box/PROTOCOL.md (one connection per call,
// one JSON line in, one out). It runs in the test's own process and owns all
// state, so the worker's creates and the health manager's failovers see the
// same ports and servers. A server is an amphora container
// (../amphora-container.ts) in a namespace of its own in the box
// (box-network.ts), configured only from the config drive files it is given.
// Every request and answer is a line of <box state dir>/cloud.log.
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { join, posix } from 'node:path';
import { randomUUID } from 'node:crypto';
import { AmphoraContainer, type ImageRoot } from '../amphora-container.js';
import type { Box, Nic } from './box-network.js';
import { allowOnly, bad, CloudError, conflict, MGMT_NETWORK_ID, NetworkState, notFound, optString, stringList, type Port } from './cloud-state.js';

/** The agent amphorae run: this checkout's, or Octavia's own from Debian's octavia-agent package (the reference). */
export type AgentKind = 'this' | 'reference';

export interface Server {
  id: string;
  name: string;
  status: 'BUILD' | 'ACTIVE' | 'ERROR' | 'DELETED';
  image_id: string | null;
  flavor_id: string | null;
  lb_network_ip: string | null;
  port_ids: string[];
  availability_zone: 'box';
  fault: string | null;
}

/** What the cloud knows of a server beyond its JSON: the namespace, NICs and container behind it. */
export interface Amphora {
  server: Server;
  netns: string;
  container: AmphoraContainer | null;
  /** port id -> its NIC. */
  nics: Map<string, Nic>;
  /** Ports created for network_ids: deleted with the server (or when detached), as Nova does. */
  ownPorts: Set<string>;
  /** Milliseconds from server.create to ACTIVE (or ERROR). */
  bootMs: number | null;
  /** Settles once the boot ended, either way. */
  booted: Promise<void>;
}

/** Longest request line taken (config drive files of a few certificates are a few KiB). */
const MAX_LINE = 16 * 1024 * 1024;
const CERTS_DIR = '/etc/octavia/certs/';

const clone = <T>(v: T): T => structuredClone(v);

function params(p: unknown): Record<string, unknown> {
  if (p === undefined || p === null) return {};
  if (typeof p !== 'object' || Array.isArray(p)) throw bad('params: an object');
  return p as Record<string, unknown>;
}

/** Config drive files: absolute, normalized paths to base64 text; decoded with cloud-init's modes. */
function driveFiles(v: unknown): Record<string, { content: Buffer; mode: number }> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw bad('config_drive_files: an object of path: base64');
  const out: Record<string, { content: Buffer; mode: number }> = {};
  for (const [path, text] of Object.entries(v as Record<string, unknown>)) {
    if (!path.startsWith('/') || posix.normalize(path) !== path || path.endsWith('/'))
      throw bad(`config_drive_files: '${path}' is not an absolute, normalized file path`);
    if (typeof text !== 'string' || !/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(text)) throw bad(`config_drive_files['${path}']: not base64 text`);
    // Key material (server.pem holds the amphora's private key) readable by root only.
    out[path] = { content: Buffer.from(text, 'base64'), mode: path.startsWith(CERTS_DIR) ? 0o600 : 0o644 };
  }
  return out;
}

/** A server name as a hostname: letters, digits and dashes, at most 63 characters. */
function hostname(name: string): string {
  return (
    name
      .replace(/[^A-Za-z0-9-]/g, '-')
      .replace(/^-+/, '')
      .slice(0, 63) || 'amphora'
  );
}

export class Cloud {
  readonly state: NetworkState;
  private readonly amphorae = new Map<string, Amphora>();
  private counter = 0;
  private connections = 0;
  private readonly log: string;
  private readonly sockets = new Set<Socket>();
  private closed = false;

  private constructor(
    readonly socketPath: string,
    readonly box: Box,
    private readonly image: ImageRoot,
    private readonly server: NetServer,
    readonly agent: AgentKind,
  ) {
    this.state = new NetworkState(() => box.usedAddresses());
    this.log = posix.join(box.stateDir, 'cloud.log');
  }

  /** Serve the protocol at `socketPath` (a stale socket file there is replaced); servers boot `image`, running `agent`. */
  static async listen(socketPath: string, box: Box, image: ImageRoot, agent: AgentKind = 'this'): Promise<Cloud> {
    if (existsSync(socketPath)) unlinkSync(socketPath);
    const net = createServer();
    const cloud = new Cloud(socketPath, box, image, net, agent);
    net.on('connection', (s) => cloud.serve(s));
    await new Promise<void>((resolve, reject) => {
      net.once('error', reject);
      net.listen(socketPath, () => resolve());
    });
    process.on('exit', () => cloud.exitCleanup());
    cloud.note(`listening on ${socketPath} (box ${box.netns}, image ${image.dir}, ${agent === 'this' ? "this checkout's agent" : "Octavia's own agent"})`);
    return cloud;
  }

  /** A line of the log: `>` a request, `<` its answer (both after the connection's number), `#` the cloud's own events. */
  private logLine(text: string): void {
    try {
      appendFileSync(this.log, `${new Date().toISOString()} ${text}\n`);
    } catch {
      // a log that cannot be written must not fail a call
    }
  }

  private note(text: string): void {
    this.logLine(`# ${text}`);
  }

  private serve(sock: Socket): void {
    const conn = ++this.connections;
    this.sockets.add(sock);
    let buf = Buffer.alloc(0);
    let handled = false;
    const handle = (line: string) => {
      if (handled) return;
      handled = true;
      this.logLine(`${conn} > ${line}`);
      void this.answer(line).then((answer) => {
        const text = JSON.stringify(answer);
        this.logLine(`${conn} < ${text}`);
        if (!sock.destroyed) sock.end(`${text}\n`);
      });
    };
    sock.on('data', (d: Buffer) => {
      if (handled) return;
      buf = Buffer.concat([buf, d]);
      const nl = buf.indexOf(10);
      if (nl >= 0) handle(buf.subarray(0, nl).toString('utf8'));
      else if (buf.length > MAX_LINE) handle(`${buf.subarray(0, 200).toString('utf8')}... (over ${MAX_LINE} bytes)`);
    });
    // A caller that half-closes after its line without a newline still gets its answer.
    sock.on('end', () => {
      if (!handled && buf.length > 0) handle(buf.toString('utf8'));
    });
    sock.on('error', () => undefined);
    sock.on('close', () => this.sockets.delete(sock));
  }

  /** The answer to one request line; never throws. */
  private async answer(line: string): Promise<{ result: unknown } | { error: { type: string; message: string } }> {
    try {
      let req: unknown;
      try {
        req = JSON.parse(line);
      } catch (err) {
        throw bad(`not a JSON line: ${(err as Error).message}`);
      }
      if (typeof req !== 'object' || req === null || Array.isArray(req)) throw bad('a request is an object {method, params}');
      const { method, params: p } = req as Record<string, unknown>;
      if (typeof method !== 'string') throw bad('method: a string');
      const fn = this.methods[method];
      if (!fn) throw bad(`unknown method '${method}' (known: ${Object.keys(this.methods).join(', ')})`);
      const result = await fn(params(p));
      return { result: result === undefined ? null : result };
    } catch (err) {
      if (err instanceof CloudError) return { error: { type: err.type, message: err.message } };
      this.note(`internal error: ${(err as Error).stack ?? String(err)}`);
      return { error: { type: 'Internal', message: (err as Error).message ?? String(err) } };
    }
  }

  private readonly methods: Record<string, (p: Record<string, unknown>) => unknown> = {
    'server.create': (p) => this.createServer(p),
    'server.get': (p) => {
      allowOnly(p, ['id'], 'server.get');
      return clone(this.amphora(p.id).server);
    },
    'server.delete': (p) => {
      allowOnly(p, ['id'], 'server.delete');
      return this.deleteServer(this.amphora(p.id).server.id);
    },
    'server.list': (p) => {
      allowOnly(p, [], 'server.list');
      return this.servers();
    },
    'server.attach_port': (p) => {
      allowOnly(p, ['server_id', 'port_id'], 'server.attach_port');
      return this.attachPort(this.amphora(p.server_id), this.state.port(p.port_id));
    },
    'server.detach_port': (p) => {
      allowOnly(p, ['server_id', 'port_id'], 'server.detach_port');
      const amp = this.amphora(p.server_id);
      const port = this.state.port(p.port_id);
      if (!amp.nics.has(port.id)) throw notFound(`port ${port.id} is not attached to server ${amp.server.id}`);
      this.detach(amp, port);
      return null;
    },
    'port.create': (p) => {
      const port = this.state.createPort(p);
      return clone(port);
    },
    'port.get': (p) => {
      allowOnly(p, ['id'], 'port.get');
      return clone(this.state.port(p.id));
    },
    'port.list': (p) => this.state.listPorts(p),
    'port.update': (p) => this.updatePort(p),
    'port.delete': (p) => {
      allowOnly(p, ['id'], 'port.delete');
      const id = optString(p.id, 'id');
      if (!id) throw bad('id: a non-empty string');
      const port = this.state.ports.get(id);
      if (port) this.deletePort(port);
      return null;
    },
    'network.get': (p) => {
      allowOnly(p, ['id'], 'network.get');
      return this.state.getNetwork(p.id);
    },
    'subnet.get': (p) => {
      allowOnly(p, ['id'], 'subnet.get');
      return this.state.getSubnet(p.id);
    },
    'network.list': (p) => {
      allowOnly(p, [], 'network.list');
      return [...this.state.networks.values()].map(clone);
    },
    'subnet.list': (p) => {
      allowOnly(p, [], 'subnet.list');
      return [...this.state.subnets.values()].map(clone);
    },
  };

  private amphora(id: unknown): Amphora {
    if (typeof id !== 'string' || !id) throw bad('server id: a non-empty string');
    const amp = this.amphorae.get(id);
    if (!amp) throw notFound(`server ${id} not found`);
    return amp;
  }

  /** Port status as Neutron shows it: ACTIVE when bound to a server and administratively up. */
  private portStatus(port: Port): void {
    const plugged = [...this.amphorae.values()].some((a) => a.nics.has(port.id));
    port.status = plugged && port.admin_state_up ? 'ACTIVE' : 'DOWN';
  }

  private createServer(p: Record<string, unknown>): Server {
    allowOnly(p, ['name', 'image_id', 'flavor_id', 'network_ids', 'port_ids', 'config_drive_files', 'user_data', 'availability_zone'], 'server.create');
    const name = optString(p.name, 'name');
    if (!name) throw bad('name: a non-empty string');
    const networks = (stringList(p.network_ids, 'network_ids') ?? []).map((id) => this.state.network(id));
    const given = (stringList(p.port_ids, 'port_ids') ?? []).map((id) => this.state.port(id));
    if (networks.length + given.length === 0) throw bad('a server needs a NIC: network_ids or port_ids');
    const files = driveFiles(p.config_drive_files);
    if (p.user_data !== undefined && p.user_data !== null && typeof p.user_data !== 'string') throw bad('user_data: a string or null');
    const id = randomUUID();
    for (const port of given) {
      if (port.device_id && port.device_id !== id) throw conflict(`port ${port.id} is in use by device ${port.device_id}`);
    }
    if (new Set(given.map((x) => x.id)).size !== given.length) throw bad('port_ids: a port given twice');
    const n = ++this.counter;
    const server: Server = {
      id,
      name,
      status: 'BUILD',
      image_id: optString(p.image_id ?? undefined, 'image_id') ?? null,
      flavor_id: optString(p.flavor_id ?? undefined, 'flavor_id') ?? null,
      lb_network_ip: null,
      port_ids: [],
      availability_zone: 'box',
      fault: null,
    };
    const amp: Amphora = {
      server,
      netns: `aatb-${this.box.tag}-a${n}`,
      container: null,
      nics: new Map(),
      ownPorts: new Set(),
      bootMs: null,
      booted: Promise.resolve(),
    };
    const started = Date.now();
    // The namespace and NICs now (a port attached while it boots lands in a namespace that exists), the boot in the background.
    this.box.addNamespace(amp.netns);
    this.amphorae.set(id, amp);
    try {
      // Nova's NIC order: the networks' new ports, then the ports given.
      const ports = networks.map((net) => {
        const port = this.state.createPort({ network_id: net.id, device_owner: 'compute:box', device_id: id });
        amp.ownPorts.add(port.id);
        return port;
      });
      for (const port of [...ports, ...given]) {
        const nic = this.plugInto(amp, port);
        // The management address as the amphora's DHCP client would set it; other NICs are the agent's to configure.
        if (port.network_id === MGMT_NETWORK_ID && server.lb_network_ip === null) {
          const address = port.fixed_ips[0]!.ip_address;
          this.box.configure(amp.netns, nic.inner, `${address}/24`);
          server.lb_network_ip = address;
        }
      }
    } catch (err) {
      this.teardown(amp);
      throw err;
    }
    // The hostname cloud-init sets from the metadata's (the server's name), unless the drive brings one.
    files['/etc/hostname'] ??= { content: Buffer.from(`${hostname(name)}\n`), mode: 0o644 };
    amp.booted = this.boot(amp, files, started);
    this.note(`server ${id} (${name}) in ${amp.netns}: booting, lb_network_ip ${server.lb_network_ip}`);
    return clone(server);
  }

  private async boot(amp: Amphora, files: Record<string, { content: Buffer; mode: number }>, started: number): Promise<void> {
    try {
      const container = await AmphoraContainer.boot(this.image, { name: amp.netns, netns: amp.netns, files, checkoutAgent: this.agent === 'this' });
      amp.bootMs = Date.now() - started;
      if (amp.server.status === 'DELETED' || this.closed) {
        await container.destroy();
        return;
      }
      amp.container = container;
      amp.server.status = 'ACTIVE';
      this.note(`server ${amp.server.id} ACTIVE after ${amp.bootMs} ms`);
    } catch (err) {
      amp.bootMs = Date.now() - started;
      if (amp.server.status === 'DELETED') return;
      amp.server.status = 'ERROR';
      amp.server.fault = String((err as Error).message ?? err).slice(0, 4000);
      this.note(`server ${amp.server.id} ERROR after ${amp.bootMs} ms: ${amp.server.fault}`);
    }
  }

  /** A port's NIC in the amphora's namespace, under the name the kernel would give the next NIC there. */
  private plugInto(amp: Amphora, port: Port): Nic {
    const nic = this.box.plug(amp.netns, this.box.freeEthName(amp.netns), port.mac_address, this.state.bridgeOf(port));
    amp.nics.set(port.id, nic);
    port.device_id = amp.server.id;
    if (!port.device_owner) port.device_owner = 'compute:box';
    amp.server.port_ids.push(port.id);
    if (!port.admin_state_up) this.box.setOuterUp(nic.outer, false);
    this.portStatus(port);
    return nic;
  }

  private attachPort(amp: Amphora, port: Port): Port {
    if (amp.server.status !== 'ACTIVE' && amp.server.status !== 'BUILD')
      throw conflict(`server ${amp.server.id} is ${amp.server.status}: cannot attach a port`);
    if (amp.nics.has(port.id)) throw conflict(`port ${port.id} is attached to server ${amp.server.id} already`);
    if (port.device_id && port.device_id !== amp.server.id) throw conflict(`port ${port.id} is in use by device ${port.device_id}`);
    const nic = this.plugInto(amp, port);
    this.note(`port ${port.id} (${port.mac_address}) attached to ${amp.server.id} as ${nic.inner} (${nic.outer} on ${nic.bridge})`);
    return clone(port);
  }

  /** The NIC gone, the port unbound (and deleted if the server made it). */
  private detach(amp: Amphora, port: Port): void {
    const nic = amp.nics.get(port.id);
    if (nic) this.box.unplug(nic.outer);
    amp.nics.delete(port.id);
    amp.server.port_ids = amp.server.port_ids.filter((x) => x !== port.id);
    if (amp.ownPorts.delete(port.id)) {
      this.state.deletePort(port.id);
      return;
    }
    port.device_id = '';
    port.device_owner = '';
    this.portStatus(port);
  }

  private updatePort(p: Record<string, unknown>): Port {
    const port = this.state.port(p.id);
    const change = this.state.portUpdate(port, p);
    Object.assign(port, change);
    if (change.admin_state_up !== undefined) {
      for (const amp of this.amphorae.values()) {
        const nic = amp.nics.get(port.id);
        if (nic) this.box.setOuterUp(nic.outer, port.admin_state_up);
      }
      this.portStatus(port);
    }
    return clone(port);
  }

  /** Deleting a bound port unplugs it from its server first (Neutron tells Nova, Nova detaches). */
  private deletePort(port: Port): void {
    for (const amp of this.amphorae.values()) {
      if (!amp.nics.has(port.id)) continue;
      const nic = amp.nics.get(port.id)!;
      this.box.unplug(nic.outer);
      amp.nics.delete(port.id);
      amp.server.port_ids = amp.server.port_ids.filter((x) => x !== port.id);
      amp.ownPorts.delete(port.id);
    }
    this.state.deletePort(port.id);
  }

  private async deleteServer(id: string): Promise<null> {
    const amp = this.amphorae.get(id)!;
    if (amp.server.status === 'DELETED') return null;
    amp.server.status = 'DELETED';
    this.keepJournal(amp);
    // Still booting: killing what runs in its namespace ends the boot, whose end destroys the container.
    if (amp.container) await amp.container.destroy();
    this.teardown(amp);
    this.note(`server ${id} deleted`);
    return null;
  }

  /**
   * The amphora's journal (agent, haproxy and keepalived units) kept in the
   * box's state directory: Octavia deletes an amphora whose flow failed, and
   * the reason is only in there.
   */
  private keepJournal(amp: Amphora): void {
    if (!amp.container) return;
    let text: string;
    try {
      text = amp.container.exec(['journalctl', '--no-pager', '-o', 'short-precise', '-n', '2000']);
    } catch (err) {
      text = `journal unreadable: ${(err as Error).message}`;
    }
    writeFileSync(join(this.box.stateDir, `${amp.server.name}.journal`), text);
  }

  /** The namespace and NICs removed, ports unbound or deleted, the server forgotten. */
  private teardown(amp: Amphora): void {
    this.box.removeNamespace(amp.netns);
    for (const portId of [...amp.server.port_ids]) {
      const port = this.state.ports.get(portId);
      if (port) this.detach(amp, port);
    }
    for (const portId of amp.ownPorts) this.state.deletePort(portId);
    this.amphorae.delete(amp.server.id);
  }

  /**
   * On process exit (a failed test, an uncaught error): synchronous. Each
   * container's PID 1 killed (its PID namespace goes with it) and the
   * cgroups nspawn made for it removed once empty, which takes a moment
   * after the kill; the box's exit handler removes the namespaces, and
   * ImageRoot's the overlays.
   */
  private exitCleanup(): void {
    try {
      unlinkSync(this.socketPath);
    } catch {
      // gone already
    }
    const names = [...this.amphorae.values()].map((a) => a.netns);
    for (const a of this.amphorae.values()) a.container?.kill();
    for (const ns of names) this.box.killIn(ns);
    const dirs = ['/sys/fs/cgroup', '/sys/fs/cgroup/unified', '/sys/fs/cgroup/systemd'].flatMap((root) =>
      names.map((n) => posix.join(root, `aat-nspawn-${n}`)),
    );
    for (let i = 0; i < 30; i++) {
      const left = dirs.filter((d) => existsSync(d));
      if (left.length === 0) break;
      for (const d of left) spawnSync('find', [d, '-depth', '-type', 'd', '-exec', 'rmdir', '{}', ';'], { stdio: 'ignore' });
      if (left.some((d) => existsSync(d))) spawnSync('sleep', ['0.1']);
    }
  }

  /** Test hook: the amphora dies (its container's PID 1 killed; status stays ACTIVE, as Nova sees a crashed guest only later). */
  fail(serverId: string): void {
    const amp = this.amphora(serverId);
    // A VM that dies takes its NICs with it; a container's namespace would
    // outlive its processes and answer for the addresses it holds (RST for
    // the VIP: refused connections no dead amphora gives).
    for (const nic of amp.nics.values()) this.box.setOuterUp(nic.outer, false);
    if (amp.container) amp.container.kill();
    else this.box.killIn(amp.netns);
    this.note(`server ${serverId} failed (test hook)`);
  }

  servers(): Server[] {
    return [...this.amphorae.values()].filter((a) => a.server.status !== 'DELETED').map((a) => clone(a.server));
  }

  ports(): Port[] {
    return [...this.state.ports.values()].map(clone);
  }

  /** The amphora behind a server (its container, namespace, NICs, boot time), for assertions. */
  amphoraOf(serverId: string): Amphora {
    return this.amphora(serverId);
  }

  /** Every server deleted, the socket closed and removed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await new Promise<void>((r) => {
      this.server.close(() => r());
      for (const s of this.sockets) s.destroy();
    });
    for (const amp of [...this.amphorae.values()]) {
      if (amp.server.status !== 'DELETED') this.keepJournal(amp);
      amp.server.status = 'DELETED';
      if (amp.container) await amp.container.destroy();
      this.teardown(amp);
    }
    // A boot still under way ends by itself now that its namespace is gone
    // (its continuation destroys the container); not waited for: that can
    // take the container's boot deadline, and the process exit handlers of
    // AmphoraContainer and ImageRoot clean up after it anyway.
    try {
      unlinkSync(this.socketPath);
    } catch {
      // gone already
    }
  }
}
