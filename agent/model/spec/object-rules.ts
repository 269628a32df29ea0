// The rules within one listener or pool that the schema cannot say: TLS
// versions and ciphers OpenSSL in the amphora takes, CIDRs, regular
// expressions PCRE2 compiles, the headers and monitors a protocol allows.
// relations.ts calls them for every listener and pool of a spec. Pure.
import { isIP } from 'node:net';
import { createSecureContext } from 'node:tls';
import { splitCiphers, TLS13_CIPHERSUITES, versionsUse } from './ciphers.js';
import { prefixLength } from './netmask.js';
import { LVS_PROTOCOLS, type ListenerSpec, type PoolSpec } from './types.js';

export const HTTP_LISTENERS = ['HTTP', 'TERMINATED_HTTPS'];
const TLS_LISTENERS = ['TERMINATED_HTTPS', 'PROMETHEUS'];
const MONITORS_FOR_POOL: Record<string, string[]> = {
  UDP: ['UDP-CONNECT', 'HTTP', 'TCP'],
  SCTP: ['SCTP', 'UDP-CONNECT', 'HTTP', 'TCP'],
};
const HAPROXY_MONITORS = ['HTTP', 'HTTPS', 'PING', 'TCP', 'TLS-HELLO'];

/**
 * haproxy compiles REGEX values with PCRE2. JavaScript's parser is the
 * nearest pure check; it also accepts a class range from a shorthand escape
 * (`[\\d-z]`), which PCRE2 refuses, so that form is refused here too.
 */
export function validRegex(value: string): boolean {
  if (/\[[^\]]*\\[dDsSwW]-[^\]]/.test(value) || /\[[^\]]*[^\\]-\\[dDsSwW]/.test(value)) return false;
  try {
    new RegExp(value);
    return true;
  } catch {
    return false;
  }
}

/** OpenSSL refuses a cipher list in which no cipher is known, and haproxy the config. */
function knownCiphers(ciphers: string): boolean {
  try {
    createSecureContext({ ciphers });
    return true;
  } catch {
    return false;
  }
}

/**
 * tls_ciphers: TLS 1.3 names must be suites OpenSSL has, the rest a list
 * OpenSSL accepts, and some of it must apply to the allowed versions:
 * otherwise haproxy would silently fall back to every default cipher.
 */
function cipherProblems(list: string, versions: string[] | undefined, path: string, problem: Report): void {
  const { legacy, tls13 } = splitCiphers(list);
  const unknownSuite = legacy.find((c) => c.startsWith('TLS_'));
  const use = versionsUse(versions);
  if (unknownSuite !== undefined) {
    problem(path, `${unknownSuite} is not a TLS 1.3 ciphersuite OpenSSL knows (${TLS13_CIPHERSUITES.join(', ')})`);
  } else if (legacy.length > 0 && !knownCiphers(legacy.join(':'))) {
    problem(path, 'names no cipher OpenSSL knows');
  } else if (!(use.legacy && legacy.length > 0) && !(use.tls13 && tls13.length > 0)) {
    problem(
      path,
      tls13.length > 0
        ? 'names only TLS 1.3 ciphersuites, and tls_versions leaves out TLSv1.3'
        : 'names no TLS 1.3 ciphersuite, and tls_versions allows only TLSv1.3',
    );
  }
}

function cidrProblem(cidr: string): boolean {
  const [ip, bits] = cidr.split('/') as [string, string];
  const family = isIP(ip);
  return family === 0 || Number(bits) > (family === 4 ? 32 : 128);
}

type Report = (path: string, text: string) => void;

/** OpenSSL 3 in the amphora has no SSLv3, and TLS 1.0/1.1 only below its default security level. */
function tlsVersionProblems(versions: string[] | undefined, path: string, problem: Report): void {
  if (versions && !versions.some((v) => v === 'TLSv1.2' || v === 'TLSv1.3')) {
    problem(path, 'must include TLSv1.2 or TLSv1.3 (haproxy disables every older version with OpenSSL 3)');
  }
}

export function listenerProblems(l: ListenerSpec, path: string, problem: Report): void {
  const tls = TLS_LISTENERS.includes(l.protocol);
  if (l.protocol === 'TERMINATED_HTTPS' && l.default_tls_container_ref === undefined) {
    problem(`${path}.default_tls_container_ref`, 'is required for a TERMINATED_HTTPS listener');
  }
  const tlsOnly = [
    'default_tls_container_ref',
    'client_ca_tls_container_ref',
    'client_crl_container_ref',
    'tls_ciphers',
    'tls_versions',
    'alpn_protocols',
    'hsts_max_age',
  ] as const;
  for (const field of tlsOnly) {
    if (!tls && l[field] !== undefined) problem(`${path}.${field}`, `is only allowed on TERMINATED_HTTPS or PROMETHEUS listeners`);
  }
  if (!tls && l.sni_container_refs.length > 0) problem(`${path}.sni_container_refs`, 'is only allowed on TERMINATED_HTTPS or PROMETHEUS listeners');
  if (l.sni_container_refs.length > 0 && l.default_tls_container_ref === undefined) {
    problem(`${path}.sni_container_refs`, 'needs default_tls_container_ref');
  }
  tlsVersionProblems(l.tls_versions, `${path}.tls_versions`, problem);
  if (l.tls_ciphers !== undefined) cipherProblems(l.tls_ciphers, l.tls_versions, `${path}.tls_ciphers`, problem);
  (l.allowed_cidrs ?? []).forEach((c, i) => {
    if (cidrProblem(c)) problem(`${path}.allowed_cidrs[${i}]`, `"${c}" is not an IPv4 or IPv6 CIDR`);
  });
  if (l.client_ca_tls_container_ref === undefined) {
    if (l.client_authentication !== 'NONE') problem(`${path}.client_authentication`, `${l.client_authentication} needs client_ca_tls_container_ref`);
    if (l.client_crl_container_ref !== undefined) problem(`${path}.client_crl_container_ref`, 'needs client_ca_tls_container_ref');
  }
  if ((l.hsts_include_subdomains || l.hsts_preload) && l.hsts_max_age === undefined) {
    problem(`${path}.hsts_max_age`, 'is required when hsts_include_subdomains or hsts_preload is set');
  }
  for (const header of Object.keys(l.insert_headers)) {
    const forwarded = header.startsWith('X-Forwarded-');
    const allowed = forwarded ? HTTP_LISTENERS.includes(l.protocol) : l.protocol === 'TERMINATED_HTTPS';
    if (!allowed) problem(`${path}.insert_headers.${header}`, `is not allowed on a ${l.protocol} listener`);
  }
  if (LVS_PROTOCOLS.includes(l.protocol) && l.timeout_tcp_inspect !== undefined) {
    problem(`${path}.timeout_tcp_inspect`, `is not allowed on a ${l.protocol} listener`);
  }
  if (l.protocol === 'PROMETHEUS' && (l.default_pool || l.default_pool_id !== undefined)) {
    problem(path, 'a PROMETHEUS listener has no pools');
  }
}

