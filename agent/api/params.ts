// Path parameters name files and directories, so they are checked before any
// use: an id or filename that could leave the agent's directories ("..", "/"
// after URL decoding, NUL, control characters) never reaches the file system.
// The patterns are exported as text for the OpenAPI document (v2/openapi.ts),
// which publishes exactly the rule the API applies.

/**
 * Load balancer, amphora and listener ids: each may name a directory.
 * Octavia sends UUIDs, always lowercase (str(uuid4())); readable lowercase
 * slugs such as `lb-web` are taken too, for tests, benches and operators,
 * since a UUID is one of them. Nothing else: no '.' (so neither '.' nor '..',
 * nor a file the agent keeps beside the load balancers, all of which carry
 * a '.' or a '_'), no uppercase (an uppercase UUID would be a second
 * directory for the same load balancer), no '%', ':' or '/'. The bare
 * directory names the agent keeps (vrrp, lvs, certs) are slugs: the routes
 * refuse those as well (reserved-ids.ts).
 */
export const OBJECT_ID_PATTERN = '^[a-z0-9][a-z0-9-]{0,63}$';

/** API 2.0 pool and member ids in paths: names inside a spec (spec/schema.ts), never a directory, so its wider form minus "..". */
export const SPEC_NAME_PATTERN = '^(?!.*\\.\\.)[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$';

/**
 * Certificate filenames. Octavia's agent accepts what `re.search(r'(\w.)+pem')`
 * finds anywhere in the name; its controller always sends `<id>.pem`. Here
 * the name must end in `.pem`: `x.pem.key` or `x.pem.ocsp` would be the files
 * haproxy opens next to the certificate `x.pem`, which an upload must not set.
 */
export const PEM_FILENAME_PATTERN = '^(?!.*\\.\\.)[A-Za-z0-9_][A-Za-z0-9_.-]{0,246}\\.pem$';

const OBJECT_ID = new RegExp(OBJECT_ID_PATTERN);
const SPEC_NAME = new RegExp(SPEC_NAME_PATTERN);
const PEM_FILENAME = new RegExp(PEM_FILENAME_PATTERN);

export function isObjectId(value: string): boolean {
  return OBJECT_ID.test(value);
}

export function isSpecName(value: string): boolean {
  return SPEC_NAME.test(value);
}

export function isPemFilename(value: string): boolean {
  return PEM_FILENAME.test(value);
}
