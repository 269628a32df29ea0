// API 2.0: declarative load balancers. Handlers parse, call the
// V2Service, and turn its results and typed errors into HTTP
// (errors.ts: {"error": <word>, "message": ..., "problems"?: [...]}).
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { Logger } from '../../log.js';
import { InvalidCertificateFileError } from '../../loadbalancer/certificates.js';
import type { PutResult } from '../../loadbalancer/put-result.js';
import type { V2Service } from '../../loadbalancer/v2-service.js';
import type { ApplyMetrics } from '../../loadbalancer/metrics.js';
import { AgentError } from '../../errors.js';
import { sendJson } from '../errors.js';
import { isPemFilename, isSpecName } from '../params.js';
import { idRefusal } from '../reserved-ids.js';
import type { ConfigStore } from '../../config/store.js';
import { BODY_LIMIT, SMALL_BODY_LIMIT } from '../body-limits.js';
import { Routes } from '../routes.js';
import { sendV2Error as fail, sendV2Failure } from './errors.js';
import { openApiDocument } from './openapi.js';

export interface V2Deps {
  loadBalancers: V2Service;
  /** For the names no load balancer id may take (reserved-ids.ts). */
  config: ConfigStore;
  metrics: ApplyMetrics;
  log: Logger;
}

export function createV2Router(deps: V2Deps): Router {
  const r = express.Router({ strict: true });
  // A known path with another method: 405.
  const routes = new Routes(r, (_req, res) => fail(res, 405, 'method_not_allowed', 'this method is not allowed here'));
  const { loadBalancers } = deps;
  const body = express.json({ limit: BODY_LIMIT, strict: false, type: () => true });
  const pem = express.raw({ type: () => true, limit: SMALL_BODY_LIMIT });

  const lbParam = (req: Request, res: Response, next: NextFunction) => {
    const why = idRefusal(deps.config.current, String(req.params.lbId));
    if (why !== null) return fail(res, 400, 'invalid_request', `invalid load balancer id ${JSON.stringify(req.params.lbId)}: ${why}`);
    next();
  };
  const certParam = (req: Request, res: Response, next: NextFunction) => {
    if (!isPemFilename(String(req.params.name))) return fail(res, 400, 'invalid_request', `invalid certificate file name ${JSON.stringify(req.params.name)}`);
    next();
  };
  const ifMatch = (req: Request) => req.get('If-Match')?.trim() || undefined;

  routes.get('/openapi.json', (_req, res) => sendJson(res, 200, openApiDocument()));

  routes.get('/metrics', async (_req, res) => {
    res.setHeader('Content-Type', deps.metrics.contentType);
    res.end(await deps.metrics.text());
  });

  const dryRunOf = (req: Request) => req.query.dry_run === 'true' || req.query.dry_run === '1';
  const sendResult = (res: Response, out: PutResult, dryRun: boolean) => {
    res.setHeader('ETag', out.etag);
    sendJson(res, out.created && !dryRun ? 201 : 200, {
      result: out.result,
      etag: out.etag,
      changes: out.changes,
      runtime: out.runtime,
      reload_reason: out.reloadReason,
      pending: out.pending,
      lvs: out.lvs,
      ...(dryRun ? { plan: out.plan, config: out.config } : {}),
    });
  };

  routes.put('/loadbalancers/:lbId', lbParam, body, async (req, res) => {
    const dryRun = dryRunOf(req);
    sendResult(res, await loadBalancers.put(String(req.params.lbId), req.body, { ifMatch: ifMatch(req), dryRun }), dryRun);
  });

  // One member at a time: the cost does not grow with the load balancer.
  const memberPath = '/loadbalancers/:lbId/pools/:poolId/members/:memberId';
  const memberParams = (req: Request, res: Response, next: NextFunction) => {
    for (const name of ['poolId', 'memberId']) {
      if (!isSpecName(String(req.params[name])))
        return fail(res, 400, 'invalid_request', `invalid ${name === 'poolId' ? 'pool' : 'member'} id ${JSON.stringify(req.params[name])}`);
    }
    next();
  };
  const memberCall = (document: (req: Request) => unknown | null) => async (req: Request, res: Response) => {
    const dryRun = dryRunOf(req);
    const { lbId, poolId, memberId } = req.params as Record<string, string>;
    sendResult(res, await loadBalancers.putMember(lbId!, poolId!, memberId!, document(req), { ifMatch: ifMatch(req), dryRun }), dryRun);
  };
  routes.put(
    memberPath,
    lbParam,
    memberParams,
    body,
    memberCall((req) => req.body ?? {}),
  );
  routes.delete(
    memberPath,
    lbParam,
    memberParams,
    memberCall(() => null),
  );

  routes.get('/loadbalancers/:lbId', lbParam, async (req, res) => {
    const stored = await loadBalancers.get(String(req.params.lbId));
    res.setHeader('ETag', stored.etag);
    sendJson(res, 200, { spec: stored.spec, etag: stored.etag, config: stored.config });
  });

  routes.delete('/loadbalancers/:lbId', lbParam, async (req, res) => {
    await loadBalancers.delete(String(req.params.lbId), ifMatch(req));
    res.status(204).end();
  });

  routes.get('/loadbalancers/:lbId/status', lbParam, async (req, res) => {
    sendJson(res, 200, await loadBalancers.status(String(req.params.lbId)));
  });

  routes.put('/loadbalancers/:lbId/certificates/:name', lbParam, certParam, pem, async (req, res) => {
    const data = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    await loadBalancers.putCertificate(String(req.params.lbId), String(req.params.name), data);
    res.status(204).end();
  });

  routes.delete('/loadbalancers/:lbId/certificates/:name', lbParam, certParam, async (req, res) => {
    await loadBalancers.deleteCertificate(String(req.params.lbId), String(req.params.name));
    res.status(204).end();
  });

  r.use((_req, res) => fail(res, 404, 'not_found', 'no such API 2.0 resource'));
  // Every error of a route ends here (express hands on what an async
  // handler throws): body parser errors (malformed JSON, too large) and the
  // domain's typed errors in the 2.0 shape; anything else is a bug, the
  // framework's 500.
  r.use((err: Error & { status?: number; type?: string }, _req: Request, res: Response, next: NextFunction) => {
    if (err.type === 'entity.parse.failed') return fail(res, 400, 'invalid_json', `the body is not JSON: ${err.message}`);
    if (err.status === 413) return fail(res, 413, 'too_large', `the body is larger than ${BODY_LIMIT}`);
    if (err instanceof InvalidCertificateFileError) return fail(res, 400, 'invalid_certificate', `the body is ${err.message}`);
    if (!(err instanceof AgentError)) return next(err);
    try {
      sendV2Failure(res, err);
    } catch {
      next(err); // an AgentError API 2.0 has no answer for
    }
  });
  return r;
}
