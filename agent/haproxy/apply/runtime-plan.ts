// Can a new config be reached from the running one through haproxy's runtime
// API, without a reload? Only when everything but server lines is the same
// (or differs only in a global setting haproxy may keep until its next
// reload: KEPT_UNTIL_RELOAD), and the server lines differ in ways the
// runtime API can express: a member
// added or removed, its weight, its admin state. Anything else (an address,
// check options, backup, a new backend) needs a reload. Pure.
import { admit, HOLD_DOWN, type Admission } from '../../model/admission.js';
import { changedRegion } from '../config/changed-region.js';
import { firstUnsafeWord } from '../process/cli-words.js';
import { readConfig, type ServerLine } from '../config/config-reader.js';
import { tokenizeLine } from '../config/tokenizer.js';
import { memberKey } from '../../model/names.js';

/** How a member added or put back in service at runtime gets traffic (admission.ts), and the `rise` its checks need. */
interface Admitted {
  admission: Admission;
  rise: number;
}

export type RuntimeStep =
  | ({ kind: 'add'; backend: string; server: string /** words after `server <name>` */; args: string[]; checked: boolean; enabled: boolean } & Admitted)
  | { kind: 'remove'; backend: string; server: string }
  /** Removed the way a reload removes it (API 1.0): no new traffic, its sessions end on their own, then deleted (retired.ts). */
  | { kind: 'retire'; backend: string; server: string }
  | { kind: 'weight'; backend: string; server: string; weight: number }
  | { kind: 'admin-down'; backend: string; server: string }
  | ({ kind: 'admin-up'; backend: string; server: string } & Admitted);

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
  /** The lines other than server lines, whitespace-normalised. */
  rest: string;
  servers: Map<string, Server>;
}

/**
 * `server <name> ...` inside a section: the name, else null. Found without
 * the tokenizer: most lines of a changed region are compared as written and
 * never split. A name the tokenizer would read otherwise (quoted, escaped)
 * is then not the name readConfig has, its facts are not found, and the
 * plan reloads.
 */
function serverName(line: string): string | null {
  let i = 0;
  while (i < line.length && (line[i] === ' ' || line[i] === '\t')) i++;
  if (i === 0 || !line.startsWith('server', i)) return null;
  const after = line[i + 6];
  if (after !== ' ' && after !== '\t') return null;
  const name = line.slice(i + 7).trimStart();
  const end = name.search(/\s/);
  return end < 0 ? null : name.slice(0, end);
}

/**
 * A section line's keyword and name ("backend", "pool-1"). Read with the
 * tokenizer the config reader uses, so the backend a server is keyed under
 * here is the one its facts are found under (readConfig), whatever quotes or
 * comments the section line holds.
 */
interface Section {
  keyword: string | null;
  name: string | null;
}

function sectionOf(sectionLine: string): Section {
  const words = tokenizeLine(sectionLine).words;
  return { keyword: words[0] ?? null, name: words[1] ?? null };
}

const backendOf = (section: Section | null): string | null => (section?.keyword === 'backend' ? section.name : null);

/** The section the line at offset `at` is in (null: none), from the section line above it. */
function sectionAbove(text: string, at: number): Section | null {
  let end = at - 1; // the '\n' ending the line above
  while (end > 0) {
    const begin = text.lastIndexOf('\n', end - 1) + 1;
    const line = text.slice(begin, end);
    end = begin - 1;
    if (line.trim() === '' || !/^\S/.test(line)) continue;
    return sectionOf(line);
  }
  return null;
}

/**
 * Global settings a running haproxy may keep at the value it loaded until
 * its next reload: a change to them alone reloads nothing. Listed, not
 * guessed. `tune.ssl.cachesize`: Octavia 19 (LP #2119987) sizes the TLS
 * session cache from the amphora's free memory at each update, so each
 * update of a load balancer with a TLS listener renders another number. A
 * reload for it would restart every admission in progress (issue 32) and
 * hold two caches while the old worker drains: the memory the sizing
 * exists to save.
 */
const KEPT_UNTIL_RELOAD = new Set(['tune.ssl.cachesize']);

/** A `global` line that only sets one of KEPT_UNTIL_RELOAD (its words as haproxy reads them). */
function keptUntilReload(section: Section | null, line: string): boolean {
  if (section?.keyword !== 'global') return false;
  const words = tokenizeLine(line).words;
  return words.length === 2 && KEPT_UNTIL_RELOAD.has(words[0]!);
}

/**
 * Lines compare with whitespace runs collapsed: a difference there only costs
 * an unneeded reload. `backend`: the section the first line is in.
 */
function skeleton(lines: string[], section: Section | null): Skeleton {
  const rest: string[] = [];
  const servers = new Map<string, Server>();
  for (const line of lines) {
    if (line.trim() === '') continue;
    if (/^\S/.test(line)) section = sectionOf(line);
    const backend = backendOf(section);
    const name = backend !== null ? serverName(line) : null;
    if (name !== null) {
      servers.set(memberKey(backend!, name), { backend: backend!, name, line });
    } else if (!keptUntilReload(section, line)) {
      rest.push(line.trim().replace(/\s+/g, ' '));
    }
  }
  return { rest: rest.join('\n'), servers };
}

/**
 * The skeletons of the lines where two configs differ (changed-region.ts).
 * If the changed lines other than server lines are equal, so are their
 * section lines, and the common end's servers stay in the same backends.
 */
function changedSkeletons(beforeText: string, afterText: string): { before: Skeleton; after: Skeleton } {
  const { start, beforeEnd, afterEnd } = changedRegion(beforeText, afterText);
  const section = sectionAbove(afterText, start);
  return {
    before: skeleton(beforeText.slice(start, beforeEnd).split('\n'), section),
    after: skeleton(afterText.slice(start, afterEnd).split('\n'), section),
  };
}

