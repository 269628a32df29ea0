// What an uploaded keepalived config may say: an allow-list, derived from
// the templates of Octavia 11, 16 and 19 (KeepalivedJinjaTemplater's
// keepalived_base.template for VRRP, the LVS templates base.j2,
// keepalivedlvs.cfg.j2 and macros.j2 for UDP/SCTP listeners) and from the
// agent's own LVS render (templates/keepalived/lvs.cfg.njk) and VRRP track
// file (agent/keepalived/haproxy-track.ts).
//
// keepalived runs as root and runs what its config names: vrrp_script,
// notify* hooks, MISC_CHECK's misc_path, and reads what `include` names.
// API 1.0 takes these configs as text from the controller, so every line
// must be one those templates produce, with arguments of the shape they
// produce; the only programs are the ones Octavia and the agent install:
//  - VRRP: vrrp_script's `script <base_path>/vrrp/check_script.sh`;
//  - LVS: misc_path "<base_path>/lvs/check/udp_check.sh <ip> <port>" (UDP-CONNECT)
//    and "amphora-health-checker sctp -t <timeout> <ip> <port>" (SCTP).
// No template has a notify hook, global_defs or a script_user, so none is
// accepted. Words are read as keepalived reads them (../../keepalived/config-reader.ts).
// Pure: text and the amphora's paths in, violations out (1-based lines).
import { isIP, isIPv4 } from 'node:net';
import { haproxyTrackFile, udpCheckScript, vrrpCheckScript } from '../../../config/layout.js';
import { isPlainIp } from '../../../net/ip.js';
import { readKeepalivedConfig, type KeepalivedStatement } from '../../../keepalived/config-reader.js';
import type { PolicyViolation } from './types.js';

export interface KeepalivedPolicyContext {
  /** [haproxy_amphora] base_path: the check scripts are under it. */
  basePath: string;
  /** Network namespaces an LVS config may enter (Octavia's fixed amphora-haproxy, the agent's own). */
  namespaces: string[];
}

/** Octavia's network namespace, which its LVS template always names. */
export const OCTAVIA_NAMESPACE = 'amphora-haproxy';

/** Which upload the config came from: each has its own root keywords. */
export type KeepalivedConfigKind = 'vrrp' | 'lvs';

/** The programs keepalived may run, at the paths Octavia's controller and the agent write them. */
export function keepalivedScripts(basePath: string) {
  return {
    vrrpCheck: vrrpCheckScript(basePath),
    udpCheck: udpCheckScript(basePath),
    haproxyTrack: haproxyTrackFile(basePath),
  };
}

type Shape = (word: string, ctx: KeepalivedPolicyContext) => boolean;

const int =
  (max: number) =>
  (w: string): boolean =>
    /^\d{1,10}$/.test(w) && Number(w) <= max;
const cidr: Shape = (w) => {
  const [addr, len, extra] = w.split('/');
  if (extra !== undefined || len === undefined || !/^\d{1,3}$/.test(len)) return false;
  const v = isPlainIp(addr!) ? isIP(addr!) : 0;
  return v !== 0 && Number(len) <= (v === 4 ? 32 : 128);
};
/** A path as Octavia concatenates it (base_path + '/lvs/...'): repeated slashes are one. */
const samePath = (word: string, path: string) => word.replace(/\/+/g, '/') === path;

/** Placeholders of the patterns below: the argument shapes the templates produce. */
const SHAPES: Record<string, Shape> = {
  '<ip>': (w) => isPlainIp(w),
  '<cidr>': cidr,
  '<int>': int(4294967295),
  '<port>': (w) => int(65535)(w) && Number(w) > 0,
  '<number>': (w) => /^\d{1,9}(\.\d{1,6})?$/.test(w),
  '<name>': (w) => /^[A-Za-z0-9_.-]{1,128}$/.test(w),
  '<interface>': (w) => /^[A-Za-z0-9_.@-]{1,15}$/.test(w),
  '<password>': (w) => /^[\x21-\x7e]{1,64}$/.test(w),
  '<http-status>': (w) => /^[1-5]\d\d$/.test(w),
  '<url-path>': (w) => /^\/[\x21-\x7e]{0,1000}$/.test(w),
  // IPv4 masks for IPv4 groups (default 255.255.255.255), a prefix length for IPv6 (16+: 128).
  '<granularity>': (w) => isIPv4(w) || (int(128)(w) && Number(w) > 0),
  '<namespace>': (w, ctx) => ctx.namespaces.includes(w),
  '<vrrp-check-script>': (w, ctx) => samePath(w, keepalivedScripts(ctx.basePath).vrrpCheck),
  '<haproxy-track-file>': (w, ctx) => samePath(w, keepalivedScripts(ctx.basePath).haproxyTrack),
  '<udp-check-script>': (w, ctx) => samePath(w, keepalivedScripts(ctx.basePath).udpCheck),
  '<misc-path>': (w, ctx) => MISC_COMMANDS.some((p) => matches(w.split(' '), p, ctx)),
};

