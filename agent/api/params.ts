// Path parameters name files and directories, so they are checked before any
// use: an id or filename that could leave the agent's directories ("..", "/"
// after URL decoding, NUL, control characters) never reaches the file system.
// The patterns are exported as text for the OpenAPI document (v2/openapi.ts),
// which publishes exactly the rule the API applies.

/** Load balancer, amphora and listener ids (Octavia sends UUIDs). */
export const OBJECT_ID_PATTERN = '^(?!.*\\.\\.)[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$';

/**
 * Certificate filenames. Octavia's agent accepts what `re.search(r'(\w.)+pem')`
 * finds anywhere in the name (the same as `\w.pem` anywhere); here the whole
 * name must be a plain file name that also satisfies that pattern.
 */
export const PEM_FILENAME_PATTERN = '^(?!.*\\.\\.)(?=.*\\w.pem)[A-Za-z0-9_][A-Za-z0-9_.-]{0,250}$';

const OBJECT_ID = new RegExp(OBJECT_ID_PATTERN);
const PEM_FILENAME = new RegExp(PEM_FILENAME_PATTERN);

export function isObjectId(value: string): boolean {
  return OBJECT_ID.test(value);
}

export function isPemFilename(value: string): boolean {
  return PEM_FILENAME.test(value);
}
