// The HTTP application: request logging, version discovery, API 1.0 (what
// Octavia's controller calls), API 2.0 (specs), and Octavia's framework error
// shapes for everything else.
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from '../log.js';
import { sendFrameworkError, sendJson } from './errors.js';
import { createV1Router, type V1Deps } from './v1/router.js';
import { createV2Router, type V2Deps } from './v2/router.js';

export const API_VERSION = '1.0';

export function createApp(deps: V1Deps & Omit<V2Deps, 'log'> & { log: Logger }): express.Express {
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
  app.all(['/', '//'], (_req, res) => sendFrameworkError(res, 405));
  app.use(`/${API_VERSION}`, createV1Router(deps));
  app.use('/2.0', createV2Router(deps));

  app.use((_req: Request, res: Response) => sendFrameworkError(res, 404));
  app.use((err: Error & { status?: number; type?: string }, req: Request, res: Response, _next: NextFunction) => {
    const status = err.status && err.status >= 400 && err.status < 500 ? err.status : 500;
    if (status === 500) deps.log.error({ err: String(err), stack: err.stack, path: req.originalUrl }, 'unhandled error');
    sendFrameworkError(res, status);
  });
  return app;
}
