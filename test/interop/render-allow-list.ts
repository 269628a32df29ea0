// Every intentional difference between our rendering and Octavia 11.0.0's
// JinjaTemplater, with its reason. The parity test applies these rewrites
// (most turn Octavia's text into what we mean to write; a few take away what
// we add) and then requires the two configs to be semantically identical.
// Anything not listed here is a parity bug.
import type { LoadBalancerSpec } from '../../agent/spec/types.js';
import { haproxyWord } from '../../agent/render/haproxy-view.js';
import { granularityFor } from '../../agent/spec/netmask.js';

export interface Allowance {
  id: string;
  reason: string;
  /** Rewrite Octavia's haproxy.cfg. */
  theirs?: (text: string, spec: LoadBalancerSpec) => string;
  /** Rewrite ours. */
  ours?: (text: string, spec: LoadBalancerSpec) => string;
}

/** The config cut before every section header (an unindented line that is not a comment). */
function sections(text: string): string[] {
  return text.split(/\n(?=[^\s#])/);
}

/** Apply `fn` to the body lines of each section (`backend x`, `frontend x`, ...). */
function perSection(text: string, fn: (body: string[]) => string[]): string {
  return sections(text).map((block) => {
    const [header, ...body] = block.split('\n');
    return [header, ...fn(body)].join('\n');
  }).join('\n');
}

const bracket = (ip: string) => (ip.includes(':') && !ip.startsWith('[') ? `[${ip}]` : ip);
/** "2001:db8::5:80" -> "[2001:db8::5]:80"; IPv4 unchanged. */
const bracketHostPort = (hp: string) => {
  const i = hp.lastIndexOf(':');
  const host = hp.slice(0, i);
  return host.includes(':') ? `[${host}]${hp.slice(i)}` : hp;
};

const HTML: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&#34;': '"', '&#39;': "'" };

export const ALLOWANCES: Allowance[] = [
  {
    id: 'http-check-form',
    reason: "11.0.0 writes 'option httpchk GET / HTTP/1.1\\r\\nHost:\\ x' when http_version is set: haproxy >= 2.7 refuses it. " +
      "We write Octavia master's form (ff29dcd78): 'option httpchk GET / HTTP/1.1' plus 'http-check send hdr Host x'.",
    theirs: (text) => text
      .replace(/^( +)option httpchk (\S+) (\S+) HTTP\/(\S+?)\\r\\nHost:\\ (\S+)$/gm, '$1option httpchk $2 $3 HTTP/$4\n$1http-check send hdr Host $5')
      .replace(/^( +option httpchk \S+ \S+ HTTP\/\S+?)\\r\\n$/gm, '$1'),
  },
  {
    id: 'tls-hello-check',
    reason: "TLS-HELLO: 11.0.0's 'option ssl-hello-chk' sends an SSLv3 hello, which TLS-1.2-only members refuse (Octavia master " +
      "dropped it, 8e7c2737b). We check with a real TLS handshake: 'check-ssl verify none' on the servers.",
    theirs: (text) => perSection(text, (body) => {
      if (!body.some((l) => l.trim() === 'option ssl-hello-chk')) return body;
      return body.filter((l) => l.trim() !== 'option ssl-hello-chk')
        .map((l) => (/^\s+server /.test(l) ? l.replace(/ check /, ' check check-ssl verify none ') : l));
    }),
  },
  {
    id: 'file-type-equal-to',
    reason: "FILE_TYPE EQUAL_TO: 11.0.0 writes 'path_end -m str jpg', which compares the whole path and never matches " +
      "(haproxy issue 2567); we write 'path_end jpg' as Octavia master does (c64c5f544).",
    theirs: (text) => text.replace(/^( +acl \S+ path_end) -m str /gm, '$1 '),
  },
  {
    id: 'no-html-escaping',
    reason: "Octavia renders with Jinja autoescape, so '&', '<', '>' and quotes in L7 values and redirect URLs reach haproxy as " +
      "'&amp;', '&lt;', ... (a redirect to '?a=1&b=2' becomes '?a=1&amp;b=2'). We escape for haproxy only.",
    theirs: (text) => text.replace(/&(amp|lt|gt|#34|#39);/g, (m) => HTML[m]!),
  },
  {
    id: 'haproxy-escaping',
    reason: "Octavia escapes only spaces and backslashes in L7 values and nothing in redirect targets, so haproxy cuts an ACL at " +
      "'#' (a comment) and pairs quotes. We also escape '#', '\"' and \"'\" so the value reaches haproxy as written. The " +
      'rewrite takes the value Octavia meant and escapes it our way.',
    theirs: (text) => text
      .replace(/^( +acl \S+ \S+(?: -i)?(?: -m \S+| eq)?) (.+)$/gm,
        (_m, head: string, value: string) => `${head} ${haproxyWord(value.replace(/\\([\\ ])/g, '$1'))}`)
      .replace(/^( +redirect(?: code \d+)? (?:location|prefix)) (\S+)/gm, (_m, head: string, target: string) => `${head} ${haproxyWord(target)}`),
  },
  {
    id: 'ipv6-brackets',
    reason: "Octavia writes IPv6 addresses bare ('bind 2001:db8::2:80', 'addr 2001:db8::9'). haproxy reads the last ':' group " +
      "as a port, so 'addr 2001:db8::9' is refused and an address ending in '::' is misread. We bracket every IPv6 address.",
    theirs: (text) => text
      .replace(/^( +bind )(\S+)/gm, (_m, p: string, hp: string) => p + bracketHostPort(hp))
      .replace(/^( +server \S+ )(\S+)/gm, (_m, p: string, hp: string) => p + bracketHostPort(hp))
      .replace(/^( +peer \S+ )(\S+)/gm, (_m, p: string, hp: string) => p + bracketHostPort(hp))
      .replace(/ addr (\S+)/g, (_m, ip: string) => ` addr ${bracket(ip)}`),
  },
  {
    id: 'source-ip-stick-table',
    reason: "SOURCE_IP persistence: 'stick-table type ip' cannot hold IPv6 clients; 'type ipv6' holds both (Octavia master, 2aac2a8d7).",
    theirs: (text) => text.replace(/^( +stick-table type) ip /gm, '$1 ipv6 '),
  },
  {
    id: 'maxconn-disabled-listeners',
    reason: "11.0.0 counts disabled listeners into the global maxconn; they take no connections, so we leave them out " +
      '(Octavia master, 21682f705).',
    theirs: (text, spec) => {
      const limit = (l: LoadBalancerSpec['listeners'][number]) => (l.connection_limit && l.connection_limit > 0 ? l.connection_limit : 50000);
      const enabled = spec.listeners.filter((l) => !['UDP', 'SCTP'].includes(l.protocol) && l.admin_state_up !== false);
      const sum = enabled.reduce((n, l) => n + limit(l), 0);
      return text.replace(/^( +maxconn )\d+$/m, `$1${sum > 0 && sum < 1000000 ? sum : 1000000}`);
    },
  },
  {
    id: 'unused-redirect-backend',
    reason: 'Octavia gives the redirect pool of a policy whose rules are all disabled a backend that nothing routes to; ' +
      'we render backends only for pools a frontend uses.',
    theirs: (text) => {
      const used = new Set([...text.matchAll(/^ +(?:default_backend|use_backend) (\S+)/gm)].map((m) => m[1]!));
      return sections(text).filter((block) => {
        const m = /^backend (\S+)/.exec(block);
        return !m || used.has(m[1]!) || m[1] === 'prometheus-exporter-internal';
      }).join('\n');
    },
  },
  {
    id: 'hsts',
    reason: "HSTS (hsts_max_age, hsts_include_subdomains, hsts_preload) is Octavia master's (c90754751); 11.0.0 has no such " +
      "fields, so its rendering lacks the 'Strict-Transport-Security' line we write.",
    ours: (text) => text.replace(/^ +http-response set-header Strict-Transport-Security .*\n/gm, ''),
  },
  {
    id: 'init-state',
    reason: "New-member protection: on a haproxy that applies it at start-up we add 'init-state fully-down' to members of " +
      'monitored pools (the reason this agent exists). The parity render targets a haproxy without it; this removes it anyway.',
    ours: (text) => text.replace(/ init-state fully-down/g, ''),
  },
];

/** keepalived text cut into its top-level blocks ("name ... { ... }", nested braces kept) and the lines between. */
function keepalivedBlocks(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current: string[] = [];
  for (const line of text.split('\n')) {
    current.push(line);
    const code = line.replace(/#.*/, '');
    depth += (code.match(/\{/g) ?? []).length - (code.match(/\}/g) ?? []).length;
    if (depth === 0) {
      out.push(current.join('\n'));
      current = [];
    }
  }
  if (current.length > 0) out.push(current.join('\n'));
  return out;
}

/** Rewrite each "virtual_server group ipvN-group { ... }" block. */
function perVirtualServer(text: string, fn: (block: string, ipVersion: 4 | 6) => string): string {
  return keepalivedBlocks(text).map((b) => {
    const m = /^\s*virtual_server group ipv([46])-group \{/m.exec(b);
    return m ? fn(b, Number(m[1]) as 4 | 6) : b;
  }).join('\n');
}

export const LVS_ALLOWANCES: Allowance[] = [
  {
    id: 'lvs-empty-virtual-server',
    reason: 'A virtual server without an enabled real server (a family none of the members has, all members disabled, ' +
      "the pool disabled): Octavia 11 to 19 write it, keepalived ignores it ('has no real servers - ignoring') and " +
      "`keepalived -t` on an amphora calls the config invalid. We leave it out; traffic is the same (none).",
    theirs: (text) => {
      const blocks = keepalivedBlocks(text);
      const empty = new Set(blocks.filter((b) => /^\s*virtual_server group (\S+) \{/m.test(b) && !/\breal_server\b/.test(b))
        .map((b) => /virtual_server group (\S+) \{/.exec(b)![1]!));
      return blocks.filter((b) => {
        const m = /^\s*virtual_server(?:_group| group) (\S+) \{/m.exec(b);
        return !(m && empty.has(m[1]!));
      }).join('\n');
    },
  },
  {
    id: 'lvs-granularity-per-family',
    reason: "SOURCE_IP persistence_granularity: Octavia 11 to 19 write the spec's netmask on the virtual servers of both " +
      'families. keepalived then skips every real server of the other family ("Address family of virtual server and real ' +
      'server ... don\'t match"): an IPv6 member of a pool with an IPv4 granularity gets no traffic. The mask applies to its ' +
      'own family (an IPv6 one as its prefix length); the other family keeps per-address persistence.',
    theirs: (text, spec) => {
      const listener = spec.listeners.find((l) => text.includes(`Listener ${l.id}\n`));
      const pool = listener?.default_pool ?? spec.pools.find((p) => p.id === listener?.default_pool_id);
      const mask = pool?.session_persistence?.persistence_granularity;
      if (mask === undefined) return text;
      return perVirtualServer(text, (b, v) => b.replace(/(persistence_granularity )(\S+)/, (_, k: string) => `${k}${granularityFor(mask, v)}`));
    },
  },
  {
    id: 'lvs-ipv6-granularity',
    reason: "SOURCE_IP persistence on the IPv6 group: 11.0.0 writes the IPv4 mask 255.255.255.255, which keepalived cannot " +
      'apply to IPv6; we write 128 (Octavia master, dd5d3cca6).',
    theirs: (text, spec) => {
      // Only where the spec leaves the granularity out; its header names the listener.
      const listener = spec.listeners.find((l) => text.includes(`Listener ${l.id}\n`));
      const pool = listener?.default_pool ?? spec.pools.find((p) => p.id === listener?.default_pool_id);
      if (pool?.session_persistence?.persistence_granularity !== undefined) return text;
      return text.replace(/(virtual_server group ipv6-group \{[^}]*?persistence_granularity )255\.255\.255\.255/s, '$1128');
    },
  },
];

export function applyAllowances(list: Allowance[], side: 'theirs' | 'ours', text: string, spec: LoadBalancerSpec): string {
  return list.reduce((t, a) => a[side]?.(t, spec) ?? t, text);
}