/** misc_path's command, split at spaces as keepalived splits it into argv. */
const MISC_COMMANDS = ['<udp-check-script> <ip> <port>', 'amphora-health-checker sctp -t <int> <ip> <port>'].map((p) => p.split(' '));

/** A pattern for a refusal's reason, with the paths of the amphora in place of their placeholders. */
function describe(pattern: string, ctx: KeepalivedPolicyContext): string {
  const scripts = keepalivedScripts(ctx.basePath);
  return pattern
    .replace('<vrrp-check-script>', scripts.vrrpCheck)
    .replace('<haproxy-track-file>', scripts.haproxyTrack)
    .replace(
      '<misc-path>',
      `"${MISC_COMMANDS.map((c) => c.join(' '))
        .join('" or "')
        .replace('<udp-check-script>', scripts.udpCheck)}"`,
    )
    .replace('<namespace>', ctx.namespaces.join(' or '));
}

function matches(words: string[], pattern: string[], ctx: KeepalivedPolicyContext): boolean {
  return words.length === pattern.length && pattern.every((p, i) => (SHAPES[p] ? SHAPES[p]!(words[i]!, ctx) : p === words[i]));
}

/**
 * A keyword's allowed forms: `args` are the patterns of the words after it
 * (any one may match); `block` is what its `{ ... }` holds, keywords (a
 * nested grammar) or `list` lines of plain values.
 */
interface Directive {
  args: string[];
  block?: Grammar | { list: string[] };
}
type Grammar = Record<string, Directive>;

const line = (...args: string[]): Directive => ({ args });

const VRRP_SCRIPT: Grammar = {
  script: line('<vrrp-check-script>'),
  interval: line('<int>'),
  fall: line('<int>'),
  rise: line('<int>'),
};

const VRRP_INSTANCE: Grammar = {
  // Octavia 11 renders the role; 16 and 19 leave it out.
  state: line('MASTER', 'BACKUP'),
  interface: line('<interface>'),
  virtual_router_id: line('<int>'),
  priority: line('<int>'),
  nopreempt: line(''),
  accept: line(''),
  garp_master_refresh: line('<int>'),
  garp_master_refresh_repeat: line('<int>'),
  advert_int: line('<number>'),
  authentication: { args: [''], block: { auth_type: line('PASS', 'AH'), auth_pass: line('<password>') } },
  unicast_src_ip: line('<ip>'),
  unicast_peer: { args: [''], block: { list: ['<ip>'] } },
  virtual_ipaddress: { args: [''], block: { list: ['<ip>'] } },
  virtual_ipaddress_excluded: { args: [''], block: { list: ['<ip>'] } },
  virtual_routes: {
    args: [''],
    block: {
      list: [
        '<cidr> dev <interface> src <ip> scope link table <int>',
        'default via <ip> dev <interface> onlink table <int>',
        '<cidr> dev <interface> gateway <ip> onlink table <int>',
      ],
    },
  },
  virtual_rules: { args: [''], block: { list: ['from <cidr> table <int> priority <int>'] } },
  track_script: { args: [''], block: { list: ['<name>'] } },
  // The agent's fast failover (haproxy-track.ts), which it adds to what it runs.
  track_file: { args: [''], block: { list: ['<name>'] } },
};

const VRRP: Grammar = {
  vrrp_script: { args: ['<name>'], block: VRRP_SCRIPT },
  vrrp_instance: { args: ['<name>'], block: VRRP_INSTANCE },
  vrrp_track_file: { args: ['<name>'], block: { file: line('<haproxy-track-file>'), weight: line('0') } },
};

