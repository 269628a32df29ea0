// The server-state file (format version 1): what `show servers state` prints and
// what `load-server-state-from-file` reads back at startup. haproxy never writes
// it; the agent dumps it right before every reload so running members keep
// their health, and adds lines for new members so they start stopped.

export interface ServerStateEntry {
  backend: string;
  server: string;
  address: string;
  port: string;
  /** 0 STOPPED, 1 STARTING, 2 RUNNING, 3 STOPPING */
  opState: number;
  adminState: number;
  /** Result of the last check: 0 unknown, 1 neutral, 2 failed, 3 passed, 4 conditionally passed. */
  checkResult: number;
  /** Check health counter: the server is up at `rise` and above. */
  checkHealth: number;
  /** The line exactly as haproxy printed it. */
  raw: string;
}

export interface ServerStateDump {
  /** The version and field-name header lines, kept verbatim. */
  header: string[];
  entries: ServerStateEntry[];
}

const SERVER_STATE_VERSION = '1';
const FIELD_NAMES =
  '# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight ' +
  'srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state ' +
  'srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord';

/**
 * The fields the agent reads from a line of 20 or more: be_name, srv_name,
 * srv_addr, srv_op_state, srv_admin_state, srv_check_result,
 * srv_check_health and srv_port (fields 1, 3-6, 11, 12, 18). Captured
 * alone: a split made a string of every field, twice the garbage of a
 * 10,000-server dump.
 */
const STATE_LINE = /^\S+\s+(\S+)\s+\S+\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)(?:\s+\S+){4}\s+(\S+)\s+(\S+)(?:\s+\S+){5}\s+(\S+)\s+\S/;

export function parseServerState(text: string): ServerStateDump {
  const header: string[] = [];
  const entries: ServerStateEntry[] = [];
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '') continue;
    if (trimmed.startsWith('#') || trimmed === SERVER_STATE_VERSION) {
      if (entries.length === 0) header.push(trimmed);
      continue;
    }
    const f = STATE_LINE.exec(trimmed);
    if (!f) continue;
    entries.push({
      backend: f[1]!,
      server: f[2]!,
      address: f[3]!,
      opState: Number(f[4]),
      adminState: Number(f[5]),
      checkResult: Number(f[6]),
      checkHealth: Number(f[7]),
      port: f[8]!,
      raw: trimmed,
    });
  }
  return { header, entries };
}

/** The number of server lines in a dump or state file, without parsing them. */
export function stateLineCount(text: string): number {
  let count = 0;
  for (let at = 0; at < text.length; ) {
    let end = text.indexOf('\n', at);
    if (end < 0) end = text.length;
    // A server line starts with its backend's id, then more fields; the version line is one number.
    const first = text.charCodeAt(at);
    const space = text.indexOf(' ', at);
    if (first >= 48 && first <= 57 && space >= 0 && space < end) count++;
    at = end + 1;
  }
  return count;
}

/** A state line that makes haproxy start this server stopped, with zero check health. */
export function stoppedServerLine(backend: string, server: string, address: string, port: string): string {
  // IDs 0 and not forced: haproxy then matches the backend and server by name.
  // Weights 1/1: a saved weight is only applied when the config weight equals
  // srv_iweight, so any other config weight simply wins.
  // Check status 1 (INI, "initializing") with result 0 (unknown): status 0 is
  // not a state a real dump contains; 2.6 then never records a check result
  // and 3.2 crashes on it (both seen here). Check health 0 = needs `rise`
  // successes. Check state 6 = CONFIGURED|ENABLED. The port is restored from
  // this line, so it must be the configured one.
  return [0, backend, 0, server, address, 0, 0, 1, 1, 0, 1, 0, 0, 6, 0, 0, 0, '-', port || '0', '-'].join(' ');
}

export function formatServerState(header: string[], lines: string[]): string {
  const head = header.length >= 2 ? header : [SERVER_STATE_VERSION, FIELD_NAMES];
  return lines.length === 0 ? `${head.join('\n')}\n` : `${head.join('\n')}\n${lines.join('\n')}\n`;
}

/** Split a haproxy server address (`10.0.0.1:80`, `[2001:db8::1]:80`, `2001:db8::1:80`) into host and port. */
export function splitServerAddress(address: string): { host: string; port: string } {
  // Called for every member of a reload: no copy of the address unless it has a prefix or brackets.
  const bare = address.startsWith('ipv4@') || address.startsWith('ipv6@') ? address.slice(5) : address;
  if (bare.startsWith('[')) {
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(bare);
    if (bracketed) return { host: bracketed[1]!, port: bracketed[2] ?? '' };
  }
  const idx = bare.lastIndexOf(':');
  if (idx < 0) return { host: bare, port: '' };
  const port = bare.slice(idx + 1);
  return PORT.test(port) ? { host: bare.slice(0, idx), port } : { host: bare, port: '' };
}

const PORT = /^\d*$/;

/** The entry is the server at `address` (a config's server address; without a port, any port). */
export function sameEndpoint(entry: ServerStateEntry, address: string): boolean {
  const { host, port } = splitServerAddress(address);
  return entry.address === host && (port === '' || entry.port === port);
}
