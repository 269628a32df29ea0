// The heartbeat loop: every heartbeat_interval, one datagram to the next
// health manager of controller_ip_port_list (round robin), as Octavia's
// health sender does. Settings are read from the ConfigStore on every beat,
// and a PUT /1.0/config that changes [health_manager] sends a beat at once
// (ConfigStore.onChange) rather than after the old interval. Nothing here
// may stop the loop: a broken stats socket, an unreachable manager or a
// haproxy restart only costs that beat's data.
import dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { join } from 'node:path';
import type { ConfigStore } from '../config/store.js';
import type { Logger } from '../log.js';
import { keepalivedPid } from '../keepalived/process.js';
import { lvsInstance, lvsListenerIds, vrrpInstance } from '../keepalived/service.js';
import { exists, readTextIfExists, writeFileAtomic } from '../system/files.js';
import { encodeToFit } from './envelope.js';
import { lvsPoolStatus, parseIpVs, parseLvsConfig } from './lvs-status.js';
import { run } from '../system/exec.js';
import { stat } from 'node:fs/promises';
import { addLvsListener, buildHeartbeat, type CounterStore, type HeartbeatMessage } from './message.js';
import type { StatRow } from '../haproxy/process/stats.js';

/** The largest UDP payload over IPv4; the receiver reads at most 64 KiB. */
export const MAX_DATAGRAM = 65_507;

/** Split "host:port" at the last colon; a bracketed IPv6 host is unbracketed. */
export function parseDestination(entry: string): { host: string; port: number } | null {
  const i = entry.lastIndexOf(':');
  if (i <= 0) return null;
  const port = Number(entry.slice(i + 1));
  const host = entry.slice(0, i).replace(/^\[(.*)\]$/, '$1');
  return Number.isInteger(port) && port > 0 && port < 65536 && host ? { host, port } : null;
}

export interface HeartbeatDeps {
  config: ConfigStore;
  log: Logger;
  /** Ids of the load balancers with an accepted config. */
  loadBalancerIds(): Promise<string[]>;
  /** A load balancer's `show stat` rows (the engine's, with members waiting for a first check DOWN). */
  stats(lbId: string): Promise<StatRow[]>;
}

export class HeartbeatSender {
  private seq = 0;
  private counters: CounterStore | null = null;
  private next = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** The [health_manager] settings the schedule follows, to tell a change that concerns it. */
  private healthManager = '';
  private sockets = new Map<'udp4' | 'udp6', dgram.Socket>();

  constructor(private readonly deps: HeartbeatDeps) {}

  private get basePath(): string {
    return this.deps.config.current.haproxyAmphora.basePath;
  }

  private get countersFile(): string {
    return join(this.basePath, 'stats_counters.json');
  }

  /** Why no heartbeat should be sent now, or null. A configured but dead keepalived must lead to failover. */
  async skipReason(): Promise<string | null> {
    const vrrp = vrrpInstance(this.basePath);
    if ((await exists(vrrp.config)) && !(await keepalivedPid(vrrp))) return 'keepalived is configured but not running';
    return null;
  }

  /**
   * Rows of every running load balancer; one that does not answer contributes
   * nothing this beat. Asked all at once: haproxies that answer only at the
   * stats socket's timeout (stopped, hung) delay the beat by one timeout, not one each.
   */
  private async collectRows(): Promise<StatRow[]> {
    const perLb = await Promise.all(
      (await this.deps.loadBalancerIds()).map((lb) =>
        this.deps.stats(lb).catch((err: unknown) => {
          this.deps.log.debug({ lbId: lb, err: String(err) }, 'no stats from haproxy this beat');
          return [];
        }),
      ),
    );
    return perLb.flat();
  }

  /** Build the next message. With `commit`, the sequence number and delta counters advance. */
  async buildNext(commit: boolean): Promise<HeartbeatMessage> {
    if (this.counters === null) {
      const saved = await readTextIfExists(this.countersFile);
      try {
        this.counters = saved ? (JSON.parse(saved) as CounterStore) : {};
      } catch {
        this.counters = {};
      }
    }
    const amphoraId = this.deps.config.current.amphoraAgent.amphoraId ?? '';
    const { message, counters } = buildHeartbeat(amphoraId, this.seq, await this.collectRows(), this.counters);
    await this.addLvsListeners(message);
    if (commit) {
      this.seq++;
      this.counters = counters;
      await writeFileAtomic(this.countersFile, JSON.stringify(counters), 0o640);
    }
    return message;
  }

