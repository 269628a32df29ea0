// Reads what the engine needs to know from a raw haproxy configuration: the
// backends and their servers (with health-check settings), and where the
// server-state file lives. Pure: text in, structure out. It is not a full
// haproxy parser; haproxy -c remains the judge of validity.
import { splitServerAddress } from './server-state.js';
import { SECTION_KEYWORDS, tokenizeLine } from './tokenizer.js';

export interface ServerLine {
  backend: string;
  name: string;
  address: string;
  /** 0-based line index in the source text. */
  line: number;
  /** Column where the directive ends (before any trailing comment). */
  codeEnd: number;
  /** Health checks run on this server (own `check`, or inherited from default-server). */
  checked: boolean;
  /** The server follows another server's state (`track`); it has no checks of its own. */
  tracked: boolean;
  /** The line already carries an explicit init-state. */
  initStateOnLine: boolean;
  /** The check health at which haproxy counts the server up (`rise`; haproxy's default 2). */
  rise: number;
  /**
   * The shortest time between two of its checks while it is down (`inter`,
   * `fastinter`, `downinter`; haproxy's default inter 2 s), in ms; NaN when
   * a value is not one haproxy's time format spells.
   */
  checkEveryMs: number;
  /**
   * The `default-server` words in effect for this line (the defaults
   * section's, then the backend's own, in order): haproxy applies them when
   * it loads the config, `add server` does not.
   */
  defaultServer: string[];
}

export interface BackendInfo {
  name: string;
  servers: ServerLine[];
  /** load-server-state-from-file in effect: own value, else inherited from defaults. */
  loadServerState: 'global' | 'local' | 'none';
}

export interface FrontendInfo {
  name: string;
  /** `mode` of the frontend (haproxy's default is tcp). */
  mode: 'http' | 'tcp';
  /** A bind line terminates TLS with a crt-list (Octavia's TERMINATED_HTTPS). */
  terminatesTls: boolean;
  /** Addresses of the bind lines (`10.0.0.5:80` -> `10.0.0.5`), for address announcements. */
  bindAddresses: string[];
}

export interface ConfigInfo {
  frontends: FrontendInfo[];
  backends: Map<string, BackendInfo>;
  /** Absolute path of the global server-state file, if configured. */
  serverStateFile: string | null;
}

interface DefaultsInfo {
  defaultServer: string[];
  loadServerState: BackendInfo['loadServerState'] | null;
}

const NO_DEFAULTS: DefaultsInfo = { defaultServer: [], loadServerState: null };

