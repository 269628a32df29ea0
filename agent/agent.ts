// The composition root: the one place that turns the config into the
// running agent's parts and wires them together: the engine (its process
// manager chosen in haproxy/from-config.ts) with its one subscriber
// (loadbalancer/announce.ts), the metrics, API 2.0's service and the express
// app on them. cli/serve.ts runs what it builds (readiness, the TLS server,
// timers, signals).
import type express from 'express';
import { createApp } from './api/app.js';
import type { ConfigStore } from './config/store.js';
import type { HaproxyEngine } from './haproxy/apply/engine.js';
import { buildEngine } from './haproxy/from-config.js';
import { readAmphoraFacts } from './info/amphora-facts.js';
import { packageVersions } from './info/package-versions.js';
import { followHaproxyChange } from './loadbalancer/announce.js';
import { ApplyMetrics } from './loadbalancer/metrics.js';
import { V2Service } from './loadbalancer/v2-service.js';
import type { Logger } from './log.js';

/** The running agent's parts. */
export interface Agent {
  engine: HaproxyEngine;
  metrics: ApplyMetrics;
  loadBalancers: V2Service;
  app: express.Express;
}

export interface AgentHooks {
  /** Called with a config's bind addresses before haproxy loads it (the development default makes them local). */
  beforeBind?: (addresses: string[]) => Promise<void>;
  /** Re-read the server certificate after PUT /1.0/certificate (the TLS server is built around the app). */
  reloadServerCertificate: () => Promise<void>;
}

export async function buildAgent(store: ConfigStore, log: Logger, hooks: AgentHooks): Promise<Agent> {
  const config = store.current;
  const engine: HaproxyEngine = await buildEngine(config, log, {
    ...(hooks.beforeBind ? { beforeBind: hooks.beforeBind } : {}),
    onChange: (change) => followHaproxyChange({ engine, config: store, log }, change),
  });
  const metrics = new ApplyMetrics(() => engine.supervisionOfAll());
  const loadBalancers = new V2Service({
    engine,
    config: store,
    metrics,
    log: log.child({ module: 'loadbalancers' }),
    ...(config.haproxyAmphora.tuneFromAmphoraDetails ? { amphora: await readAmphoraFacts() } : {}),
  });
  // Package versions do not change while the agent runs; ask dpkg once.
  const versions = packageVersions(['haproxy', 'keepalived', 'ipvsadm']).then(async ({ haproxy, keepalived, ipvsadm }) => ({
    // Outside a Debian package (a custom haproxy_cmd) report the binary's own version.
    haproxy: haproxy || (await engine.capabilities()).version,
    keepalived,
    ipvsadm,
  }));
  // A failed probe ends the agent (cli/serve.ts); /1.0/info would get it as a 500.
  versions.catch(() => {});
  const app = createApp({
    log: log.child({ module: 'api' }),
    engine,
    config: store,
    metrics,
    loadBalancers,
    packageVersions: () => versions,
    reloadServerCertificate: hooks.reloadServerCertificate,
  });
  return { engine, metrics, loadBalancers, app };
}
