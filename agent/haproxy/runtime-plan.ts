// Can a new config be reached from the running one through haproxy's runtime
// API, without a reload? Only when everything but server lines is the same,
// and the server lines differ in ways the runtime API can express: a member
// added or removed, its weight, its admin state. Anything else (an address,
// check options, backup, a new backend) needs a reload. Pure.
import { tokenizeLine } from './config-reader.js';

export type RuntimeStep =
  | { kind: 'add'; backend: string; server: string; /** words after `server <name>` */ args: string[]; checked: boolean; enabled: boolean }
  | { kind: 'remove'; backend: string; server: string }
  | { kind: 'weight'; backend: string; server: string; weight: number }
  | { kind: 'admin-down'; backend: string; server: string }
  | { kind: 'admin-up'; backend: string; server: string; checked: boolean; initState: boolean; rise: number };

export interface RuntimePlan {
  steps: RuntimeStep[];
  /** Why not, when a reload is needed. */
  reloadReason: string | null;
}

interface Server {
  backend: string;
  name: string;
  args: string[];
}

interface Skeleton {
  /** The config with server lines removed, whitespace-normalised. */
  rest: string;
  servers: Map<string, Server>;
}

const key = (backend: string, server: string) => `${backend}/${server}`;

function skeleton(text: string): Skeleton {
  const rest: string[] = [];
  const servers = new Map<string, Server>();
  let backend: string | null = null;
  for (const line of text.split('\n')) {
    const { words } = tokenizeLine(line);
    if (words.length === 0) continue;
    if (/^\S/.test(line)) backend = words[0] === 'backend' ? words[1] ?? null : null;
    if (backend !== null && words[0] === 'server' && words.length >= 3) {
      servers.set(key(backend, words[1]!), { backend, name: words[1]!, args: words.slice(2) });
    } else {
      rest.push(words.join(' '));
    }
  }
  return { rest: rest.join('\n'), servers };
}

/** Flags and keyword arguments of a server line, without weight and `disabled`. */
function identity(args: string[]): string {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === 'weight') i++;
    else if (args[i] !== 'disabled') out.push(args[i]!);
  }
  return out.join(' ');
}

/** The server's `rise` (haproxy's default is 2). */
export function riseOf(args: string[]): number {
  const i = args.indexOf('rise');
  return i >= 0 ? Number(args[i + 1]) : 2;
}

function weightOf(args: string[]): number {
  const i = args.indexOf('weight');
  return i >= 0 ? Number(args[i + 1]) : 1;
}

export function planRuntime(runningText: string, newText: string): RuntimePlan {
  const before = skeleton(runningText);
  const after = skeleton(newText);
  if (before.rest !== after.rest) return { steps: [], reloadReason: 'more than members changed' };

  const adds: RuntimeStep[] = [];
  const changes: RuntimeStep[] = [];
  const removes: RuntimeStep[] = [];
  for (const [k, s] of after.servers) {
    const checked = s.args.includes('check');
    const enabled = !s.args.includes('disabled');
    const was = before.servers.get(k);
    if (!was) {
      adds.push({ kind: 'add', backend: s.backend, server: s.name, args: s.args, checked, enabled });
      continue;
    }
    if (identity(was.args) !== identity(s.args)) {
      return { steps: [], reloadReason: `member ${k} changed beyond weight and admin state` };
    }
    const w = weightOf(s.args);
    if (w !== weightOf(was.args)) changes.push({ kind: 'weight', backend: s.backend, server: s.name, weight: w });
    const wasEnabled = !was.args.includes('disabled');
    if (wasEnabled && !enabled) changes.push({ kind: 'admin-down', backend: s.backend, server: s.name });
    if (!wasEnabled && enabled) {
      changes.push({ kind: 'admin-up', backend: s.backend, server: s.name, checked, initState: s.args.includes('init-state'), rise: riseOf(s.args) });
    }
  }
  for (const [k, s] of before.servers) {
    if (!after.servers.has(k)) removes.push({ kind: 'remove', backend: s.backend, server: s.name });
  }
  // New capacity first, removals last: a replaced member leaves after its successor joined.
  return { steps: [...adds, ...changes, ...removes], reloadReason: null };
}