/** The words after `server <name>`. */
function argsOf(line: string): string[] {
  // haproxy's words: JavaScript's \s would also split at Unicode spaces, which haproxy reads as word characters.
  const words = tokenizeLine(line).words;
  return words.slice(2);
}

/**
 * Flags and keyword arguments of a server line, without weight, `disabled`
 * and `init-state`: init-state acts only when a member is admitted, and the
 * agent writes it itself on the lines of new members it loads (admission.ts).
 */
function identity(args: string[]): string {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === 'weight' || args[i] === HOLD_DOWN[0]) i++;
    else if (args[i] !== 'disabled') out.push(args[i]!);
  }
  return out.join(' ');
}

/** default-server keywords an add line can spell out, with the number of values each takes. */
const SPELLED_OUT = new Map([
  ['check', 0],
  ['no-check', 0],
  ['inter', 1],
  ['fastinter', 1],
  ['downinter', 1],
  ['fall', 1],
  ['rise', 1],
  ['port', 1],
  ['addr', 1],
  ['weight', 1],
]);

/**
 * The words `add server` needs for a line that inherits `default-server`
 * words: haproxy applies those when it loads a config, `add server` ignores
 * them, so a member added at runtime would lose the checks a reload gives it.
 * The inherited check settings are spelled out after the address, before
 * the line's own words; a keyword the line sets itself is left to the line.
 * Any other default-server keyword may mean more than the agent knows how to
 * carry: the answer is then why the member needs a reload.
 */
function withDefaults(args: string[], defaults: string[]): { kind: 'spelled'; args: string[] } | { kind: 'refused'; reason: string } {
  const inherited = new Map<string, string[]>();
  for (let i = 0; i < defaults.length; i++) {
    const kw = defaults[i]!;
    const arity = SPELLED_OUT.get(kw);
    if (arity === undefined) return { kind: 'refused', reason: `add server ignores default-server, and "${kw}" is not one the agent spells out` };
    const word = kw === 'no-check' ? 'check' : kw; // the last of check / no-check counts
    inherited.delete(word);
    inherited.set(word, kw === 'no-check' ? [] : [kw, ...defaults.slice(i + 1, i + 1 + arity)]);
    i += arity;
  }
  const own = new Set(args.slice(1).map((w) => (w === 'no-check' ? 'check' : w)));
  const spelled = [...inherited].filter(([word]) => !own.has(word)).flatMap(([, words]) => words);
  return { kind: 'spelled', args: [args[0]!, ...spelled, ...args.slice(1)] };
}

function weightOf(args: string[]): number {
  const i = args.indexOf('weight');
  return i >= 0 ? Number(args[i + 1]) : 1;
}

/** `returns`: put back in service (admin up) rather than added. */
function admitted(fact: ServerLine, returns: boolean): Admitted {
  return { admission: admit({ checked: fact.checked, initStateOnLine: fact.initStateOnLine, path: 'runtime', returns }), rise: fact.rise };
}

/** Why a step's words cannot be spliced into a CLI command as written (cli-words.ts), else null. */
function unspliceable(step: RuntimeStep): string | null {
  const bad = firstUnsafeWord([step.backend, step.server, ...(step.kind === 'add' ? step.args : [])]);
  return bad === null ? null : `member ${memberKey(step.backend, step.server)}: ${JSON.stringify(bad)} would not reach haproxy's CLI as one word`;
}

export function planRuntime(runningText: string, newText: string): RuntimePlan {
  const { before, after } = changedSkeletons(runningText, newText);
  if (before.rest !== after.rest) return { steps: [], reloadReason: 'more than members changed' };
  // Whether a member is checked is the reader's answer (default-server, no-check, track), as on a reload;
  // read only when a member changed.
  let facts: Map<string, ServerLine> | null = null;
  const factOf = (k: string) => {
    if (facts === null) {
      facts = new Map();
      for (const b of readConfig(newText).backends.values()) for (const s of b.servers) facts.set(memberKey(s.backend, s.name), s);
    }
    return facts.get(k);
  };

  const adds: RuntimeStep[] = [];
  const changes: RuntimeStep[] = [];
  const removes: RuntimeStep[] = [];
  for (const [k, s] of after.servers) {
    const was = before.servers.get(k);
    if (was && (was.line === s.line || was.line.trim() === s.line.trim())) continue;
    const args = argsOf(s.line);
    const fact = factOf(k);
    if (!fact) return { steps: [], reloadReason: `member ${k}: server line not understood` };
    const { checked, defaultServer: defaults } = fact;
    const enabled = !args.includes('disabled');
    if (!was) {
      const spelled = defaults.length > 0 ? withDefaults(args, defaults) : { kind: 'spelled' as const, args };
      if (spelled.kind === 'refused') return { steps: [], reloadReason: `member ${k} added: ${spelled.reason}` };
      const addArgs = spelled.args;
      adds.push({ kind: 'add', backend: s.backend, server: s.name, args: addArgs, checked, enabled, ...admitted(fact, false) });
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
      changes.push({ kind: 'admin-up', backend: s.backend, server: s.name, ...admitted(fact, true) });
    }
  }
  for (const [k, s] of before.servers) {
    if (!after.servers.has(k)) removes.push({ kind: 'remove', backend: s.backend, server: s.name });
  }
  // New capacity first, removals last: a replaced member leaves after its successor joined.
  const steps = [...adds, ...changes, ...removes];
  for (const step of steps) {
    const why = unspliceable(step);
    if (why !== null) return { steps: [], reloadReason: why };
  }
  return { steps, reloadReason: null };
}
