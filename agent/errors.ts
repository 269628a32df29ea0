// The one base of the agent's failures. Each failure a caller must tell apart
// has its own class, declared where it is thrown (haproxy/errors.ts,
// keepalived/process.ts, net/plug.ts, ...); the class carries the facts (haproxy's
// output, the missing file) and its `kind` says what sort of failure it is.
// The APIs turn them into HTTP in one mapper each (api/v1/errors.ts,
// api/v2/errors.ts), where anything that is not an AgentError is a bug and
// ends as a 500. The CLI prints the message of any failure (main.ts) and
// does not read kinds: exit status 2 for a usage error or an invalid spec
// (what the user can fix in the command line), 1 for everything else.
export type ErrorKind =
  /** The caller sent something unusable: a spec, a body, an option, an argument. */
  | 'invalid_input'
  /** The object named does not exist. */
  | 'not_found'
  /** The request contradicts what exists (an interface already plugged, a certificate not uploaded yet). */
  | 'conflict'
  /** If-Match names another version than the current one. */
  | 'precondition_failed'
  /** haproxy -c refused the configuration; nothing changed. */
  | 'config_rejected'
  /** haproxy did not start (nothing serves), reload (the previous config keeps serving) or stop. */
  | 'haproxy_failed'
  /** keepalived did not start, reload or stop. */
  | 'keepalived_failed'
  /** A system command (ip, nft, sysctl) or socket (master CLI) refused. */
  | 'command_failed'
  /** A file could not be written: the filesystem is full (or over quota); nothing half-written was left. */
  | 'storage_full';

export abstract class AgentError extends Error {
  abstract readonly kind: ErrorKind;
}
