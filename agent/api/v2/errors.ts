// API 2.0's one error mapper: every error body is
// {"error": <word>, "message": ..., "problems"?: [...]}. Typed errors of the
// domain map here (v2ErrorResponse); the router's own refusals (bad path
// parameter, no such resource, wrong method, unreadable body) use the same
// shape through sendV2Error. Errors that are not the agent's own are
// rethrown and end in the framework's 500.
import type { Response } from 'express';
import { HaproxyFailedError, InvalidConfigError } from '../../haproxy/errors.js';
import { KeepalivedFailedError } from '../../keepalived/process.js';
import { MissingCertificateError, ObjectNotFoundError, PreconditionFailedError, SpecMismatchError } from '../../loadbalancer/v2-errors.js';
import { SpecError } from '../../model/spec/validate.js';
import { StorageFullError } from '../../system/files.js';
import { sendJson } from '../errors.js';

export interface V2ErrorBody {
  error: string;
  message: string;
  problems?: string[];
}

export interface V2ErrorResponse {
  status: number;
  body: V2ErrorBody;
  headers?: Record<string, string>;
}

const problem = (status: number, error: string, message: string, problems?: string[]): V2ErrorResponse => ({
  status,
  body: problems === undefined ? { error, message } : { error, message, problems },
});

export function v2ErrorResponse(err: unknown): V2ErrorResponse {
  if (err instanceof SpecError) return problem(400, 'invalid_spec', 'the spec is invalid', err.problems);
  if (err instanceof SpecMismatchError) return problem(400, 'invalid_spec', err.message);
  if (err instanceof MissingCertificateError) return problem(409, 'missing_certificate', err.message);
  if (err instanceof ObjectNotFoundError) return problem(404, 'not_found', err.message);
  if (err instanceof PreconditionFailedError) {
    return { ...problem(412, 'precondition_failed', err.message), ...(err.currentEtag ? { headers: { ETag: err.currentEtag } } : {}) };
  }
  if (err instanceof InvalidConfigError) return problem(422, 'config_rejected', 'haproxy refused the rendered configuration', err.message.split('\n'));
  if (err instanceof HaproxyFailedError) return problem(500, 'haproxy_failed', haproxyFailedMessage(err.action), err.output.split('\n'));
  if (err instanceof StorageFullError) return problem(507, 'storage_full', `${err.message}; no file was left half-written`);
  if (err instanceof KeepalivedFailedError) {
    return problem(500, 'keepalived_failed', `keepalived (UDP/SCTP listener) did not ${err.action}`, err.output.split('\n'));
  }
  throw err;
}

/**
 * What a failed haproxy action leaves serving. A failed reload leaves the
 * previous configuration serving (the engine reloads it again); a failed start
 * means no haproxy ran this load balancer, so nothing serves it.
 */
function haproxyFailedMessage(action: string): string {
  if (action === 'reload') return 'haproxy did not reload; it keeps serving the previous configuration';
  if (action === 'start') return 'haproxy did not start; nothing is serving this load balancer';
  return `haproxy did not ${action}`;
}

export function sendV2Error(res: Response, status: number, error: string, message: string): void {
  sendJson(res, status, { error, message });
}

export function sendV2Failure(res: Response, err: unknown): void {
  const out = v2ErrorResponse(err);
  for (const [name, value] of Object.entries(out.headers ?? {})) res.setHeader(name, value);
  sendJson(res, out.status, out.body);
}
