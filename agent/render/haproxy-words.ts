// Spec values as haproxy words: escaping, addresses, status-code lists,
// TLS version and cipher options, L7 rules as ACLs. What the view builder
// (haproxy-view.ts) and the LVS view (expected codes) both need, each a
// small pure mapping from a spec field to the words haproxy reads.
import { isIPv6 } from 'node:net';
import { splitCiphers, versionsUse } from '../model/spec/ciphers.js';
import type { L7RuleSpec } from '../model/spec/types.js';
import type { AclView } from './haproxy-view-types.js';

/**
 * One word for haproxy's config parser: backslash, space, '#' and quotes are
 * escaped so the value reaches haproxy as written (control characters never
 * get this far: the schema refuses them).
 */
export function haproxyWord(value: string): string {
  return value.replace(/[\\ #"']/g, (c) => `\\${c}`);
}

/**
 * An address for haproxy: IPv6 in brackets. Unbracketed, haproxy reads the
 * last ':' group as a port, so `addr 2001:db8::9` fails and a server at
 * `2001:db8::` would be misread (Octavia writes them bare).
 */
export function haproxyAddress(ip: string, port?: number): string {
  const host = isIPv6(ip) ? `[${ip}]` : ip;
  return port === undefined ? host : `${host}:${port}`;
}

const MATCH: Record<string, string> = {
  REGEX: '-m reg',
  STARTS_WITH: '-m beg',
  ENDS_WITH: '-m end',
  CONTAINS: '-m sub',
  EQUAL_TO: '-m str',
};
const TLS_VERSION_FLAGS: [string, string][] = [
  ['SSLv3', 'no-sslv3'],
  ['TLSv1', 'no-tlsv10'],
  ['TLSv1.1', 'no-tlsv11'],
  ['TLSv1.2', 'no-tlsv12'],
  ['TLSv1.3', 'no-tlsv13'],
];

/** Octavia's expected_codes forms ("200", "200, 202", "200-204") as a sorted list of codes. */
export function expectedCodes(codes: string): number[] {
  const out = new Set<number>();
  for (const part of codes.split(/, */)) {
    const [lo, hi] = part.split('-').map(Number) as [number, number | undefined];
    for (let c = lo; c <= (hi ?? lo); c++) out.add(c);
  }
  return [...out].sort((a, b) => a - b);
}

/**
 * tls_ciphers as haproxy's `ciphers` and `ciphersuites` words; a list the
 * allowed versions never use is left out (Octavia 19), and each keeps the
 * spec's order, which is the server's preference (Octavia 19 sorts them).
 */
export function cipherWords(list: string | undefined, versions: string[] | undefined): { ciphers: string; ciphersuites: string } {
  if (list === undefined) return { ciphers: '', ciphersuites: '' };
  const { legacy, tls13 } = splitCiphers(list);
  const use = versionsUse(versions);
  return { ciphers: use.legacy ? legacy.join(':') : '', ciphersuites: use.tls13 ? tls13.join(':') : '' };
}

/** The no-* options that switch off the TLS versions a listener or pool does not allow. */
export function disabledVersions(versions: string[] | undefined): string[] {
  if (versions === undefined) return [];
  return TLS_VERSION_FLAGS.filter(([v]) => !versions.includes(v)).map(([, flag]) => flag);
}

/** An L7 rule as the ACL its policy tests. */
export function acl(r: L7RuleSpec): AclView {
  const value = haproxyWord(r.value);
  const match = MATCH[r.compare_type]!;
  switch (r.type) {
    case 'HOST_NAME':
      return { id: r.id, fetch: 'req.hdr(host) -i', match, value };
    case 'PATH':
      return { id: r.id, fetch: 'path', match, value };
    case 'FILE_TYPE':
      // path_end already matches a suffix: "-m str" would compare the whole path (haproxy issue 2567).
      return { id: r.id, fetch: 'path_end', match: r.compare_type === 'EQUAL_TO' ? '' : match, value };
    case 'HEADER':
      return { id: r.id, fetch: `req.hdr(${r.key})`, match, value };
    case 'COOKIE':
      return { id: r.id, fetch: `req.cook(${r.key})`, match, value };
    case 'SSL_CONN_HAS_CERT':
      return { id: r.id, fetch: 'ssl_c_used', match: '', value: '' };
    case 'SSL_VERIFY_RESULT':
      return { id: r.id, fetch: 'ssl_c_verify', match: 'eq', value };
    case 'SSL_DN_FIELD':
      return { id: r.id, fetch: `ssl_c_s_dn(${r.key})`, match, value };
  }
}
