// Every intentional difference between our rendering and Octavia's
// JinjaTemplater (11.0.0, 16.0.0, 19.0.0), with its reason and the releases it
// applies to. Octavia 19 is the reference: an entry that exists because an
// older release lacks what 19 does applies to that release only. The parity
// test applies these rewrites (most turn Octavia's text into what we mean to
// write; a few take away what we add) and then requires the two configs to be
// semantically identical. Anything not listed here is a parity bug.
import type { LoadBalancerSpec, PoolSpec } from '../../agent/model/spec/types.js';
import type { AmphoraFacts } from '../../agent/render/settings.js';
import { sslCacheSize } from '../../agent/render/amphora-tuning.js';
import { haproxyWord } from '../../agent/render/haproxy-words.js';
import { granularityFor } from '../../agent/model/spec/netmask.js';
import { TLS13_CIPHERSUITES } from '../../agent/model/spec/ciphers.js';

export type OctaviaRelease = 'octavia-11' | 'octavia-16' | 'octavia-19';
const ALL: OctaviaRelease[] = ['octavia-11', 'octavia-16', 'octavia-19'];

/** What a rewrite may look at besides the text: the spec, and the amphora facts both renderers were given. */
export interface AllowanceContext {
  spec: LoadBalancerSpec;
  amphora?: AmphoraFacts;
}

export interface Allowance {
  id: string;
  reason: string;
  /** The Octavia releases whose rendering differs from ours this way. */
  releases: OctaviaRelease[];
  /** Rewrite Octavia's haproxy.cfg. */
  theirs?: (text: string, spec: LoadBalancerSpec, ctx: AllowanceContext) => string;
  /** Rewrite ours. */
  ours?: (text: string, spec: LoadBalancerSpec, ctx: AllowanceContext) => string;
}

/** Pools with an enabled TLS-HELLO monitor, by id (spec.pools and inline default pools). */
function tlsHelloPools(spec: LoadBalancerSpec): Set<string> {
  const pools: PoolSpec[] = [...spec.pools, ...spec.listeners.flatMap((l) => (l.default_pool ? [l.default_pool] : []))];
  return new Set(pools.filter((p) => p.healthmonitor?.type === 'TLS-HELLO' && p.healthmonitor.admin_state_up !== false).map((p) => p.id));
}

/**
 * `ciphers X` on a bind or server line as Octavia 19 writes it: the TLS 1.3
 * names moved to `ciphersuites`, each list left out where the line's
 * no-tls* flags leave no version that uses it. Order kept.
 */
function splitCipherWord(line: string): string {
  return line.replace(/ ciphers (\S+)/, (_m, list: string) => {
    const names = list.split(':');
    const tls13 = names.filter((c) => TLS13_CIPHERSUITES.includes(c));
    const legacy = names.filter((c) => !TLS13_CIPHERSUITES.includes(c));
    const useTls13 = !/ no-tlsv13\b/.test(line);
    const useLegacy = !['no-sslv3', 'no-tlsv10', 'no-tlsv11', 'no-tlsv12'].every((f) => line.includes(` ${f}`));
    return (useLegacy && legacy.length > 0 ? ` ciphers ${legacy.join(':')}` : '') + (useTls13 && tls13.length > 0 ? ` ciphersuites ${tls13.join(':')}` : '');
  });
}