  /** LVS listeners whose keepalived runs: the listener, and its pool from the kernel's IPVS table. */
  private async addLvsListeners(message: HeartbeatMessage): Promise<void> {
    const ids = await lvsListenerIds(this.basePath);
    if (ids.length === 0) return;
    const netns = this.deps.config.current.amphoraAgent.networkNamespace;
    const table = await run(['cat', '/proc/net/ip_vs'], { netns });
    const ipvs = table.exitCode === 0 ? parseIpVs(table.stdout) : null;
    for (const id of ids) {
      const inst = lvsInstance(this.basePath, id);
      if (!(await keepalivedPid(inst))) continue;
      const text = (await readTextIfExists(inst.config)) ?? '';
      addLvsListener(message, id, text);
      if (!ipvs) continue;
      // Members missing from IPVS right after a config change are still coming up.
      const [cfgTime, checkerTime] = await Promise.all(
        [inst.config, inst.childPidFiles!.check].map((f) =>
          stat(f).then(
            (st) => st.mtimeMs,
            () => 0,
          ),
        ),
      );
      const cfg = parseLvsConfig(text);
      const pool = lvsPoolStatus(cfg, ipvs, cfgTime! > checkerTime!);
      // The LVS pool key is the bare pool id (haproxy pools are "<pool>:<listener>").
      if (pool && cfg.poolId) message.pools[cfg.poolId] = pool;
    }
  }

  /** One beat: build, sign, send to the next destination. Never throws. */
  async beat(): Promise<void> {
    try {
      const reason = await this.skipReason();
      if (reason) {
        this.deps.log.warn(`no heartbeat: ${reason}`);
        return;
      }
      const hm = this.deps.config.current.healthManager;
      const destinations = hm.controllerIpPortList.map(parseDestination).filter((d) => d !== null);
      if (destinations.length === 0) return;
      const { datagram, trimmedPools } = await encodeToFit(await this.buildNext(true), hm.heartbeatKey, MAX_DATAGRAM);
      if (trimmedPools.length > 0) {
        this.deps.log.error(
          { trimmedPools, bytes: datagram.length },
          'heartbeat too large for one UDP datagram: member statuses of these pools left out (they show OFFLINE in Octavia)',
        );
      }
      if (datagram.length > MAX_DATAGRAM) {
        // Even without member statuses: a truncated datagram would fail the receiver's HMAC check.
        this.deps.log.error({ bytes: datagram.length, limit: MAX_DATAGRAM }, 'heartbeat does not fit in one UDP datagram; not sent');
        return;
      }
      const dest = destinations[this.next++ % destinations.length]!;
      const { address, family } = await lookup(dest.host);
      const kind = family === 6 ? 'udp6' : 'udp4';
      let sock = this.sockets.get(kind);
      if (!sock) {
        sock = dgram.createSocket(kind);
        sock.on('error', (err) => this.deps.log.debug({ err: String(err) }, 'heartbeat socket error'));
        this.sockets.set(kind, sock);
      }
      sock.send(datagram, dest.port, address, (err) => {
        if (err) this.deps.log.debug({ err: String(err), dest }, 'heartbeat not sent');
      });
    } catch (err) {
      this.deps.log.warn({ err: String(err) }, 'heartbeat failed');
    }
  }

  start(): void {
    // PUT /1.0/config: new destinations, key or interval apply at once, as the
    // controller expects after update_amphora_agent_config, not only after the
    // old interval (up to its full length) has run out.
    this.deps.config.onChange((next) => {
      const settings = JSON.stringify(next.healthManager);
      if (this.stopped || settings === this.healthManager) return;
      this.healthManager = settings;
      this.next = 0;
      this.schedule(0);
    });
    this.healthManager = JSON.stringify(this.deps.config.current.healthManager);
    this.schedule(0);
  }

  private schedule(delayMs: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), delayMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    this.timer = null;
    await this.beat();
    // A config change during the beat has scheduled the next one already.
    if (this.timer === null && !this.stopped) this.schedule(this.deps.config.current.healthManager.heartbeatInterval * 1000);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    for (const s of this.sockets.values()) s.close();
    this.sockets.clear();
  }
}
