// API 1.0 keepalived routes: VRRP upload and actions, LVS (UDP/SCTP) listener
// upload and get. LVS start/stop/reload/delete share the load-balancer routes
// (router.ts), since Octavia addresses both by object id.
import { createHash } from 'node:crypto';
import type express from 'express';
import type { Request, Response } from 'express';
import { readTextIfExists } from '../../system/files.js';
import { lvsInstance, uploadLvs, uploadVrrp } from '../../keepalived/service.js';
import type { V1Service } from '../../loadbalancer/v1-service.js';
import { sendJson, sendMessage } from '../errors.js';
import type { Routes } from '../routes.js';
import { isAction, sendText } from './http.js';
import { sendV1Error } from './errors.js';

export interface KeepalivedDeps {
  basePath(): string;
  service: V1Service;
  /** Why a path parameter is not an id, else null. */
  refusal(name: string, value: string): string | null;
}

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
const bodyOf = (req: Request) => (Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0));

export function registerKeepalivedRoutes(routes: Routes, deps: KeepalivedDeps, raw: express.RequestHandler): void {
  const { service } = deps;

  routes.put('/vrrp/upload', raw, async (req: Request, res: Response) => {
    const body = bodyOf(req);
    try {
      await uploadVrrp(deps.basePath(), service.keepalivedSettings(), body.toString('utf8'), await service.lbSockets(), false);
    } catch (err) {
      return sendV1Error(res, err);
    }
    res.setHeader('ETag', md5(body));
    sendMessage(res, 200, 'OK');
  });

  routes.put('/vrrp/:action', async (req: Request, res: Response) => {
    const action = String(req.params.action).toLowerCase();
    if (!isAction(action)) return sendMessage(res, 400, 'Invalid Request', `Unknown action: ${req.params.action}`);
    try {
      await service.vrrpAction(action);
    } catch (err) {
      return sendV1Error(res, err, `Failed to ${action} octavia-keepalived service`);
    }
    sendJson(res, 202, { message: 'OK', details: `keepalived ${action}ed` });
  });

  routes.put('/listeners/:amphoraId/:listenerId/udp_listener', raw, async (req: Request, res: Response) => {
    const id = String(req.params.listenerId);
    const why = deps.refusal('listenerId', id) ?? deps.refusal('amphoraId', String(req.params.amphoraId));
    if (why !== null) return sendMessage(res, 400, 'Invalid request', why);
    const body = bodyOf(req);
    try {
      await uploadLvs(deps.basePath(), service.keepalivedSettings(), id, body.toString('utf8'));
    } catch (err) {
      return sendV1Error(res, err);
    }
    res.setHeader('ETag', md5(body));
    sendMessage(res, 200, 'OK');
  });

  routes.get('/listeners/:listenerId/udp_listener', async (req: Request, res: Response) => {
    const id = String(req.params.listenerId);
    const why = deps.refusal('listenerId', id);
    if (why !== null) return sendMessage(res, 400, 'Invalid request', why);
    const text = await readTextIfExists(lvsInstance(deps.basePath(), id).config);
    if (text === null) return sendMessage(res, 404, 'UDP Listener Not Found', `No UDP listener with UUID: ${id}`);
    sendText(res, text);
  });
}
