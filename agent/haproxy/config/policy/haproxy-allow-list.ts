// The allow-list compiled for matching: its patterns by `section keyword`,
// its option and sample sets, and the fast path that accepts most member
// server lines without a tokenized read. Compiled once for Octavia's list
// and once per operator extension; haproxy-config.ts matches lines against
// the result. Pure.
import type { PolicyContext } from './types.js';
import { OCTAVIA_ALLOWED, type AllowList } from './haproxy-allowed.js';
import { extendAllowList } from './haproxy-allowed-extension.js';
import { isAddress, REST_SLOTS, SLOT_NAMES, WORD_SLOTS } from './haproxy-slots.js';

/** One element of a compiled pattern. */
export interface Token {
  /** The word as is, a choice of words, a slot, or a slot that takes the rest of the line. */
  kind: 'word' | 'choice' | 'slot' | 'rest';
  words?: Set<string>;
  slot?: string;
  optional?: boolean;
}

export interface Pattern {
  text: string;
  tokens: Token[];
}

function compileToken(t: string): Token {
  const choice = /^\{(.+)\}$/.exec(t);
  if (choice) return { kind: 'choice', words: new Set(choice[1]!.split('|')) };
  const slot = /^<([a-z-]+)>(\?)?$/.exec(t);
  if (slot) {
    if (!SLOT_NAMES.has(slot[1]!)) throw new Error(`unknown slot <${slot[1]}> in the allow-list`);
    return { kind: REST_SLOTS.includes(slot[1]!) ? 'rest' : 'slot', slot: slot[1]!, optional: slot[2] === '?' };
  }
  return { kind: 'word', words: new Set([t]) };
}

/** An allow-list ready for matching: patterns by `section keyword`. */
export interface CompiledAllowList {
  list: AllowList;
  patterns: Map<string, Pattern[]>;
  fetches: Set<string>;
  converters: Set<string>;
  serverOptions: Map<string, Token | null>;
  bindOptions: Map<string, Token | null>;
  /** A member's server line that needs no tokenized read (see plainServerLine). */
  plainServer: (line: string) => boolean;
}

export function compileAllowList(list: AllowList): CompiledAllowList {
  const patterns = new Map<string, Pattern[]>();
  for (const text of list.lines) {
    const [section, ...rest] = text.split(' ') as [string, ...string[]];
    // `frontend acl <id> <acl>` is keyed `frontend acl`; a section's own line (`frontend <id>`, `global`) by the section.
    const keyword = rest.length > 0 && !/^[<{]/.test(rest[0]!) ? rest[0]! : section;
    const tokens = (keyword === section ? rest : rest.slice(1)).map(compileToken);
    const key = `${section} ${keyword}`;
    patterns.set(key, [...(patterns.get(key) ?? []), { text, tokens }]);
  }
  const options = (o: Record<string, string>) => new Map(Object.entries(o).map(([k, v]) => [k, v === '' ? null : compileToken(v)]));
  const serverOptions = options(list.serverOptions);
  return {
    list,
    patterns,
    fetches: new Set(list.fetches),
    converters: new Set(list.converters),
    serverOptions,
    bindOptions: options(list.bindOptions),
    plainServer: plainServerLine(serverOptions),
  };
}

/** Plain words only (no quote, escape, comment, `$`), a name, something like an address, then option words. */
const PLAIN_SERVER_WORDS = /^[ \t]+server[ \t]+[\w.:-]{1,255}[ \t]+([0-9A-Fa-f:.[\]]+)((?:[ \t]+[\w.:-]+)*)[ \t]*$/;
/** The same with an IPv4 address and port the pattern itself checks (most members: no isIP() call). */
const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const PORT = '(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}|0)';
const PLAIN_SERVER_V4 = new RegExp(`^[ \\t]+server[ \\t]+[\\w.:-]{1,255}[ \\t]+(?:${OCTET}\\.){3}${OCTET}:${PORT}((?:[ \\t]+[\\w.:-]+)*)[ \\t]*$`);
const SPACES = /[ \t]+/;

/**
 * A member's server line that the allow-list accepts, told without a
 * tokenized read (most of a 10,000-member config, and most of the policy's
 * time): plain words only, an IP address, and options whose values are
 * numbers, times, names or choices. Options with a file, an expression or
 * free text, and anything else, take the full read.
 */
function plainServerLine(options: Map<string, Token | null>): (line: string) => boolean {
  const values = new Map<string, ((w: string) => boolean) | null>();
  for (const [k, t] of options) {
    if (t === null) values.set(k, null);
    else if (t.kind === 'choice') values.set(k, (w) => t.words!.has(w));
    else if (t.slot === 'int' || t.slot === 'time' || t.slot === 'id') values.set(k, WORD_SLOTS[t.slot]!);
  }
  const tailOk = (tail: string): boolean => {
    const words = tail.split(SPACES);
    for (let i = 1; i < words.length; i++) {
      const value = values.get(words[i]!);
      if (value === undefined) return false;
      if (value !== null && (++i >= words.length || !value(words[i]!))) return false;
    }
    return true;
  };
  // The members of a pool share their options (`weight 1 check inter 5s fall 3 rise 2`) and come one after
  // another: comparing with the previous line's options is cheaper than hashing them into a cache.
  let lastTail = '';
  let lastOk = true;
  return (line) => {
    let tail: string;
    const v4 = PLAIN_SERVER_V4.exec(line);
    if (v4) tail = v4[1]!;
    else {
      const any = PLAIN_SERVER_WORDS.exec(line);
      if (!any || !isAddress(any[1]!)) return false;
      tail = any[2]!;
    }
    if (tail !== lastTail) {
      lastTail = tail;
      lastOk = tailOk(tail);
    }
    return lastOk;
  };
}

const DEFAULT_ALLOWED = compileAllowList(OCTAVIA_ALLOWED);
/** The fast path for the allow-list of Octavia's templates (exported for the tests). */
export const isPlainServerLine = DEFAULT_ALLOWED.plainServer;

const compiledExtensions = new WeakMap<AllowList, CompiledAllowList>();
/** Octavia's allow-list, or it with the context's extension (compiled once per extension). */
export function allowListFor(ctx: PolicyContext): CompiledAllowList {
  const ext = ctx.allowExtension;
  if (!ext) return DEFAULT_ALLOWED;
  let c = compiledExtensions.get(ext);
  if (!c) {
    c = compileAllowList(extendAllowList(OCTAVIA_ALLOWED, ext));
    compiledExtensions.set(ext, c);
  }
  return c;
}
