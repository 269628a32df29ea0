// What the engine tells its one subscriber (EngineOptions.onChange,
// loadbalancer/announce.ts) after haproxy changed, whichever verb or timer
// changed it: the subscriber needs no other source.
import type { LoadReport } from './loader.js';

/** What the engine tells its subscriber after haproxy changed. */
export type HaproxyChange =
  /** Started or reloaded with a new or the accepted config, by a request. */
  | { kind: 'loaded'; lbId: string; load: LoadReport }
  /** Asked to start, it ran already: it binds what it last loaded. */
  | { kind: 'ran'; lbId: string; bindAddresses: string[] }
  /** Dead, and started again by the watchdog with the config it ran. */
  | { kind: 'restarted'; lbId: string; load: LoadReport }
  /** Dead, and the watchdog could not start it again: down for good. */
  | { kind: 'dead'; lbId: string }
  /** Stopped on purpose (API 1.0's stop): down for good. */
  | { kind: 'stopped'; lbId: string }
  /** Removed with its files: gone, not down. */
  | { kind: 'deleted'; lbId: string };