export function readConfig(text: string): ConfigInfo {
  const lines = text.split('\n');
  const backends = new Map<string, BackendInfo>();
  const frontends: FrontendInfo[] = [];
  let frontend: FrontendInfo | null = null;
  const namedDefaults = new Map<string, DefaultsInfo>();
  let lastDefaults: DefaultsInfo = NO_DEFAULTS;
  let serverStateFile: string | null = null;
  let serverStateBase: string | null = null;

  let section = '';
  let current: BackendInfo | null = null;
  let currentDefaults: DefaultsInfo | null = null;
  let inherited: DefaultsInfo = lastDefaults;
  // A backend's default-server lines add to the defaults section's, as in haproxy.
  let defaultServer: string[] = [];
  let ownLoadState: BackendInfo['loadServerState'] | null = null;

  const closeProxy = () => {
    if (current) {
      current.loadServerState = ownLoadState ?? inherited.loadServerState ?? 'none';
      current = null;
    }
    if (currentDefaults) lastDefaults = currentDefaults;
    currentDefaults = null;
  };

  for (let n = 0; n < lines.length; n++) {
    const { words, codeEnd } = tokenizeLine(lines[n]!);
    if (words.length === 0) continue;
    const kw = words[0]!;
    if (SECTION_KEYWORDS.has(kw)) {
      closeProxy();
      section = kw;
      frontend = null;
      if (kw === 'frontend') {
        frontend = { name: words[1] ?? '', mode: 'tcp', terminatesTls: false, bindAddresses: [] };
        frontends.push(frontend);
      }
      ownLoadState = null;
      if (kw === 'defaults') {
        const fromIdx = words.indexOf('from');
        const parent = fromIdx > 0 ? namedDefaults.get(words[fromIdx + 1] ?? '') : undefined;
        currentDefaults = { defaultServer: [...(parent ?? NO_DEFAULTS).defaultServer], loadServerState: (parent ?? NO_DEFAULTS).loadServerState };
        const name = words[1] && words[1] !== 'from' ? words[1] : null;
        if (name) namedDefaults.set(name, currentDefaults);
      } else if (kw === 'backend' || kw === 'listen') {
        const name = words[1] ?? '';
        const fromIdx = words.indexOf('from');
        inherited = (fromIdx > 0 ? namedDefaults.get(words[fromIdx + 1] ?? '') : undefined) ?? lastDefaults;
        current = { name, servers: [], loadServerState: 'none' };
        defaultServer = [...inherited.defaultServer];
        backends.set(name, current);
      }
      continue;
    }

    if (section === 'global') {
      if (kw === 'server-state-file' && words[1]) serverStateFile = words[1];
      if (kw === 'server-state-base' && words[1]) serverStateBase = words[1];
      continue;
    }
    if (section === 'defaults' && currentDefaults) {
      if (kw === 'default-server') currentDefaults.defaultServer.push(...words.slice(1));
      if (kw === 'load-server-state-from-file') currentDefaults.loadServerState = asLoadState(words[1]);
      continue;
    }
    if (frontend) {
      if (kw === 'mode') frontend.mode = words[1] === 'http' ? 'http' : 'tcp';
      if (kw === 'bind' && words.includes('ssl') && words.includes('crt-list')) frontend.terminatesTls = true;
      if (kw === 'bind' && words[1]) frontend.bindAddresses.push(splitServerAddress(words[1]).host);
      continue;
    }
    if (!current) continue;
    if (kw === 'default-server') defaultServer = [...defaultServer, ...words.slice(1)];
    else if (kw === 'load-server-state-from-file') ownLoadState = asLoadState(words[1]);
    else if (kw === 'server' && words.length >= 3) {
      // The server's own keywords follow its name and address.
      const tracked = words.indexOf('track', 3) >= 0;
      // default-server words first: the server's own come later and win.
      const settings = [...defaultServer, ...words.slice(3)];
      current.servers.push({
        backend: current.name,
        name: words[1]!,
        address: words[2]!,
        line: n,
        codeEnd,
        checked: !tracked && hasCheck(words, 3, hasCheck(defaultServer, 0, false)),
        tracked,
        initStateOnLine: words.indexOf('init-state', 3) >= 0,
        rise: Number(lastValue(settings, 'rise') ?? 2),
        checkEveryMs: shortestCheckInterval(settings),
        defaultServer,
      });
    }
  }
  closeProxy();

  if (serverStateFile && !serverStateFile.startsWith('/') && serverStateBase) {
    serverStateFile = `${serverStateBase.replace(/\/+$/, '')}/${serverStateFile}`;
  }
  return { frontends, backends, serverStateFile };
}

/** `check` / `no-check` in `words` from `from` on decide (the last one, for accumulated default-server words), else the inherited answer. */
function hasCheck(words: string[], from: number, inheritedCheck: boolean): boolean {
  for (let i = words.length - 1; i >= from; i--) {
    if (words[i] === 'check') return true;
    if (words[i] === 'no-check') return false;
  }
  return inheritedCheck;
}

/** The value after the last `keyword` in `words`, or null. */
function lastValue(words: string[], keyword: string): string | null {
  const i = words.lastIndexOf(keyword);
  return i >= 0 ? (words[i + 1] ?? null) : null;
}

/** fastinter and downinter default to inter, and inter to 2 s. */
function shortestCheckInterval(settings: string[]): number {
  const inter = lastValue(settings, 'inter') ?? '2s';
  return Math.min(timeMs(inter), timeMs(lastValue(settings, 'fastinter') ?? inter), timeMs(lastValue(settings, 'downinter') ?? inter));
}

const TIME_UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A haproxy time (`500`, `100ms`, `2s`, `1m`: milliseconds without a unit) in ms; NaN when it is not one. */
export function timeMs(value: string): number {
  const m = /^(\d+)(us|ms|s|m|h|d)?$/.exec(value);
  return m ? Number(m[1]) * TIME_UNIT_MS[m[2] ?? 'ms']! : Number.NaN;
}

function asLoadState(word: string | undefined): BackendInfo['loadServerState'] {
  return word === 'global' || word === 'local' ? word : 'none';
}
