// API 1.0, as Octavia's controller calls it. Handlers are thin: check the path
// parameters, call one domain function (loadbalancer/v1-service.ts,
// inventory.ts, certificates.ts), and turn its result or typed error into
// the status code and body Octavia's agent would send (errors.ts).
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { createSecureContext } from 'node:tls';
import express, { type Request, type Response, type Router } from 'express';
import type { HaproxyEngine } from '../../haproxy/apply/engine.js';
import { LoadBalancerNotFoundError } from '../../haproxy/errors.js';
import type { ConfigStore } from '../../config/store.js';
import { collectDetails } from '../../info/details.js';
import { writeFileAtomic } from '../../system/files.js';
import type { Logger } from '../../log.js';
import { networkSettings } from '../../net/interfaces.js';
import { InvalidCertificateFileError, readCertificate, removeCertificate, storeCertificate } from '../../loadbalancer/certificates.js';
import { listenerInventory, processCounts } from '../../loadbalancer/inventory.js';
import type { ApplyMetrics } from '../../loadbalancer/metrics.js';
import { lvsActionOf, V1Service } from '../../loadbalancer/v1-service.js';
import { sendFrameworkError, sendJson, sendMessage } from '../errors.js';
import { isPemFilename } from '../params.js';
import { idRefusal } from '../reserved-ids.js';
import { BODY_LIMIT } from '../body-limits.js';
import { Routes } from '../routes.js';
import { InvalidCertificateError, InvalidRequestError, sendV1Error } from './errors.js';
import { isAction, sendText } from './http.js';
import { registerKeepalivedRoutes } from './keepalived.js';
import { registerNetworkRoutes } from './network.js';

export interface V1Deps {
  engine: HaproxyEngine;
  metrics: ApplyMetrics;
  config: ConfigStore;
  log: Logger;
  packageVersions(): Promise<{ haproxy: string; keepalived: string; ipvsadm: string }>;
  /** Re-read the server certificate after PUT /1.0/certificate. */
  reloadServerCertificate(): Promise<void>;
}

const md5 = (data: string | Buffer) => createHash('md5').update(data).digest('hex');
const bodyOf = (req: Request) => (Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0));

/**
 * PUT /1.0/certificate must not store what would break the API for every
 * later connection: the body must hold a certificate and the private key
 * that matches it.
 */
function checkServerCertificate(pem: string): void {
  try {
    if (!/-----BEGIN CERTIFICATE-----/.test(pem) || !/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) {
      throw new Error('no certificate or no private key found');
    }
    createSecureContext({ cert: pem, key: pem });
  } catch (err) {
    throw new InvalidCertificateError((err as Error).message);
  }
}

