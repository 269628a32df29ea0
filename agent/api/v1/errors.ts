// API 1.0's one error mapper: an AgentError becomes the status code and body
// Octavia's agent sends for it, in Octavia's two shapes:
//  - handler errors: {"message": ..., "details"?: ...}
//  - framework errors: {"error": "<code> <Name>: <text>", "http_code": <code>}
// Octavia words a failed command after the operation ("Error plugging VIP",
// "Failed to reload octavia-keepalived service"), so the route names its
// operation's failure and the mapper puts haproxy's, keepalived's or the
// command's own words in `details`. Errors that are not the agent's own are
// rethrown: they end in the framework's 500.
import type { Response } from 'express';
import { ConfigError } from '../../config/agent-config.js';
import { ConfigNotStoredError } from '../../config/store.js';
import { AgentError } from '../../errors.js';
import { formatViolations, PolicyRefusedError } from '../../haproxy/config/policy/types.js';
import { HaproxyFailedError, InvalidConfigError, LoadBalancerNotFoundError } from '../../haproxy/errors.js';
import { KeepalivedFailedError } from '../../keepalived/process.js';
import { NoNamespaceError } from '../../net/interfaces.js';
import { InterfaceExistsError, InterfaceNotFoundError } from '../../net/plug.js';
import { StorageFullError } from '../../system/files.js';
import { frameworkBody, sendJson } from '../errors.js';

/** A request Octavia's agent answers with {"message": ...} and 400. */
export class InvalidRequestError extends AgentError {
  readonly kind = 'invalid_input';

  constructor(
    message: string,
    readonly details?: string,
  ) {
    super(message);
  }
}

/** A request body Flask itself refuses: the framework's 400 with this description. */
export class BadRequestError extends AgentError {
  readonly kind = 'invalid_input';
}

/** PUT /1.0/certificate without a certificate and the key that matches it. */
export class InvalidCertificateError extends AgentError {
  readonly kind = 'invalid_input';
}

export interface V1ErrorResponse {
  status: number;
  body: object;
}

const message = (status: number, text: string, details?: string): V1ErrorResponse => ({
  status,
  body: details === undefined ? { message: text } : { message: text, details },
});

/**
 * The response for `err`. `failed` is the operation's message for a failed
 * haproxy, keepalived or system command; without it those errors, like any
 * error that is not an AgentError, are thrown again.
 */
export function v1ErrorResponse(err: unknown, failed?: string): V1ErrorResponse {
  if (err instanceof InvalidRequestError) return message(400, err.message, err.details);
  if (err instanceof BadRequestError) return { status: 400, body: frameworkBody(400, `Bad Request: ${err.message}`) };
  if (err instanceof InvalidCertificateError) {
    return message(400, 'Invalid certificate', `expected a PEM certificate followed by its private key: ${err.message}`);
  }
  if (err instanceof InvalidConfigError) return message(400, 'Invalid request', err.output);
  if (err instanceof PolicyRefusedError) {
    return message(400, 'Invalid request', `refused by the amphora agent's config policy:\n${formatViolations(err.violations)}`);
  }
  if (err instanceof ConfigError) return message(400, 'Invalid agent configuration', err.message);
  if (err instanceof LoadBalancerNotFoundError) return message(404, 'Loadbalancer Not Found', `No loadbalancer with UUID: ${err.lbId}`);
  if (err instanceof InterfaceNotFoundError) return { status: 404, body: { details: 'No suitable network interface found' } };
  if (err instanceof InterfaceExistsError) return message(409, 'Interface already exists');
  if (err instanceof NoNamespaceError) return message(409, 'No network namespace configured', err.message);
  // 500, not 507: Octavia's controller takes status codes it does not know for success.
  if (err instanceof StorageFullError) return message(500, 'No space left on device', `${err.message}; no file was left half-written`);
  if (err instanceof ConfigNotStoredError) return message(500, 'Unable to update amphora-agent configuration.', err.message);
  if (failed !== undefined && err instanceof AgentError) {
    if (err instanceof HaproxyFailedError || err instanceof KeepalivedFailedError) return message(500, failed, err.output);
    if (err.kind === 'command_failed') return message(500, failed, err.message);
  }
  throw err;
}

export function sendV1Error(res: Response, err: unknown, failed?: string): void {
  const out = v1ErrorResponse(err, failed);
  sendJson(res, out.status, out.body);
}
