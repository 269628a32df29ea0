// API 1.0 keepalived routes: VRRP upload and actions, LVS (UDP/SCTP) listener
// upload and get. LVS start/stop/reload/delete share the load-balancer routes
// and dispatch here through lvsAction/lvsDelete.
import { createHash } from 'node:crypto';
import express, { type Request, type Response, type Router } from 'express';
import { readTextIfExists } from '../../system/files.js';
import {
  KeepalivedFailedError, keepalivedPid, reloadKeepalived, startKeepalived, stopKeepalived, type KeepalivedSettings,
} from '../../keepalived/process.js';
import {
  lvsExists, lvsInstance, removeLvs, uploadLvs, uploadVrrp, vrrpInstance,
} from '../../keepalived/service.js';
import { sendJson, sendMessage } from '../errors.js';
import { isObjectId } from '../params.js';

export interface KeepalivedDeps {
  basePath(): string;
  settings(): KeepalivedSettings;
  /** Stats sockets of the load balancers (for the VRRP check script). */
  lbSockets(): Promise<string[]>;
  /** What follows a successful LVS start or restart (IPVS settings, address announcements). */
  afterLvsStart(listenerId: string): Promise<void>;
}

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
const bodyOf = (req: Request) => (Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0));

export function registerKeepalivedRoutes(r: Router, deps: KeepalivedDeps, raw: express.RequestHandler): void {
  r.put('/vrrp/upload', raw, async (req: Request, res: Response) => {
    const body = bodyOf(req);
    await uploadVrrp(deps.basePath(), deps.settings(), body.toString('utf8'), await deps.lbSockets(), false);
    res.setHeader('ETag', md5(body));
    sendMessage(res, 200, 'OK');
  });

  r.put('/vrrp/:action', async (req: Request, res: Response) => {
    const action = String(req.params.action).toLowerCase();
    if (!['start', 'stop', 'reload'].includes(action)) {
      return sendMessage(res, 400, 'Invalid Request', `Unknown action: ${req.params.action}`);
    }
    const inst = vrrpInstance(deps.basePath());
    const s = deps.settings();
    try {
      if (action === 'stop') await stopKeepalived(inst, s);
      // start on a running keepalived is a reload, as Octavia's agent does.
      else if (action === 'reload' || (await keepalivedPid(inst))) await reloadKeepalived(inst, s);
      else await startKeepalived(inst, s);
    } catch (err) {
      if (err instanceof KeepalivedFailedError) return sendMessage(res, 500, `Failed to ${action} octavia-keepalived service`, err.output);
      throw err;
    }
    sendJson(res, 202, { message: 'OK', details: `keepalived ${action}ed` });
  });

  r.put('/listeners/:amphoraId/:listenerId/udp_listener', raw, async (req: Request, res: Response) => {
    const id = String(req.params.listenerId);
    if (!isObjectId(id) || !isObjectId(String(req.params.amphoraId))) return sendMessage(res, 400, 'Invalid request', 'Invalid listener id');
    const body = bodyOf(req);
    await uploadLvs(deps.basePath(), deps.settings(), id, body.toString('utf8'));
    res.setHeader('ETag', md5(body));
    sendMessage(res, 200, 'OK');
  });

  r.get('/listeners/:listenerId/udp_listener', async (req: Request, res: Response) => {
    const id = String(req.params.listenerId);
    const text = isObjectId(id) ? await readTextIfExists(lvsInstance(deps.basePath(), id).config) : null;
    if (text === null) return sendMessage(res, 404, 'UDP Listener Not Found', `No UDP listener with UUID: ${id}`);
    const body = Buffer.from(text);
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/plain; charset=UTF-8');
    res.setHeader('Content-Length', body.length);
    res.end(body);
  });
}

/** start/stop/reload of an LVS listener; reload is a restart, as in Octavia. Returns false when the listener does not exist. */
export async function lvsAction(deps: KeepalivedDeps, res: Response, id: string, requested: string): Promise<boolean> {
  if (!(await lvsExists(deps.basePath(), id))) return false;
  const action = requested === 'reload' ? 'restart' : requested;
  const inst = lvsInstance(deps.basePath(), id);
  const s = deps.settings();
  try {
    if (action !== 'start') await stopKeepalived(inst, s);
    if (action !== 'stop') await startKeepalived(inst, s);
  } catch (err) {
    if (err instanceof KeepalivedFailedError) {
      sendMessage(res, 500, `Failed to ${action} keepalivedlvs listener ${id}`, err.output);
      return true;
    }
    throw err;
  }
  if (action !== 'stop') await deps.afterLvsStart(id);
  sendJson(res, 202, { message: 'OK', details: `keepalivedlvs listener ${id} ${action}ed` });
  return true;
}

export async function lvsDelete(deps: KeepalivedDeps, id: string): Promise<boolean> {
  if (!(await lvsExists(deps.basePath(), id))) return false;
  await removeLvs(deps.basePath(), deps.settings(), id);
  return true;
}
