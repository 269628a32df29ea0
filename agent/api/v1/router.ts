// API 1.0, as Octavia's controller calls it. Handlers are thin: check the path
// parameters, call one domain function, map its result or typed error to the
// status code and body Octavia's agent would send.
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { createSecureContext } from 'node:tls';
import { join } from 'node:path';
import express, { type Request, type Response, type Router } from 'express';
import type { HaproxyEngine } from '../../haproxy/engine.js';
import { readConfig } from '../../haproxy/config-reader.js';
import { statsSocket } from '../../haproxy/layout.js';
import { HaproxyFailedError, InvalidConfigError, LoadBalancerNotFoundError } from '../../haproxy/errors.js';
import { ConfigError } from '../../config/agent-config.js';
import type { ConfigStore } from '../../config/store.js';
import { collectDetails } from '../../info/details.js';
import { ensureDir, readTextIfExists, removeFile, removeTree, writeFileAtomic } from '../../system/files.js';
import type { Logger } from '../../log.js';
import { sendFrameworkError, sendJson, sendMessage } from '../errors.js';
import { isObjectId, isPemFilename } from '../params.js';
import { registerNetworkRoutes } from './network.js';
import { lvsAction, lvsDelete, registerKeepalivedRoutes, type KeepalivedDeps } from './keepalived.js';
import { KeepalivedFailedError, keepalivedPid, keepalivedSettings } from '../../keepalived/process.js';
import { lvsInstance, lvsListenerIds, lvsStatus } from '../../keepalived/service.js';
import { networkSettings } from '../../net/interfaces.js';
import { afterHaproxyChange as announce, afterLvsStart } from '../../loadbalancer/announce.js';
import { secondsSince, type ApplyMetrics } from '../../loadbalancer/metrics.js';

export interface V1Deps {
  engine: HaproxyEngine;
  metrics: ApplyMetrics;
  config: ConfigStore;
  log: Logger;
  packageVersions(): Promise<{ haproxy: string; keepalived: string; ipvsadm: string }>;
  /** Re-read the server certificate after PUT /1.0/certificate. */
  reloadServerCertificate(): Promise<void>;
}

/** Request bodies larger than this get 413; a haproxy config for thousands of members is a few MB. */
export const BODY_LIMIT = '32mb';

const md5 = (data: string | Buffer) => createHash('md5').update(data).digest('hex');

/** Octavia's agent strips `group` directives: the group comes from the user/group file. */
function withoutGroupLines(config: string): string {
  return config.replace(/\s+group\s.+/g, '');
}

function sendText(res: Response, text: string, etag?: string): void {
  const body = Buffer.from(text);
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/plain; charset=UTF-8');
  if (etag) res.setHeader('ETag', etag);
  res.setHeader('Content-Length', body.length);
  res.end(body);
}

function lbNotFound(res: Response, lbId: string): void {
  sendMessage(res, 404, 'Loadbalancer Not Found', `No loadbalancer with UUID: ${lbId}`);
}

