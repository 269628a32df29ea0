// The request body limits of both APIs (docs/operations.md, "Limits of the
// API"); a larger body gets 413 before it is read.

/** API 1.0 uploads and API 2.0 specs: a haproxy config for thousands of members is a few MB. */
export const BODY_LIMIT = '32mb';

/** API 2.0 certificates and API 1.0's plug vip/network requests: a PEM bundle or a few addresses. */
export const SMALL_BODY_LIMIT = '1mb';
