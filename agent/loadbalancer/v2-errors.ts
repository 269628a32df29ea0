// API 2.0's refusals of a spec or member call: a stale ETag, a missing
// object, a spec for another load balancer, a certificate not uploaded.
// Typed so api/v2/errors.ts maps each to its HTTP status in one place.
import { AgentError } from '../errors.js';

export class PreconditionFailedError extends AgentError {
  readonly kind = 'precondition_failed';

  constructor(readonly currentEtag: string | null) {
    super(currentEtag === null ? 'the load balancer does not exist' : `the spec changed: its ETag is now ${currentEtag}`);
  }
}

/** A member call names a load balancer or pool that is not there. */
export class ObjectNotFoundError extends AgentError {
  readonly kind = 'not_found';
}

/** The spec's id is not the load balancer of the path. */
export class SpecMismatchError extends AgentError {
  readonly kind = 'invalid_input';
}

export class MissingCertificateError extends AgentError {
  readonly kind = 'conflict';

  constructor(readonly file: string) {
    super(`certificate file "${file}" has not been uploaded (PUT /2.0/loadbalancers/{id}/certificates/${file})`);
  }
}