export function createV1Router(deps: V1Deps): Router {
  const r = express.Router({ strict: true });
  // A known path with another method is 405, as Flask answers.
  const routes = new Routes(r, (_req, res) => sendFrameworkError(res, 405));
  const raw = express.raw({ type: () => true, limit: BODY_LIMIT });
  const service = new V1Service(deps);
  const config = () => deps.config.current;
  const basePath = () => config().haproxyAmphora.basePath;

  /** Why a path parameter is not an id (reserved-ids.ts), else null: checked before any handler sees it. */
  const refusal = (name: string, value: string) => {
    const why = idRefusal(config(), value);
    return why === null ? null : `Invalid ${name} ${JSON.stringify(value)}: ${why}`;
  };
  const ids =
    (...names: string[]) =>
    (req: Request, res: Response, next: () => void) => {
      for (const n of names) {
        const why = refusal(n, String(req.params[n]));
        if (why !== null) return sendMessage(res, 400, 'Invalid request', why);
      }
      next();
    };

  routes.get('/info', async (_req, res) => {
    const v = await deps.packageVersions();
    sendJson(res, 200, {
      hostname: hostname(),
      haproxy_version: v.haproxy,
      api_version: '1.0',
      keepalived_version: v.keepalived,
      ipvsadm_version: v.ipvsadm,
    });
  });

  routes.get('/details', async (_req, res) => {
    const v = await deps.packageVersions();
    sendJson(
      res,
      200,
      await collectDetails({
        haproxyVersion: v.haproxy,
        keepalivedVersion: v.keepalived,
        ipvsadmVersion: v.ipvsadm,
        netns: config().amphoraAgent.networkNamespace,
        ...(await processCounts(deps.engine, basePath())),
      }),
    );
  });

  routes.get('/listeners', async (_req, res) => sendJson(res, 200, await listenerInventory(deps.engine, basePath())));

  routes.put('/loadbalancer/:amphoraId/:lbId/haproxy', ids('amphoraId', 'lbId'), raw, async (req, res) => {
    const body = bodyOf(req);
    try {
      await service.upload(req.params.lbId as string, req.params.amphoraId as string, body.toString('utf8'));
    } catch (err) {
      return sendV1Error(res, err);
    }
    res.setHeader('ETag', md5(body));
    sendJson(res, 202, { message: 'OK' });
  });

  routes.get('/loadbalancer/:lbId/haproxy', ids('lbId'), async (req, res) => {
    const lbId = req.params.lbId as string;
    const text = await deps.engine.acceptedConfig(lbId);
    if (text === null) return sendV1Error(res, new LoadBalancerNotFoundError(lbId));
    sendText(res, text, md5(text));
  });

  routes.put('/loadbalancer/:objectId/:action', ids('objectId'), async (req, res) => {
    const action = String(req.params.action).toLowerCase();
    if (!isAction(action)) return sendV1Error(res, new InvalidRequestError('Invalid Request', `Unknown action: ${req.params.action}`));
    const id = req.params.objectId as string;
    const object = await service.objectOf(id);
    if (object === null) return sendV1Error(res, new LoadBalancerNotFoundError(id));
    if (object === 'lvs') {
      const lvsAction = lvsActionOf(action);
      try {
        await service.lvsAction(id, lvsAction);
      } catch (err) {
        return sendV1Error(res, err, `Failed to ${lvsAction} keepalivedlvs listener ${id}`);
      }
      return sendJson(res, 202, { message: 'OK', details: `keepalivedlvs listener ${id} ${lvsAction}ed` });
    }
    try {
      if (action === 'stop') {
        await service.stopHaproxy(id);
        return sendJson(res, 202, { message: 'OK', details: `Listener ${id} stoped` });
      }
      const outcome = await service.applyHaproxy(id, action);
      if (action === 'reload' && outcome !== 'started') return sendJson(res, 202, { message: 'OK', details: `Listener ${id} reloaded` });
      sendJson(res, 202, { message: 'OK', details: `Configuration file is valid\nhaproxy daemon for ${id} started` });
    } catch (err) {
      sendV1Error(res, err, `Error ${action}ing haproxy`);
    }
  });

  routes.delete('/listeners/:objectId', ids('objectId'), async (req, res) => {
    const id = req.params.objectId as string;
    const object = await service.objectOf(id);
    try {
      if (object === 'haproxy') await service.removeHaproxy(id);
      else if (object === 'lvs') await service.removeLvs(id);
    } catch (err) {
      return sendV1Error(res, err, object === 'haproxy' ? 'Error stopping haproxy' : 'Error stopping keepalivedlvs');
    }
    sendMessage(res, 200, 'OK');
  });

  const certParams = (req: Request, res: Response, next: () => void) => {
    const why = refusal('lbId', String(req.params.lbId));
    if (why !== null) return sendMessage(res, 400, 'Invalid request', why);
    if (!isPemFilename(String(req.params.filename))) return sendMessage(res, 400, 'Filename has wrong format');
    next();
  };
  const certificatePath = '/loadbalancer/:lbId/certificates/:filename';

  routes.put(certificatePath, certParams, raw, async (req, res) => {
    const body = bodyOf(req);
    try {
      await storeCertificate(config(), req.params.lbId as string, req.params.filename as string, body, { crtList: true });
    } catch (err) {
      if (err instanceof InvalidCertificateFileError) return sendMessage(res, 400, 'Invalid certificate file', err.message);
      return sendV1Error(res, err);
    }
    res.setHeader('ETag', md5(body));
    sendMessage(res, 200, 'OK');
  });

  routes.get(certificatePath, certParams, async (req, res) => {
    const filename = req.params.filename as string;
    const pem = await readCertificate(config(), req.params.lbId as string, filename);
    if (pem === null) return sendMessage(res, 404, 'Certificate Not Found', `No certificate with filename: ${filename}`);
    const sum = md5(pem);
    res.setHeader('ETag', sum);
    sendJson(res, 200, { md5sum: sum });
  });

  routes.delete(certificatePath, certParams, async (req, res) => {
    await removeCertificate(config(), req.params.lbId as string, req.params.filename as string);
    sendMessage(res, 200, 'OK');
  });

  routes.put('/config', raw, async (req, res) => {
    let kept: string[];
    try {
      kept = await deps.config.replace(bodyOf(req).toString('utf8'));
    } catch (err) {
      return sendV1Error(res, err);
    }
    // Octavia's controller only looks at the status: the rest of its file is
    // taken, so it keeps working; the answer says what was not.
    if (kept.length === 0) return sendMessage(res, 202, 'OK');
    sendJson(res, 202, { message: 'OK', details: `The amphora kept its own values of ${kept.join(', ')}`, kept });
  });

  routes.put('/certificate', raw, async (req, res) => {
    const pem = bodyOf(req).toString('utf8');
    try {
      checkServerCertificate(pem);
    } catch (err) {
      return sendV1Error(res, err);
    }
    await writeFileAtomic(config().amphoraAgent.agentServerCert, pem, 0o600);
    await deps.reloadServerCertificate();
    sendMessage(res, 202, 'OK');
  });

  registerKeepalivedRoutes(routes, { basePath, service, refusal }, raw);
  registerNetworkRoutes(routes, () => ({ ...networkSettings(config()), topology: config().controllerWorker.loadbalancerTopology }), deps.log);
  return r;
}
