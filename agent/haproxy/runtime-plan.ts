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
  /** The line as written: most lines are unchanged, and those are never split. */
  line: string;
}

interface Skeleton {
  /** The config with server lines removed, whitespace-normalised. */
  rest: string;
  servers: Map<string, Server>;
}

const key = (backend: string, server: string) => `${backend}/${server}`;

const SERVER_LINE = /^\s+server\s+(\S+)\s+(.*)$/;

/**
 * Lines compare with whitespace runs collapsed: a difference there only costs
 * an unneeded reload. Server lines are split into words; one with quotes,
 * backslashes or a comment goes through haproxy's tokenizer instead.
 */
function skeleton(text: string): Skeleton {
  const rest: string[] = [];
  const servers = new Map<string, Server>();
  let backend: string | null = null;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (/^\S/.test(line)) {
      const words = line.trim().split(/\s+/);
      backend = words[0] === 'backend' ? words[1] ?? null : null;
    }
    const m = backend !== null ? SERVER_LINE.exec(line) : null;
    if (m) {
      servers.set(key(backend!, m[1]!), { backend: backend!, name: m[1]!, line });
    } else {
      rest.push(line.trim().replace(/\s+/g, ' '));
    }
  }
  return { rest: rest.join('\n'), servers };
}

/** The words after `server <name>`. */
function argsOf(line: string): string[] {
  const words = /["'\\#]/.test(line) ? tokenizeLine(line).words : line.trim().split(/\s+/);
  return words.slice(2);
}

/**
 * Flags and keyword arguments of a server line, without weight, `disabled`
 * and `init-state`: init-state acts only when haproxy loads a config, and the
 * agent adds it itself to new members of configs that lack it.
 */
function identity(args: string[]): string {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === 'weight' || args[i] === 'init-state') i++;
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
    const was = before.servers.get(k);
    if (was && was.line.trim() === s.line.trim()) continue;
    const args = argsOf(s.line);
    const checked = args.includes('check');
    const enabled = !args.includes('disabled');
    if (!was) {
      adds.push({ kind: 'add', backend: s.backend, server: s.name, args, checked, enabled });
      continue;
    }
    const wasArgs = argsOf(was.line);
    if (identity(wasArgs) !== identity(args)) {
      return { steps: [], reloadReason: `member ${k} changed beyond weight and admin state` };
    }
    const w = weightOf(args);
    if (w !== weightOf(wasArgs)) changes.push({ kind: 'weight', backend: s.backend, server: s.name, weight: w });
    const wasEnabled = !wasArgs.includes('disabled');
    if (wasEnabled && !enabled) changes.push({ kind: 'admin-down', backend: s.backend, server: s.name });
    if (!wasEnabled && enabled) {
      changes.push({ kind: 'admin-up', backend: s.backend, server: s.name, checked, initState: args.includes('init-state'), rise: riseOf(args) });
    }
  }
  for (const [k, s] of before.servers) {
    if (!after.servers.has(k)) removes.push({ kind: 'remove', backend: s.backend, server: s.name });
  }
  // New capacity first, removals last: a replaced member leaves after its successor joined.
  return { steps: [...adds, ...changes, ...removes], reloadReason: null };
}
