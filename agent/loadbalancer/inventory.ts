// What runs on this amphora, as API 1.0's GET /listeners and GET /details
// report it: the haproxy frontends of every load balancer (from the config
// haproxy accepted) and the LVS (UDP/SCTP) listeners of keepalived.
import type { HaproxyEngine } from '../haproxy/apply/engine.js';
import { readConfig } from '../haproxy/config/config-reader.js';
import { keepalivedPid } from '../keepalived/process.js';
import { lvsInstance, lvsListenerIds, lvsStatus } from '../keepalived/service.js';
import { readTextIfExists } from '../system/files.js';

export interface ListenerEntry {
  status: string;
  uuid: string;
  type: string;
}

export async function listenerInventory(engine: HaproxyEngine, basePath: string): Promise<ListenerEntry[]> {
  const out: ListenerEntry[] = [];
  for (const lb of await engine.loadBalancerIds()) {
    for (const f of readConfig((await engine.acceptedConfig(lb)) ?? '').frontends) {
      out.push({ status: 'ACTIVE', uuid: f.name, type: f.terminatesTls ? 'TERMINATED_HTTPS' : f.mode.toUpperCase() });
    }
  }
  for (const id of await lvsListenerIds(basePath)) {
    const text = (await readTextIfExists(lvsInstance(basePath, id).config)) ?? '';
    // Octavia reports every LVS listener as UDP, SCTP included.
    out.push({ status: await lvsStatus(basePath, id, text), uuid: id, type: 'UDP' });
  }
  return out;
}

export interface ProcessCounts {
  /** Load balancers whose haproxy runs. */
  haproxyCount: number;
  /** Listener ids, haproxy frontends and LVS listeners, sorted. */
  listeners: string[];
  /** LVS listeners whose keepalived runs. */
  lvsListenerProcessCount: number;
}

export async function processCounts(engine: HaproxyEngine, basePath: string): Promise<ProcessCounts> {
  let running = 0;
  const frontends = new Set<string>();
  for (const lb of await engine.loadBalancerIds()) {
    if ((await engine.status(lb)).running) running++;
    for (const f of readConfig((await engine.acceptedConfig(lb)) ?? '').frontends) frontends.add(f.name);
  }
  const lvsIds = await lvsListenerIds(basePath);
  let lvsRunning = 0;
  for (const id of lvsIds) if (await keepalivedPid(lvsInstance(basePath, id))) lvsRunning++;
  return { haproxyCount: running, listeners: [...new Set([...frontends, ...lvsIds])].sort(), lvsListenerProcessCount: lvsRunning };
}