export function createV1Router(deps: V1Deps): Router {
  const r = express.Router({ strict: true });
  const raw = express.raw({ type: () => true, limit: BODY_LIMIT });
  const { engine } = deps;
  const certDir = (lbId: string) => join(deps.config.current.haproxyAmphora.baseCertDir, lbId);

  /** Reject path parameters that are not plain ids, before any handler sees them. */
  const ids = (...names: string[]) => (req: Request, res: Response, next: () => void) => {
    for (const n of names) {
      const v = req.params[n] as string | undefined;
      if (v === undefined || !isObjectId(v)) return sendMessage(res, 400, 'Invalid request', `Invalid ${n}: ${JSON.stringify(v)}`);
    }
    next();
  };

  r.get('/info', async (_req, res) => {
    const v = await deps.packageVersions();
    sendJson(res, 200, {
      hostname: hostname(),
      haproxy_version: v.haproxy,
      api_version: '1.0',
      keepalived_version: v.keepalived,
      ipvsadm_version: v.ipvsadm,
    });
  });

  r.get('/details', async (_req, res) => {
    const v = await deps.packageVersions();
    const lbs = await engine.loadBalancerIds();
    let running = 0;
    const frontends = new Set<string>();
    for (const lb of lbs) {
      if ((await engine.status(lb)).running) running++;
      for (const f of readConfig((await engine.acceptedConfig(lb)) ?? '').frontends) frontends.add(f.name);
    }
    const base = keepalived.basePath();
    const lvsIds = await lvsListenerIds(base);
    let lvsRunning = 0;
    for (const id of lvsIds) if (await keepalivedPid(lvsInstance(base, id))) lvsRunning++;
    sendJson(res, 200, await collectDetails({
      haproxyVersion: v.haproxy, keepalivedVersion: v.keepalived, ipvsadmVersion: v.ipvsadm,
      netns: deps.config.current.amphoraAgent.networkNamespace || null,
      haproxyCount: running, listeners: [...new Set([...frontends, ...lvsIds])].sort(), lvsListenerProcessCount: lvsRunning,
    }));
  });

  r.get('/listeners', async (_req, res) => {
    const out: { status: string; uuid: string; type: string }[] = [];
    for (const lb of await engine.loadBalancerIds()) {
      for (const f of readConfig((await engine.acceptedConfig(lb)) ?? '').frontends) {
        out.push({ status: 'ACTIVE', uuid: f.name, type: f.terminatesTls ? 'TERMINATED_HTTPS' : f.mode.toUpperCase() });
      }
    }
    const base = keepalived.basePath();
    for (const id of await lvsListenerIds(base)) {
      const text = (await readTextIfExists(lvsInstance(base, id).config)) ?? '';
      // Octavia reports every LVS listener as UDP, SCTP included.
      out.push({ status: await lvsStatus(base, id, text), uuid: id, type: 'UDP' });
    }
    sendJson(res, 200, out);
  });

  r.put('/loadbalancer/:amphoraId/:lbId/haproxy', ids('amphoraId', 'lbId'), raw, async (req, res) => {
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const lbId = req.params.lbId as string;
    try {
      await engine.upload(lbId, req.params.amphoraId as string, withoutGroupLines(body.toString('utf8')));
    } catch (err) {
      if (err instanceof InvalidConfigError) return sendMessage(res, 400, 'Invalid request', err.output);
      throw err;
    }
    res.setHeader('ETag', md5(body));
    sendJson(res, 202, { message: 'OK' });
  });

  r.get('/loadbalancer/:lbId/haproxy', ids('lbId'), async (req, res) => {
    const lbId = req.params.lbId as string;
    const text = await engine.acceptedConfig(lbId);
    if (text === null) return lbNotFound(res, lbId);
    sendText(res, text, md5(text));
  });

  r.put('/loadbalancer/:objectId/:action', async (req, res) => {
    const action = String(req.params.action).toLowerCase();
    if (!['start', 'stop', 'reload'].includes(action)) {
      return sendMessage(res, 400, 'Invalid Request', `Unknown action: ${req.params.action}`);
    }
    const lbId = req.params.objectId as string;
    if (!isObjectId(lbId)) return lbNotFound(res, lbId);
    if (!(await engine.exists(lbId))) {
      if (await lvsAction(keepalived, res, lbId, action)) return;
      return lbNotFound(res, lbId);
    }
    try {
      if (action === 'stop') {
        await engine.stop(lbId);
        await afterHaproxyChange(lbId, false);
        return sendJson(res, 202, { message: 'OK', details: `Listener ${lbId} stoped` });
      }
      // reload: runtime API for member-only changes, a reload otherwise;
      // start: a load only when haproxy does not run.
      const started = process.hrtime.bigint();
      const applying = action === 'reload'
        ? engine.reloadAccepted(lbId).then((r) => r.result)
        : engine.start(lbId).then((r) => r?.action ?? 'unchanged');
      const outcome = await applying.catch((err: unknown) => {
        if (err instanceof HaproxyFailedError) deps.metrics.record('1.0', 'failed', secondsSince(started));
        throw err;
      });
      deps.metrics.record('1.0', outcome, secondsSince(started));
      // A runtime change moved no address: nothing to announce.
      if (outcome !== 'runtime') await afterHaproxyChange(lbId, true);
      if (action === 'reload' && outcome !== 'started') return sendJson(res, 202, { message: 'OK', details: `Listener ${lbId} reloaded` });
      sendJson(res, 202, { message: 'OK', details: `Configuration file is valid\nhaproxy daemon for ${lbId} started` });
    } catch (err) {
      if (err instanceof HaproxyFailedError) return sendMessage(res, 500, `Error ${action}ing haproxy`, err.output);
      if (err instanceof LoadBalancerNotFoundError) return lbNotFound(res, lbId);
      throw err;
    }
  });

  r.delete('/listeners/:objectId', async (req, res) => {
    const lbId = req.params.objectId as string;
    if (!isObjectId(lbId)) return sendMessage(res, 200, 'OK');
    if (!(await engine.exists(lbId))) {
      try {
        await lvsDelete(keepalived, lbId);
      } catch (err) {
        if (err instanceof KeepalivedFailedError) return sendMessage(res, 500, 'Error stopping keepalivedlvs', err.output);
        throw err;
      }
      return sendMessage(res, 200, 'OK');
    }
    try {
      await engine.delete(lbId);
    } catch (err) {
      if (err instanceof HaproxyFailedError) return sendMessage(res, 500, 'Error stopping haproxy', err.output);
      throw err;
    }
    await removeTree(certDir(lbId));
    await afterHaproxyChange(lbId, false);
    sendMessage(res, 200, 'OK');
  });

  const certParams = (req: Request, res: Response, next: () => void) => {
    if (!isObjectId(String(req.params.lbId))) return sendMessage(res, 400, 'Invalid request', 'Invalid lbId');
    if (!isPemFilename(String(req.params.filename))) return sendMessage(res, 400, 'Filename has wrong format');
    next();
  };

  r.put('/loadbalancer/:lbId/certificates/:filename', certParams, raw, async (req, res) => {
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const dir = certDir(req.params.lbId as string);
    await ensureDir(dir, 0o700);
    await writeFileAtomic(join(dir, req.params.filename as string), body, 0o600);
    res.setHeader('ETag', md5(body));
    sendMessage(res, 200, 'OK');
  });

  r.get('/loadbalancer/:lbId/certificates/:filename', certParams, async (req, res) => {
    const filename = req.params.filename as string;
    const pem = await readTextIfExists(join(certDir(req.params.lbId as string), filename));
    if (pem === null) return sendMessage(res, 404, 'Certificate Not Found', `No certificate with filename: ${filename}`);
    const sum = md5(pem);
    res.setHeader('ETag', sum);
    sendJson(res, 200, { md5sum: sum });
  });

  r.delete('/loadbalancer/:lbId/certificates/:filename', certParams, async (req, res) => {
    await removeFile(join(certDir(req.params.lbId as string), req.params.filename as string));
    sendMessage(res, 200, 'OK');
  });

  r.put('/config', raw, async (req, res) => {
    const body = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
    try {
      await deps.config.replace(body);
    } catch (err) {
      if (err instanceof ConfigError) return sendMessage(res, 400, 'Invalid agent configuration', err.message);
      return sendMessage(res, 500, 'Unable to update amphora-agent configuration.', String(err));
    }
    sendMessage(res, 202, 'OK');
  });

  r.put('/certificate', raw, async (req, res) => {
    const pem = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
    try {
      // Refuse what would break the API for every later connection: the body
      // must hold a certificate and the private key that matches it.
      if (!/-----BEGIN CERTIFICATE-----/.test(pem) || !/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) {
        throw new Error('no certificate or no private key found');
      }
      createSecureContext({ cert: pem, key: pem });
    } catch (err) {
      return sendMessage(res, 400, 'Invalid certificate', `expected a PEM certificate followed by its private key: ${(err as Error).message}`);
    }
    await writeFileAtomic(deps.config.current.amphoraAgent.agentServerCert, pem, 0o600);
    await deps.reloadServerCertificate();
    sendMessage(res, 202, 'OK');
  });

  const keepalived: KeepalivedDeps = {
    basePath: () => deps.config.current.haproxyAmphora.basePath,
    settings: () => keepalivedSettings(deps.config.current, engine.processManager),
    lbSockets: async () => (await engine.loadBalancerIds()).map((lb) => statsSocket(deps.config.current.haproxyAmphora.basePath, lb)),
    afterLvsStart: (listenerId) => afterLvsStart(deps, listenerId),
  };
  registerKeepalivedRoutes(r, keepalived, raw);

  /**
   * What Octavia's agent does around haproxy starts, reloads and stops: in
   * ACTIVE_STANDBY the VRRP check script lists the stats sockets of the load
   * balancers that run; in SINGLE topology the listening addresses are
   * announced after a (re)start.
   */
  const afterHaproxyChange = (lbId: string, running: boolean) => announce(deps, lbId, running);

  registerNetworkRoutes(r, () => {
    const c = deps.config.current;
    return { ...networkSettings(c), topology: c.controllerWorker.loadbalancerTopology };
  }, deps.log);

  // A known path with another method is 405, as Flask answers.
  r.all(['/plug/vip/:vip', '/plug/network', '/interface/:ip', '/interface/:ip/rules', '/vrrp/upload', '/vrrp/:action',
    '/listeners/:amphoraId/:listenerId/udp_listener', '/listeners/:listenerId/udp_listener',
    '/info', '/details', '/listeners', '/config', '/certificate', '/listeners/:objectId',
    '/loadbalancer/:amphoraId/:lbId/haproxy', '/loadbalancer/:objectId/:action',
    '/loadbalancer/:lbId/certificates/:filename',
  ], (_req, res) => sendFrameworkError(res, 405));
  return r;
}
