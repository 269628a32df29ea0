// What follows a haproxy change on an amphora, whichever API or timer caused
// it (Octavia's agent does the same): the engine tells followHaproxyChange,
// its one subscriber, and nothing else follows one. keepalived's track file
// learns whether haproxy runs (haproxy-track.ts); in ACTIVE_STANDBY the VRRP
// check script lists every load balancer's stats socket; in SINGLE topology
// the bind addresses the load report carries are announced (gratuitous ARP /
// unsolicited NA), in the background, so the network learns where the VIP
// lives now. Octavia 16 and later do the same after an LVS (UDP/SCTP)
// listener starts.
import type { ConfigStore } from '../config/store.js';
import type { HaproxyEngine } from '../haproxy/apply/engine.js';
import type { HaproxyChange } from '../haproxy/apply/haproxy-change.js';
import { statsSocket } from '../config/layout.js';
import { markHaproxy } from '../keepalived/haproxy-track.js';
import { lvsInstance, lvsListenerIds, lvsVirtualAddresses, updateHaproxyCheckScript } from '../keepalived/service.js';
import type { Logger } from '../log.js';
import { announceAddresses } from '../net/advertise.js';
import { applyIpvsSysctls } from '../net/ipvs-sysctls.js';
import { readTextIfExists } from '../system/files.js';

export interface AnnounceDeps {
  engine: HaproxyEngine;
  config: ConfigStore;
  log: Logger;
}

/** The engine's subscriber (EngineOptions.onChange). */
export async function followHaproxyChange(deps: AnnounceDeps, change: HaproxyChange): Promise<void> {
  const base = deps.config.current.haproxyAmphora.basePath;
  const { lbId } = change;
  switch (change.kind) {
    case 'loaded':
      await markHaproxy(base, lbId, true);
      return afterHaproxyChange(deps, lbId, change.load.bindAddresses);
    case 'ran':
      await markHaproxy(base, lbId, true);
      return afterHaproxyChange(deps, lbId, change.bindAddresses);
    case 'restarted':
      // The config it ran before: its sockets are listed, its addresses where they were.
      return markHaproxy(base, lbId, true);
    case 'dead':
      return markHaproxy(base, lbId, false);
    case 'stopped':
      // Stopped for good: in ACTIVE_STANDBY the VIP leaves at once (haproxy-track.ts).
      await markHaproxy(base, lbId, false);
      return afterHaproxyChange(deps, lbId, null);
    case 'deleted':
      await markHaproxy(base, lbId, true); // gone, not down
      return afterHaproxyChange(deps, lbId, null);
  }
}

/** `binds`: what haproxy binds now it runs; null when it no longer runs. */
async function afterHaproxyChange(deps: AnnounceDeps, lbId: string, binds: string[] | null): Promise<void> {
  const c = deps.config.current;
  if (c.controllerWorker.loadbalancerTopology === 'ACTIVE_STANDBY') {
    await updateCheckScript(deps, binds !== null ? null : lbId);
  } else if (binds !== null && c.amphoraAgent.networkNamespace) {
    const netns = c.amphoraAgent.networkNamespace;
    // After the caller has answered, not awaited: nobody waits for the
    // announcement (failures are logged by announceAddresses), arping waits a
    // second for replies, and starting a process (a fork) takes the event
    // loop for a while.
    setImmediate(() => {
      announceAddresses(netns, binds, deps.log).catch((err: Error) => deps.log.warn({ lbId, err: err.message }, 'address announcement failed'));
    });
  }
}

/** The VRRP check script of ACTIVE_STANDBY: every load balancer's stats socket (but `without`'s), or whether LVS listeners remain. */
async function updateCheckScript(deps: AnnounceDeps, without: string | null): Promise<void> {
  const base = deps.config.current.haproxyAmphora.basePath;
  const lbs = (await deps.engine.loadBalancerIds()).filter((lb) => lb !== without);
  await updateHaproxyCheckScript(
    base,
    lbs.map((lb) => statsSocket(base, lb)),
    (await lvsListenerIds(base)).length > 0,
  );
}

/**
 * After API 2.0 started or removed LVS listeners: in ACTIVE_STANDBY the
 * check script, which says whether LVS listeners remain when no haproxy
 * runs. (Their addresses are announced as each starts: afterLvsStart.)
 */
export async function afterLvsChange(deps: AnnounceDeps): Promise<void> {
  if (deps.config.current.controllerWorker.loadbalancerTopology === 'ACTIVE_STANDBY') await updateCheckScript(deps, null);
}

/**
 * After an LVS listener's keepalived (re)started: the IPVS settings of the
 * namespace (keepalived may just have loaded ip_vs), and in SINGLE topology
 * the listener's virtual addresses announced. In ACTIVE_STANDBY the VRRP
 * keepalived announces the VIP when it becomes MASTER.
 */
export async function afterLvsStart(deps: Omit<AnnounceDeps, 'engine'>, listenerId: string): Promise<void> {
  const c = deps.config.current;
  const netns = c.amphoraAgent.networkNamespace;
  if (!netns) return;
  await applyIpvsSysctls(netns, deps.log);
  if (c.controllerWorker.loadbalancerTopology !== 'SINGLE') return;
  const text = (await readTextIfExists(lvsInstance(c.haproxyAmphora.basePath, listenerId).config)) ?? '';
  void announceAddresses(netns, lvsVirtualAddresses(text), deps.log);
}