const CONNECT: Grammar = {
  connect_ip: line('<ip>'),
  connect_port: line('<port>'),
  connect_timeout: line('<int>'),
};

const REAL_SERVER: Grammar = {
  weight: line('<int>'),
  uthreshold: line('<int>'),
  MISC_CHECK: { args: [''], block: { misc_path: line('<misc-path>'), misc_timeout: line('<int>') } },
  TCP_CHECK: { args: [''], block: CONNECT },
  HTTP_GET: {
    args: [''],
    block: { ...CONNECT, url: { args: [''], block: { path: line('<url-path>'), status_code: line('<http-status>') } } },
  },
};

const VIRTUAL_SERVER: Grammar = {
  lb_algo: line('rr', 'wrr', 'lc', 'wlc', 'sh'),
  lb_kind: line('NAT'),
  protocol: line('UDP', 'SCTP'),
  persistence_timeout: line('<int>'),
  persistence_granularity: line('<granularity>'),
  delay_loop: line('<int>'),
  delay_before_retry: line('<int>'),
  retry: line('<int>'),
  real_server: { args: ['<ip> <port>'], block: REAL_SERVER },
};

const LVS: Grammar = {
  net_namespace: line('<namespace>'),
  virtual_server_group: { args: ['<name>'], block: { list: ['<ip> <port>'] } },
  virtual_server: { args: ['group <name>'], block: VIRTUAL_SERVER },
};

const GRAMMARS: Record<KeepalivedConfigKind, Grammar> = { vrrp: VRRP, lvs: LVS };

const split = (pattern: string) => (pattern === '' ? [] : pattern.split(' '));
const isList = (b: Directive['block']): b is { list: string[] } => b !== undefined && Array.isArray((b as { list?: unknown }).list);

interface Level {
  /** What the block may hold; null inside a refused block, whose lines are not judged (they never run). */
  inside: Grammar | { list: string[] } | null;
  keyword: string;
}

/** The violations of an uploaded VRRP or LVS config, before anything is written or `keepalived -t` runs. */
export function checkKeepalivedConfig(text: string, kind: KeepalivedConfigKind, ctx: KeepalivedPolicyContext): PolicyViolation[] {
  const { statements, unreadable } = readKeepalivedConfig(text);
  const violations = [...unreadable];
  const stack: Level[] = [{ inside: GRAMMARS[kind], keyword: `${kind} config` }];
  const refuse = (s: KeepalivedStatement, directive: string, reason: string) => violations.push({ line: s.line, directive, reason });
  for (const s of statements) {
    const level = stack.at(-1)!;
    if (s.closes) {
      if (stack.length === 1) refuse(s, '}', 'closes no block');
      else stack.pop();
      continue;
    }
    const [keyword, ...args] = s.words as [string, ...string[]];
    if (level.inside === null) {
      if (s.opens) stack.push({ inside: null, keyword });
      continue;
    }
    if (isList(level.inside)) {
      if (s.opens) {
        refuse(s, keyword, `opens a block inside ${level.keyword}'s list`);
        stack.push({ inside: null, keyword });
      } else if (!level.inside.list.some((p) => matches(s.words, split(p), ctx))) {
        refuse(s, keyword, `not an entry Octavia's templates write in ${level.keyword}`);
      }
      continue;
    }
    const directive = Object.hasOwn(level.inside, keyword) ? level.inside[keyword]! : undefined;
    if (directive === undefined) {
      refuse(s, keyword, `not a keyword Octavia's templates or the agent write in ${level.keyword}`);
    } else if (!directive.args.some((p) => matches(args, split(p), ctx))) {
      const forms = directive.args.map((p) => describe(`${keyword} ${p}`.trim(), ctx)).join(' | ');
      refuse(s, keyword, `arguments not of the form Octavia's templates write (${forms})`);
    } else if (s.opens !== (directive.block !== undefined)) {
      refuse(s, keyword, s.opens ? 'takes no block' : "needs its block, opened with '{' on its line");
    }
    if (s.opens) stack.push({ inside: directive?.block ?? null, keyword });
  }
  if (stack.length > 1) {
    violations.push({ line: text.split('\n').length, directive: stack.at(-1)!.keyword, reason: "block not closed with '}'" });
  }
  return violations.sort((a, b) => a.line - b.line);
}
