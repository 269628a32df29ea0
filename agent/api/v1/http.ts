// Small pieces of API 1.0's HTTP that several route files share.
import type { Response } from 'express';
import type { ObjectAction } from '../../loadbalancer/v1-service.js';

/** Plain text as Octavia's agent sends configs (with the ETag the controller compares, when given). */
export function sendText(res: Response, text: string, etag?: string): void {
  const body = Buffer.from(text);
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/plain; charset=UTF-8');
  if (etag) res.setHeader('ETag', etag);
  res.setHeader('Content-Length', body.length);
  res.end(body);
}

export const isAction = (action: string): action is ObjectAction => ['start', 'stop', 'reload'].includes(action);