export function poolProblems(pool: PoolSpec, path: string, problem: Report): void {
  const lvs = LVS_PROTOCOLS.includes(pool.protocol);
  const tlsOnly = ['tls_container_ref', 'ca_tls_container_ref', 'crl_container_ref', 'tls_ciphers', 'tls_versions', 'alpn_protocols'] as const;
  for (const field of tlsOnly) {
    if (!pool.tls_enabled && pool[field] !== undefined) problem(`${path}.${field}`, 'needs tls_enabled: true');
  }
  tlsVersionProblems(pool.tls_versions, `${path}.tls_versions`, problem);
  if (pool.tls_ciphers !== undefined) cipherProblems(pool.tls_ciphers, pool.tls_versions, `${path}.tls_ciphers`, problem);
  if (pool.tls_enabled && lvs) problem(`${path}.tls_enabled`, `is not allowed on a ${pool.protocol} pool`);
  if (pool.crl_container_ref !== undefined && pool.ca_tls_container_ref === undefined) {
    problem(`${path}.crl_container_ref`, 'needs ca_tls_container_ref');
  }
  const sp = pool.session_persistence;
  if (sp) {
    if (sp.type === 'APP_COOKIE' && sp.cookie_name === undefined) problem(`${path}.session_persistence.cookie_name`, 'is required for APP_COOKIE');
    if (sp.type !== 'APP_COOKIE' && sp.cookie_name !== undefined) problem(`${path}.session_persistence.cookie_name`, `is not allowed for ${sp.type}`);
    if (lvs && sp.type !== 'SOURCE_IP') problem(`${path}.session_persistence.type`, `${pool.protocol} pools support SOURCE_IP persistence only`);
    for (const field of ['persistence_timeout', 'persistence_granularity'] as const) {
      if (!lvs && sp[field] !== undefined) problem(`${path}.session_persistence.${field}`, 'is only allowed on UDP and SCTP pools');
    }
    const mask = sp.persistence_granularity;
    if (mask !== undefined && !((prefixLength(mask) ?? 0) > 0)) {
      problem(`${path}.session_persistence.persistence_granularity`, 'must be a netmask: one or more leading one bits, then only zeros');
    }
  }
  const hm = pool.healthmonitor;
  if (hm) {
    const hp = `${path}.healthmonitor`;
    const allowed = MONITORS_FOR_POOL[pool.protocol] ?? HAPROXY_MONITORS;
    if (!allowed.includes(hm.type)) problem(`${hp}.type`, `${hm.type} cannot monitor a ${pool.protocol} pool (allowed: ${allowed.join(', ')})`);
    const http = hm.type === 'HTTP' || hm.type === 'HTTPS';
    for (const field of ['http_method', 'url_path', 'expected_codes', 'http_version', 'domain_name'] as const) {
      if (!http && hm[field] !== undefined) problem(`${hp}.${field}`, `is only allowed on HTTP and HTTPS monitors`);
    }
    if (hm.domain_name !== undefined && hm.http_version !== 1.1) problem(`${hp}.domain_name`, 'needs http_version 1.1');
    if (lvs && hm.type === 'HTTP' && (hm.http_method ?? 'GET') !== 'GET') problem(`${hp}.http_method`, `${pool.protocol} pools check with GET only`);
    const range = hm.expected_codes?.match(/^(\d+)-(\d+)$/);
    if (range && Number(range[1]) > Number(range[2])) problem(`${hp}.expected_codes`, 'range start is above its end');
  }
  const memberId = new Map<string, number>();
  const endpoint = new Map<string, number>();
  pool.members.forEach((m, i) => {
    const prior = memberId.get(m.id);
    if (prior !== undefined) problem(`${path}.members[${i}].id`, `duplicate member id "${m.id}" (also members[${prior}])`);
    else memberId.set(m.id, i);
    const at = `${m.address} ${m.protocol_port}`;
    const same = endpoint.get(at);
    if (same !== undefined) problem(`${path}.members[${i}]`, `${m.address} port ${m.protocol_port} is already members[${same}]`);
    else endpoint.set(at, i);
  });
}
