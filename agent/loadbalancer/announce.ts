// What follows a haproxy start, reload or removal on an amphora, whichever API
// caused it (Octavia's agent does the same): in ACTIVE_STANDBY the VRRP check
// script lists every load balancer's stats socket; in SINGLE topology the bind
// addresses are announced (gratuitous ARP / unsolicited NA), in the
// background, so the network learns where the VIP lives now. Octavia 16 and
// later do the same after an LVS (UDP/SCTP) listener starts.
import type { ConfigStore } from '../config/store.js';
import type { HaproxyEngine } from '../haproxy/apply/engine.js';
import { statsSocket } from '../haproxy/layout.js';
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

export async function afterHaproxyChange(deps: AnnounceDeps, lbId: string, running: boolean): Promise<void> {
  const c = deps.config.current;
  if (c.controllerWorker.loadbalancerTopology === 'ACTIVE_STANDBY') {
    const base = c.haproxyAmphora.basePath;
    const lbs = (await deps.engine.loadBalancerIds()).filter((lb) => running || lb !== lbId);
    await updateHaproxyCheckScript(base, lbs.map((lb) => statsSocket(base, lb)), (await lvsListenerIds(base)).length > 0);
  } else if (running && c.amphoraAgent.networkNamespace) {
    const netns = c.amphoraAgent.networkNamespace;
    // After the caller has answered, not awaited: nobody waits for the
    // announcement (failures are logged by announceAddresses), arping waits a
    // second for replies, and starting a process (a fork) takes the event
    // loop for a while.
    setImmediate(() => {
      announceBinds(deps, lbId, netns).catch((err: Error) => deps.log.warn({ lbId, err: err.message }, 'address announcement failed'));
    });
  }
}

async function announceBinds(deps: AnnounceDeps, lbId: string, netns: string): Promise<void> {
  await announceAddresses(netns, await deps.engine.bindAddresses(lbId), deps.log);
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