/** The config cut before every section header (an unindented line that is not a comment). */
function sections(text: string): string[] {
  return text.split(/\n(?=[^\s#])/);
}

/** Apply `fn` to the body lines of each section (`backend x`, `frontend x`, ...). */
function perSection(text: string, fn: (body: string[], header: string) => string[]): string {
  return sections(text)
    .map((block) => {
      const [header, ...body] = block.split('\n') as [string, ...string[]];
      return [header, ...fn(body, header)].join('\n');
    })
    .join('\n');
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
    releases: ['octavia-11', 'octavia-16'],
    reason:
      "11.0.0 and 16.0.0 write 'option httpchk GET / HTTP/1.1\\r\\nHost:\\ x' when http_version is set: haproxy >= 2.7 refuses it. " +
      "We write Octavia 19's form (ff29dcd78): 'option httpchk GET / HTTP/1.1' plus 'http-check send hdr Host x'.",
    theirs: (text) =>
      text
        .replace(/^( +)option httpchk (\S+) (\S+) HTTP\/(\S+?)\\r\\nHost:\\ (\S+)$/gm, '$1option httpchk $2 $3 HTTP/$4\n$1http-check send hdr Host $5')
        .replace(/^( +option httpchk \S+ \S+ HTTP\/\S+?)\\r\\n$/gm, '$1'),
  },
  {
    id: 'ssl-hello-chk',
    releases: ['octavia-11'],
    reason: "TLS-HELLO: 11.0.0's 'option ssl-hello-chk' sends an SSLv3 hello, which TLS-1.2-only members refuse (Octavia 16 " + 'dropped it, 8e7c2737b).',
    theirs: (text) => text.replace(/^ +option ssl-hello-chk\n/gm, ''),
  },
  {
    id: 'tls-hello-handshake',
    releases: ALL,
    reason:
      "TLS-HELLO: since dropping 'option ssl-hello-chk', Octavia 16 and 19 check a TLS-HELLO pool with a plain TCP " +
      'connect, which a member that accepts connections but no TLS passes. We check with a real TLS handshake: ' +
      "'check-ssl verify none' on the servers.",
    theirs: (text, spec) => {
      const pools = tlsHelloPools(spec);
      return perSection(text, (body, header) =>
        !pools.has(/^backend ([^:\s]+):/.exec(header)?.[1] ?? '')
          ? body
          : body.map((l) => (/^\s+server /.test(l) ? l.replace(/ check /, ' check check-ssl verify none ') : l)),
      );
    },
  },
  {
    id: 'file-type-equal-to',
    releases: ['octavia-11', 'octavia-16'],
    reason:
      "FILE_TYPE EQUAL_TO: 11.0.0 and 16.0.0 write 'path_end -m str jpg', which compares the whole path and never matches " +
      "(haproxy issue 2567); we write 'path_end jpg' as Octavia 19 does (c64c5f544).",
    theirs: (text) => text.replace(/^( +acl \S+ path_end) -m str /gm, '$1 '),
  },
  {
    id: 'no-html-escaping',
    releases: ALL,
    reason:
      "Octavia renders with Jinja autoescape, so '&', '<', '>' and quotes in L7 values and redirect URLs reach haproxy as " +
      "'&amp;', '&lt;', ... (a redirect to '?a=1&b=2' becomes '?a=1&amp;b=2'). We escape for haproxy only.",
    theirs: (text) => text.replace(/&(amp|lt|gt|#34|#39);/g, (m) => HTML[m]!),
  },
  {
    id: 'haproxy-escaping',
    releases: ALL,
    reason:
      'Octavia escapes only spaces and backslashes in L7 values and nothing in redirect targets, so haproxy cuts an ACL at ' +
      "'#' (a comment) and pairs quotes. We also escape '#', '\"' and \"'\" so the value reaches haproxy as written. The " +
      'rewrite takes the value Octavia meant and escapes it our way.',
    theirs: (text) =>
      text
        .replace(
          /^( +acl \S+ \S+(?: -i)?(?: -m \S+| eq)?) +(.+)$/gm,
          (_m, head: string, value: string) => `${head} ${haproxyWord(value.replace(/\\([\\ ])/g, '$1'))}`,
        )
        .replace(/^( +redirect(?: code \d+)? (?:location|prefix)) (\S+)/gm, (_m, head: string, target: string) => `${head} ${haproxyWord(target)}`),
  },
  {
    id: 'ipv6-brackets',
    releases: ALL,
    reason:
      "Octavia writes IPv6 addresses bare ('bind 2001:db8::2:80', 'addr 2001:db8::9'). haproxy reads the last ':' group " +
      "as a port, so 'addr 2001:db8::9' is refused and an address ending in '::' is misread. We bracket every IPv6 address.",
    theirs: (text) =>
      text
        .replace(/^( +bind )(\S+)/gm, (_m, p: string, hp: string) => p + bracketHostPort(hp))
        .replace(/^( +server \S+ )(\S+)/gm, (_m, p: string, hp: string) => p + bracketHostPort(hp))
        .replace(/^( +peer \S+ )(\S+)/gm, (_m, p: string, hp: string) => p + bracketHostPort(hp))
        .replace(/ addr (\S+)/g, (_m, ip: string) => ` addr ${bracket(ip)}`),
  },
  {
    id: 'source-ip-stick-table',
    releases: ['octavia-11'],
    reason: "SOURCE_IP persistence: 'stick-table type ip' cannot hold IPv6 clients; 'type ipv6' holds both (Octavia 16 and 19, 2aac2a8d7).",
    theirs: (text) => text.replace(/^( +stick-table type) ip /gm, '$1 ipv6 '),
  },
  {
    id: 'maxconn-disabled-listeners',
    releases: ['octavia-11'],
    reason: '11.0.0 counts disabled listeners into the global maxconn; they take no connections, so we leave them out ' + '(Octavia 16 and 19, 21682f705).',
    theirs: (text, spec) => {
      const limit = (l: LoadBalancerSpec['listeners'][number]) => (l.connection_limit && l.connection_limit > 0 ? l.connection_limit : 50000);
      const enabled = spec.listeners.filter((l) => !['UDP', 'SCTP'].includes(l.protocol) && l.admin_state_up !== false);
      const sum = enabled.reduce((n, l) => n + limit(l), 0);
      return text.replace(/^( +maxconn )\d+$/m, `$1${sum > 0 && sum < 1000000 ? sum : 1000000}`);
    },
  },
  {
    id: 'unused-redirect-backend',
    releases: ALL,
    reason:
      'Octavia gives the redirect pool of a policy whose rules are all disabled a backend that nothing routes to; ' +
      'we render backends only for pools a frontend uses.',
    theirs: (text) => {
      const used = new Set([...text.matchAll(/^ +(?:default_backend|use_backend) (\S+)/gm)].map((m) => m[1]!));
      return sections(text)
        .filter((block) => {
          const m = /^backend (\S+)/.exec(block);
          return !m || used.has(m[1]!) || m[1] === 'prometheus-exporter-internal';
        })
        .join('\n');
    },
  },
  {
    id: 'hsts',
    releases: ['octavia-11'],
    reason:
      "HSTS (hsts_max_age, hsts_include_subdomains, hsts_preload) is Octavia 16's and 19's (c90754751); 11.0.0 has no such " +
      "fields, so its rendering lacks the 'Strict-Transport-Security' line we write.",
    ours: (text) => text.replace(/^ +http-response set-header Strict-Transport-Security .*\n/gm, ''),
  },
  {
    id: 'check-alpn',
    releases: ['octavia-11'],
    reason:
      "Health checks of a TLS pool with alpn_protocols negotiate the same ALPN as the traffic ('check-alpn'), as " +
      'Octavia 16 and 19 write; 11.0.0 has no check-alpn, so its checks of an h2-only member speak HTTP/1.1.',
    ours: (text) => text.replace(/ check-alpn \S+/g, ''),
  },
  {
    id: 'tls13-ciphersuites',
    releases: ['octavia-11', 'octavia-16'],
    reason:
      "tls_ciphers may name TLS 1.3 suites (Octavia's default list does). 11 and 16 put the whole list in 'ciphers', " +
      "OpenSSL's TLS <= 1.2 list, which skips those names: the TLS 1.3 suites stay OpenSSL's defaults whatever the list " +
      "says. 19 moves them to 'ciphersuites' and leaves out a list the allowed versions never use; so do we.",
    theirs: (text) => text.replace(/^( +(?:bind|server) .* ciphers \S+.*)$/gm, (line: string) => splitCipherWord(line)),
  },
  {
    id: 'cipher-order',
    releases: ['octavia-19'],
    reason:
      '19 sorts each cipher list alphabetically (to make its output deterministic), which throws away the order the ' +
      "user gave: haproxy prefers the server's order, so that order is the preference. We keep the spec's order. The " +
      'rewrite sorts ours, so the sets are still compared.',
    ours: (text) => text.replace(/ (ciphers|ciphersuites) (\S+)/g, (_m, k: string, list: string) => ` ${k} ${list.split(':').sort().join(':')}`),
  },
  {
    id: 'http-use-htx',
    releases: ['octavia-16'],
    reason:
      "16.0.0 writes 'option http-use-htx' in the Prometheus exporter frontend; HTX is haproxy's only HTTP mode since 2.1 " +
      'and the option is ignored with a warning. 19 dropped it.',
    theirs: (text) => text.replace(/^ +option http-use-htx\n/gm, ''),
  },
  {
    id: 'amphora-tuning',
    releases: ['octavia-11'],
    reason:
      "tune.ssl.cachesize, nbthread and cpu-map from the amphora's details (cpu_count, memory, TuneD profile) are " +
      "Octavia 16's and 19's; 11.0.0's build_config takes no details, so it leaves haproxy's defaults.",
    ours: (text) => text.replace(/^ +(?:tune\.ssl\.cachesize|nbthread|cpu-map) .*\n/gm, ''),
  },
  {
    id: 'ssl-cache-two-fifths',
    releases: ['octavia-16'],
    reason:
      '16.0.0 sizes the SSL session cache from half of the free memory (5 entries per kB); a reload runs the old and the ' +
      'new haproxy side by side, each with its cache, and amphorae ran out of memory (LP #2119987). 19 takes 2/5 (4 entries ' +
      "per kB), as we do. The rewrite puts 19's figure, from the same details and the config's maxconn, in 16's place.",
    theirs: (text, _spec, ctx) =>
      text.replace(/^( +)tune\.ssl\.cachesize \d+\n/m, (_m, indent: string) => {
        const maxconn = Number(/^ +maxconn (\d+)$/m.exec(text)?.[1]);
        const size = ctx.amphora ? sslCacheSize(ctx.amphora, maxconn) : null;
        return size === null ? '' : `${indent}tune.ssl.cachesize ${size}\n`;
      }),
  },
  {
    id: 'cpu-map-joins-next-line',
    releases: ['octavia-16'],
    reason:
      "16.0.0's base.j2 closes the CPU-pinning block with '{%- endif %}', which eats the newline after the cpu-map " +
      "line, so the next global line ('external-check' with a PING monitor) lands on it as a third cpu-map argument. " +
      '19 fixed the whitespace; the rewrite puts the line back on its own.',
    theirs: (text) => text.replace(/^( +)(cpu-map \S+ \S+)[ \t]+(\S.*)$/m, '$1$2\n$1$3'),
  },
  {
    id: 'init-state',
    releases: ALL,
    reason:
      "New-member protection: on a haproxy that applies it at start-up we add 'init-state fully-down' to members of " +
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
  return keepalivedBlocks(text)
    .map((b) => {
      const m = /^\s*virtual_server group ipv([46])-group \{/m.exec(b);
      return m ? fn(b, Number(m[1]) as 4 | 6) : b;
    })
    .join('\n');
}

export const LVS_ALLOWANCES: Allowance[] = [
  {
    id: 'lvs-empty-virtual-server',
    releases: ALL,
    reason:
      'A virtual server without an enabled real server (a family none of the members has, all members disabled, ' +
      "the pool disabled): Octavia 11 to 19 write it, keepalived ignores it ('has no real servers - ignoring') and " +
      '`keepalived -t` on an amphora calls the config invalid. We leave it out; traffic is the same (none).',
    theirs: (text) => {
      const blocks = keepalivedBlocks(text);
      const empty = new Set(
        blocks
          .filter((b) => /^\s*virtual_server group (\S+) \{/m.test(b) && !/\breal_server\b/.test(b))
          .map((b) => /virtual_server group (\S+) \{/.exec(b)![1]!),
      );
      return blocks
        .filter((b) => {
          const m = /^\s*virtual_server(?:_group| group) (\S+) \{/m.exec(b);
          return !(m && empty.has(m[1]!));
        })
        .join('\n');
    },
  },
  {
    id: 'lvs-granularity-per-family',
    releases: ALL,
    reason:
      "SOURCE_IP persistence_granularity: Octavia 11 to 19 write the spec's netmask on the virtual servers of both " +
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
    releases: ['octavia-11'],
    reason:
      'SOURCE_IP persistence on the IPv6 group: 11.0.0 writes the IPv4 mask 255.255.255.255, which keepalived cannot ' +
      'apply to IPv6; we write 128 (Octavia 16 and 19, dd5d3cca6).',
    theirs: (text, spec) => {
      // Only where the spec leaves the granularity out; its header names the listener.
      const listener = spec.listeners.find((l) => text.includes(`Listener ${l.id}\n`));
      const pool = listener?.default_pool ?? spec.pools.find((p) => p.id === listener?.default_pool_id);
      if (pool?.session_persistence?.persistence_granularity !== undefined) return text;
      return text.replace(/(virtual_server group ipv6-group \{[^}]*?persistence_granularity )255\.255\.255\.255/s, '$1128');
    },
  },
];

/** Apply the allowances of `release` to one side's text. */
export function applyAllowances(list: Allowance[], side: 'theirs' | 'ours', text: string, release: OctaviaRelease, ctx: AllowanceContext): string {
  return list.filter((a) => a.releases.includes(release)).reduce((t, a) => a[side]?.(t, ctx.spec, ctx) ?? t, text);
}
