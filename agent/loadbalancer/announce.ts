// What follows a haproxy start, reload or removal on an amphora, whichever API
// caused it (Octavia's agent does the same): in ACTIVE_STANDBY the VRRP check
// script lists every load balancer's stats socket; in SINGLE topology the bind
// addresses are announced (gratuitous ARP / unsolicited NA), in the
// background, so the network learns where the VIP lives now.
import type { ConfigStore } from '../config/store.js';
import type { HaproxyEngine } from '../haproxy/engine.js';
import { readConfig } from '../haproxy/config-reader.js';
import { statsSocket } from '../haproxy/layout.js';
import { lvsListenerIds, updateHaproxyCheckScript } from '../keepalived/service.js';
import type { Logger } from '../log.js';
import { announceAddresses } from '../net/advertise.js';

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
    const binds = readConfig((await deps.engine.acceptedConfig(lbId)) ?? '').frontends.flatMap((f) => f.bindAddresses);
    // Not awaited: arping waits a second for replies, and nobody waits for the
    // announcement (failures are logged by announceAddresses).
    void announceAddresses(c.amphoraAgent.networkNamespace, binds, deps.log);
  }
}
