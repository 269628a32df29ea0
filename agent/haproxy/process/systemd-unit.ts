// A haproxy-<lb>.service unit's state as `systemctl show` prints it. Under
// systemd the unit restarts haproxy (Restart=always) within its start limit
// (templates/systemd/haproxy.service.njk); past it systemd gives up and the
// unit is "failed": the agent reports that rather than restarting it itself.

/** The properties asked for, in `systemctl show -p` form. */
export const UNIT_PROPERTIES = ['LoadState', 'ActiveState', 'SubState', 'Result', 'NRestarts'];

export interface UnitState {
  name: string;
  /** loaded, not-found... */
  load_state: string;
  /** active, activating, deactivating, inactive, failed ("unknown" when systemctl did not answer). */
  active_state: string;
  /** running, auto-restart, failed, dead... */
  sub_state: string;
  /** Why it last stopped: success, exit-code, signal, start-limit-hit... */
  result: string;
  /** Automatic restarts since the unit was last started on request. */
  restarts: number;
  /** systemd gave up on it: only a start (after reset-failed) brings it back. */
  failed: boolean;
}

/** `systemctl show -p ...` output ("Key=value" lines, in systemd's own order) for unit `name`. */
export function parseUnitState(name: string, text: string): UnitState {
  const props = new Map<string, string>();
  for (const line of text.split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) props.set(line.slice(0, i), line.slice(i + 1).trim());
  }
  const active = props.get('ActiveState') ?? 'unknown';
  return {
    name,
    load_state: props.get('LoadState') ?? 'unknown',
    active_state: active,
    sub_state: props.get('SubState') ?? 'unknown',
    result: props.get('Result') ?? 'unknown',
    restarts: Number.parseInt(props.get('NRestarts') ?? '0', 10) || 0,
    failed: active === 'failed',
  };
}
