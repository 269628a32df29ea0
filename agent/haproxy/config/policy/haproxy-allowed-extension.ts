// The operator's additions to the allow-list (haproxy-allowed.ts), for custom
// Octavia templates: [amphora_agent] config_policy_extension names a file,
// read only from the amphora's own amphora-agent.conf. One entry a line,
// `#` starts a comment:
//
//   line <section> <words...>     a line pattern, as in haproxy-allowed.ts
//                                 (e.g. `line backend option httplog`)
//   server-option <kw> [<value>]  an option of server lines, a flag without value
//   bind-option <kw> [<value>]    an option of bind lines
//   fetch <name>                  a sample fetch allowed in expressions
//   converter <name>              a converter allowed after a fetch
//
// A value is a slot (`<int>`, `<time>`, `<text>`...) or `{a|b}`.
import { readFileSync } from 'node:fs';
import { ConfigError } from '../../../config/agent-config.js';
import type { AllowList } from './haproxy-allowed.js';
import { SLOT_NAMES } from './haproxy-slots.js';

/** An extension file the agent cannot use: the operator's mistake, named with its line (a 400 that says so). */
export class PolicyExtensionError extends ConfigError {}

const VALUE = /^(?:<([a-z-]+)>|\{[^{}|\s]+(?:\|[^{}|\s]+)*\})$/;

function checkValue(v: string, where: string): void {
  const m = VALUE.exec(v);
  if (!m || (m[1] !== undefined && !SLOT_NAMES.has(m[1]))) throw new PolicyExtensionError(`${where}: ${JSON.stringify(v)} is not a slot or {a|b}`);
}

export function parsePolicyExtension(text: string, source: string): AllowList {
  const out: AllowList = { lines: [], serverOptions: {}, bindOptions: {}, fetches: [], converters: [] };
  for (const [i, raw] of text.split('\n').entries()) {
    const words = raw
      .replace(/#.*/, '')
      .trim()
      .split(/\s+/)
      .filter((w) => w !== '');
    if (words.length === 0) continue;
    const where = `${source} line ${i + 1}`;
    const [kind, ...rest] = words as [string, ...string[]];
    if (kind === 'line' && rest.length > 0) {
      for (const w of rest.slice(1)) if (w.startsWith('<') || w.startsWith('{')) checkValue(w.replace(/\?$/, ''), where);
      out.lines.push(rest.join(' '));
    } else if ((kind === 'server-option' || kind === 'bind-option') && (rest.length === 1 || rest.length === 2)) {
      if (rest[1] !== undefined) checkValue(rest[1], where);
      (kind === 'server-option' ? out.serverOptions : out.bindOptions)[rest[0]!] = rest[1] ?? '';
    } else if ((kind === 'fetch' || kind === 'converter') && rest.length === 1 && /^[a-z0-9_.]+$/.test(rest[0]!)) {
      (kind === 'fetch' ? out.fetches : out.converters).push(rest[0]!);
    } else {
      throw new PolicyExtensionError(`${where}: expected line/server-option/bind-option/fetch/converter, got ${JSON.stringify(raw.trim())}`);
    }
  }
  return out;
}

/** Read the extension file named by the amphora's configuration. */
export function readPolicyExtension(path: string): AllowList {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new PolicyExtensionError(`config_policy_extension ${path}: ${(e as Error).message}`);
  }
  return parsePolicyExtension(text, path);
}

/** The allow-list with the operator's additions. */
export function extendAllowList(base: AllowList, ext: AllowList | undefined): AllowList {
  if (!ext) return base;
  return {
    lines: [...base.lines, ...ext.lines],
    serverOptions: { ...base.serverOptions, ...ext.serverOptions },
    bindOptions: { ...base.bindOptions, ...ext.bindOptions },
    fetches: [...base.fetches, ...ext.fetches],
    converters: [...base.converters, ...ext.converters],
  };
}
