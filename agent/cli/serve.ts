// `amphora-agent serve [--config-file PATH]`: run the agent. Without a config
// file it uses the built-in development configuration in ./.amphora-dev.
// The parts come from the composition root (agent.ts); this runs them: the
// API held until haproxy is probed, the TLS server, the timers, the signals.
import type { RequestListener } from 'node:http';
import { DEV_VIP_NETWORK, devVipsUnusable, ensureDevSetup, ensureDevVips, type DevSetup } from '../config/dev-default.js';
import type { AgentConfig } from '../config/agent-config.js';
import { ConfigStore } from '../config/store.js';
import { HeartbeatSender } from '../health/sender.js';
import { buildAgent } from '../agent.js';
import { restartDead } from '../haproxy/process/watchdog.js';
import { repeatAfter } from '../repeat.js';
import { createMtlsServer } from '../api/tls-server.js';
import { rootLogger } from '../log.js';
import { run } from '../system/exec.js';
import { ensureDir } from '../system/files.js';
import { networkSettings, writeInterfaceFile } from '../net/interfaces.js';
import { loopbackInterfaceFile } from '../net/interface-file.js';

const DEV_DIR = '.amphora-dev';

/** What the API answers before haproxy is probed: discovery and info, which need no haproxy state. */
const EARLY_PATHS = new Set(['/', '//', '/1.0/info']);

/** haproxy must be runnable; in development, as root, install it with apt when missing. */
async function ensureHaproxy(config: AgentConfig, dev: boolean): Promise<void> {
  const cmd = config.haproxyAmphora.haproxyCmd;
  if ((await run([cmd, '-v'])).exitCode === 0) return;
  const root = process.getuid?.() === 0;
  if (dev && root) {
    rootLogger.info('haproxy not found; installing it with apt-get');
    const res = await run(['sh', '-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy'], { timeoutMs: 600_000 });
    if (res.exitCode === 0 && (await run([cmd, '-v'])).exitCode === 0) return;
    throw new Error(`installing haproxy failed:\n${res.output.slice(-2000)}`);
  }
  throw new Error(`haproxy (${cmd}) cannot run. Install it with: sudo apt-get install haproxy`);
}

