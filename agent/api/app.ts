// The HTTP application: routes stay thin (parse, call one domain function, map
// the result). This first cut serves version discovery and /1.0/info; the rest
// of API 1.0 arrives with its issue.
import express, { type NextFunction, type Request, type Response } from 'express';
import { hostname } from 'node:os';
import type { Logger } from '../log.js';
import { sendFrameworkError, sendJson } from './errors.js';

export const API_VERSION = '1.0';

export interface AppDeps {
  log: Logger;
  /** Versions of the packages the amphora runs, for /1.0/info. */
  packageVersions(): Promise<{ haproxy: string; keepalived: string; ipvsadm: string }>;
}

export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('strict routing', true);

  app.use((req: Request, res: Response, next: NextFunction) => {
    const started = Date.now();
    res.on('finish', () => {
      deps.log.info({ method: req.method, path: req.originalUrl, status: res.statusCode, ms: Date.now() - started }, 'request');
    });
    next();
  });

  // The controller's discovery URL ends in "//" (base URL with a trailing slash + "/").
  app.get(['/', '//'], (_req, res) => sendJson(res, 200, { api_version: API_VERSION }));

  app.get(`/${API_VERSION}/info`, async (_req, res) => {
    const v = await deps.packageVersions();
    sendJson(res, 200, {
      hostname: hostname(),
      haproxy_version: v.haproxy,
      api_version: API_VERSION,
      keepalived_version: v.keepalived,
      ipvsadm_version: v.ipvsadm,
    });
  });

  app.use((_req: Request, res: Response) => sendFrameworkError(res, 404));
  app.use((err: Error, _req: Request, res: Response, _next: NextFunction) => {
    deps.log.error({ err: String(err) }, 'unhandled error');
    sendFrameworkError(res, 500);
  });
  return app;
}
