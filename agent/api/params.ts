// Path parameters name files and directories, so they are checked before any
// use: an id or filename that could leave the agent's directories ("..", "/"
// after URL decoding, NUL, control characters) never reaches the file system.

const OBJECT_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/** Load balancer, amphora and listener ids (Octavia sends UUIDs). */
export function isObjectId(value: string): boolean {
  return OBJECT_ID.test(value) && !value.includes('..');
}

/**
 * Certificate filenames. Octavia's agent accepts what `re.search(r'(\w.)+pem')`
 * finds anywhere in the name; here the whole name must be a plain file name
 * that also satisfies that pattern.
 */
export function isPemFilename(value: string): boolean {
  return /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,250}$/.test(value) && !value.includes('..') && /(\w.)+pem/.test(value);
}