export async function serve(args: string[]): Promise<void> {
  const i = args.indexOf('--config-file');
  const configArg = i >= 0 ? args[i + 1] : undefined;
  if (i >= 0 && !configArg) throw new Error('--config-file needs a path');
  let dev: DevSetup | null = null;
  let configFile: string;
  if (configArg) {
    configFile = configArg;
  } else {
    dev = await ensureDevSetup(DEV_DIR);
    configFile = dev.configFile;
  }
  const store = await ConfigStore.load(configFile);
  const config = store.current;
  const log = rootLogger;
  if (config.debug) log.level = 'debug';
  const vipsNotLocal = dev ? devVipsUnusable() : null;
  if (vipsNotLocal)
    log.warn(`development VIPs (${DEV_VIP_NETWORK}) cannot be made local on loopback (${vipsNotLocal}): haproxy cannot bind them; run the agent as root`);
  await ensureDir(config.haproxyAmphora.basePath, 0o755);
  // As Octavia's agent: lo.json, so `interface up all` at boot configures loopback too.
  await writeInterfaceFile(networkSettings(config), loopbackInterfaceFile());

  let reloadServerCertificate: () => Promise<void> = async () => {};
  const { engine, metrics, loadBalancers, app } = await buildAgent(store, log, {
    ...(dev ? { beforeBind: ensureDevVips } : {}),
    reloadServerCertificate: () => reloadServerCertificate(),
  });
  // The heartbeat runs in this process: building it takes milliseconds and
  // happens once per heartbeat_interval, so it does not hold up the API.
  const heartbeat = new HeartbeatSender({
    config: store,
    log: log.child({ module: 'heartbeat' }),
    loadBalancerIds: () => engine.loadBalancerIds(),
    stats: (lbId) => engine.stats(lbId),
  });
  // A new amphora has no load balancer, so nothing its heartbeat says waits
  // for haproxy's probe or the recovery below: it beats at once, as Octavia's
  // agent does before its API answers (the first heartbeat is a boot's
  // figure: docs/image.md). With load balancers it waits, so it never
  // reports one whose interrupted apply is still being finished.
  const heartbeatEarly = (await engine.loadBalancerIds()).length === 0;
  if (heartbeatEarly) heartbeat.start();
  // haproxy's probe (five short haproxy runs) and the recovery of interrupted
  // applies run while the API starts: it answers GET / and /1.0/info at once
  // (what a controller polls for while an amphora boots), and holds every
  // other request until both are done. A failure ends the agent as before.
  const ready = (async () => {
    await ensureHaproxy(config, dev !== null);
    const caps = await engine.capabilities();
    log.info({ haproxy: caps.version, initStateAtStartup: caps.initStateAtStartup }, 'haproxy probed');
    const recovered = await engine.recover();
    if (recovered.length > 0) log.warn({ recovered }, 'finished interrupted applies');
    const caughtUp = await loadBalancers.catchUp();
    if (caughtUp.length > 0) log.warn({ caughtUp }, 'configs of member changes written again from the spec');
  })();
  let isReady = false;
  ready.then(
    () => {
      isReady = true;
    },
    () => {},
  );
  const handler: RequestListener = (req, res) => {
    if (isReady || (req.method === 'GET' && EARLY_PATHS.has(req.url ?? ''))) return void app(req, res);
    ready.then(
      () => app(req, res),
      () => res.destroy(),
    );
  };
  const { server, reloadCertificate } = await createMtlsServer(
    {
      serverPem: config.amphoraAgent.agentServerCert,
      clientCa: config.amphoraAgent.agentServerCa,
      minVersion: config.amphoraAgent.agentTlsProtocol,
    },
    handler,
  );
  reloadServerCertificate = reloadCertificate;
  server.requestTimeout = config.amphoraAgent.agentRequestReadTimeout * 1000;
  const host = config.haproxyAmphora.bindHost;
  const port = config.haproxyAmphora.bindPort;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port, ipv6Only: false }, () => resolve());
  });
  await ready;
  if (engine.processManager === 'direct') {
    // systemd restarts a dead haproxy (Restart=always); without it, the agent does.
    // A haproxy that cannot be started again gives up the VIP at once (ACTIVE_STANDBY; the engine tells announce.ts).
    // Dead haproxies: the first restart at once, then with growing delays (docs/operations.md, "Supervision").
    repeatAfter(2000, () => restartDead(engine, log, (lbId, outcome) => metrics.haproxyRestart(lbId, outcome)));
  }
  // Members added at runtime on a haproxy without a working init-state wait in
  // maintenance until a check passes; this makes them ready soon after.
  repeatAfter(200, () => engine.members.promotePending());
  // Members an API 1.0 reload removed keep their sessions in maintenance; this
  // deletes them once haproxy lets it (no session or pooled connection left).
  repeatAfter(1000, () => engine.members.sweepRetired());
  if (!heartbeatEarly) heartbeat.start();
  const shown = host.includes(':') ? `[${host}]` : host;
  // Once every request is served: the line tests and operators wait for.
  log.info({ address: `${shown}:${port}` }, 'amphora agent API listening (mutual TLS)');
  if (dev) {
    process.stdout.write(
      `\nAmphora agent (development configuration ${dev.configFile}) on https://${shown}:${port}\n` +
        `Try:\n  curl --cacert ${dev.caFile} --cert ${dev.clientCert} --key ${dev.clientKey} https://${shown}:${port}/1.0/info\n` +
        (vipsNotLocal
          ? `Load balancers: VIPs in ${DEV_VIP_NETWORK} cannot bind (${vipsNotLocal}); start the agent with sudo.\n\n`
          : `Load balancers: VIPs in ${DEV_VIP_NETWORK} are made local on loopback when haproxy binds them; members may listen on 127.0.0.1 (see examples/).\n\n`),
    );
  }
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    // haproxy keeps running: it is supervised per load balancer, not tied to
    // the API process. Keep-alive connections (the controller's session) are
    // closed rather than waited for; configs member calls hold are written.
    process.on(sig, () => {
      const written = engine.writeHeldConfigs().catch((err: Error) => log.error({ err: err.message }, 'cannot write held configs'));
      server.close(() => void written.then(() => process.exit(0)));
      server.closeAllConnections();
      setTimeout(() => process.exit(0), 2000).unref();
    });
  }
}
