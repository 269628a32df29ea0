// Spec validation: the JSON Schema first (types, ranges, enumerations, safe
// characters), then the rules that tie objects together (unique ids,
// references, which protocol goes with which). Each failure names the exact
// field, e.g. `listeners[2].default_pool.members[7].weight: must be <= 256`.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { isIP } from 'node:net';
import { createSecureContext } from 'node:tls';
import { LOAD_BALANCER_SCHEMA, MEMBER_SCHEMA } from './schema.js';
import { LVS_PROTOCOLS, type ListenerSpec, type LoadBalancerSpec, type MemberSpec, type PoolSpec } from './types.js';
import { prefixLength } from './netmask.js';
import { splitCiphers, TLS13_CIPHERSUITES, versionsUse } from './ciphers.js';
import { AgentError } from '../errors.js';
import { lazyRequire } from '../lazy-require.js';

export class SpecError extends AgentError {
  readonly kind = 'invalid_input';

  constructor(readonly problems: string[]) {
    super(problems.join('; '));
    this.name = 'SpecError';
  }
}

const ajvModule = lazyRequire<typeof import('ajv')>('ajv');
const ajvFormats = lazyRequire<{ default: (ajv: InstanceType<typeof import('ajv').Ajv>) => void }>('ajv-formats');
let compiled: { spec: ValidateFunction; member: ValidateFunction } | null = null;

/**
 * The schema checks, compiled on first use: loading ajv and compiling the
 * schema is most of what the agent's start would cost otherwise, and only
 * API 2.0 and the render/check commands validate specs.
 */
function checks(): { spec: ValidateFunction; member: ValidateFunction } {
  if (compiled) return compiled;
  const ajv = new (ajvModule().Ajv)({ allErrors: true, useDefaults: true, strict: true, allowUnionTypes: true, verbose: true });
  ajvFormats().default(ajv);
  compiled = { spec: ajv.compile(LOAD_BALANCER_SCHEMA), member: ajv.compile(MEMBER_SCHEMA) };
  return compiled;
}

/**
 * Validate a parsed JSON document; returns it typed. Throws SpecError.
 * Defaults are filled into the document itself: callers hand over a freshly
 * parsed one (a copy would cost about as much as the schema check).
 */
export function validateSpec(doc: unknown): LoadBalancerSpec {
  const check = checks().spec;
  if (!check(doc)) throw new SpecError(schemaProblems(check.errors ?? []));
  const spec = doc as LoadBalancerSpec;
  const problems = relationProblems(spec);
  if (problems.length > 0) throw new SpecError(problems);
  return spec;
}

/**
 * One member for `pool` (API 2.0's member calls): the member schema, then
 * the pool's rules for members (one member per id, one per address and
 * port). Its id may be left out: it is the path's. Throws SpecError.
 */
export function validateMember(doc: unknown, memberId: string, pool: PoolSpec): MemberSpec {
  if (doc !== null && typeof doc === 'object' && !Array.isArray(doc) && !('id' in doc)) (doc as { id?: string }).id = memberId;
  const check = checks().member;
  if (!check(doc)) throw new SpecError(schemaProblems(check.errors ?? []));
  const m = doc as MemberSpec;
  if (m.id !== memberId) throw new SpecError([`id: "${m.id}" is not the member in the path ("${memberId}")`]);
  const same = pool.members.find((o) => o.id !== m.id && o.address === m.address && o.protocol_port === m.protocol_port);
  if (same) throw new SpecError([`${m.address} port ${m.protocol_port} is already member "${same.id}" of pool ${pool.id}`]);
  return m;
}

/** `/listeners/2/default_pool` -> `listeners[2].default_pool`. */
export function fieldPath(pointer: string): string {
  let out = '';
  for (const part of pointer.split('/').slice(1)) {
    const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(key) ? `[${key}]` : out === '' ? key : `.${key}`;
  }
  return out;
}

function joinPath(base: string, key: string): string {
  return base === '' ? key : `${base}.${key}`;
}

function schemaProblems(errors: ErrorObject[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  // anyOf reports every branch; its own summary line ("must match a schema in
  // anyOf") says enough, so the branch details are dropped.
  const anyOfPaths = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  for (const e of errors) {
    if (e.keyword !== 'anyOf' && anyOfPaths.has(e.instancePath) && e.schemaPath.includes('/anyOf/')) continue;
    const path = fieldPath(e.instancePath);
    let line: string;
    switch (e.keyword) {
      case 'required':
        line = `${joinPath(path, String(e.params.missingProperty))}: is required`;
        break;
      case 'additionalProperties':
        line = `${joinPath(path, String(e.params.additionalProperty))}: is not a known field`;
        break;
      case 'propertyNames':
        continue; // reported with the offending name by the 'enum' error below
      case 'enum':
        line = e.propertyName !== undefined
          ? `${joinPath(path, e.propertyName)}: is not a known field`
          : `${path}: must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
        break;
      case 'anyOf':
        line = JSON.stringify(e.schema).includes('ipv4')
          ? `${path}: must be an IPv4 or IPv6 address`
          : `${path}: must be true or false (a boolean or the string)`;
        break;
      case 'pattern':
        line = `${path}: contains characters or a form that is not allowed (must match ${e.params.pattern})`;
        break;
      default:
        line = `${path || '(document)'}: ${e.message ?? 'is invalid'}`;
    }
    if (!seen.has(line)) {
      seen.add(line);
      out.push(line);
    }
  }
  return out;
}

// Octavia's VALID_LISTENER_POOL_PROTOCOL_MAP.
const POOL_PROTOCOLS_FOR: Record<string, string[]> = {
  TCP: ['HTTP', 'HTTPS', 'PROXY', 'PROXYV2', 'TCP'],
  HTTP: ['HTTP', 'PROXY', 'PROXYV2'],
  HTTPS: ['HTTPS', 'PROXY', 'PROXYV2', 'TCP'],
  TERMINATED_HTTPS: ['HTTP', 'PROXY', 'PROXYV2'],
  UDP: ['UDP'],
  SCTP: ['SCTP'],
  PROMETHEUS: [],
};
const HTTP_LISTENERS = ['HTTP', 'TERMINATED_HTTPS'];
const TLS_LISTENERS = ['TERMINATED_HTTPS', 'PROMETHEUS'];
const MONITORS_FOR_POOL: Record<string, string[]> = {
  UDP: ['UDP-CONNECT', 'HTTP', 'TCP'],
  SCTP: ['SCTP', 'UDP-CONNECT', 'HTTP', 'TCP'],
};
const HAPROXY_MONITORS = ['HTTP', 'HTTPS', 'PING', 'TCP', 'TLS-HELLO'];

interface PoolAt { pool: PoolSpec; path: string }

function relationProblems(spec: LoadBalancerSpec): string[] {
  const problems: string[] = [];
  const problem = (path: string, text: string) => problems.push(`${path}: ${text}`);

  // Every pool definition, inline or shared, by id.
  const pools = new Map<string, PoolAt>();
  const definePool = (pool: PoolSpec, path: string) => {
    const prior = pools.get(pool.id);
    if (prior) problem(`${path}.id`, `duplicate pool id "${pool.id}" (also ${prior.path})`);
    else pools.set(pool.id, { pool, path });
  };
  spec.pools.forEach((p, i) => {
    definePool(p, `pools[${i}]`);
  });
  spec.listeners.forEach((l, i) => {
    if (l.default_pool) definePool(l.default_pool, `listeners[${i}].default_pool`);
  });

  const unique = (kind: string) => {
    const seen = new Map<string, string>();
    return (id: string | undefined, path: string) => {
      if (id === undefined) return;
      const prior = seen.get(id);
      if (prior) problem(path, `duplicate ${kind} id "${id}" (also ${prior})`);
      else seen.set(id, path);
    };
  };
  const listenerId = unique('listener');
  const policyId = unique('L7 policy');
  const ruleId = unique('L7 rule');
  const monitorId = unique('health monitor');
  const ports = new Map<string, string>();
  const amphoraId = unique('amphora');
  const vipSeen = new Set([spec.vip_address]);
  spec.additional_vips.forEach((v, i) => {
    if (vipSeen.has(v.ip_address)) problem(`additional_vips[${i}].ip_address`, `${v.ip_address} is already a VIP of this load balancer`);
    vipSeen.add(v.ip_address);
  });
  spec.amphorae.forEach((a, i) => {
    amphoraId(a.id, `amphorae[${i}].id`);
  });
  if (spec.topology === 'ACTIVE_STANDBY' && spec.amphorae.length === 0) {
    problem('amphorae', 'an ACTIVE_STANDBY load balancer needs its amphorae (haproxy peers)');
  }

  for (const { pool, path } of pools.values()) {
    monitorId(pool.healthmonitor?.id, `${path}.healthmonitor.id`);
    poolProblems(pool, path, problem);
  }

  spec.listeners.forEach((l, i) => {
    const path = `listeners[${i}]`;
    listenerId(l.id, `${path}.id`);
    const family = LVS_PROTOCOLS.includes(l.protocol) ? l.protocol : 'TCP';
    const portKey = `${family}:${l.protocol_port}`;
    const prior = ports.get(portKey);
    if (prior) problem(`${path}.protocol_port`, `port ${l.protocol_port} is already used by ${prior}`);
    else ports.set(portKey, path);
    listenerProblems(l, path, problem);

    const usePool = (id: string, at: string, what: string) => {
      const found = pools.get(id);
      if (!found) return problem(at, `no pool "${id}" is defined (pools[] or a listener's default_pool)`);
      if (!POOL_PROTOCOLS_FOR[l.protocol]!.includes(found.pool.protocol)) {
        problem(at, `${what} ${found.path} has protocol ${found.pool.protocol}, which a ${l.protocol} listener cannot use ` +
          `(allowed: ${POOL_PROTOCOLS_FOR[l.protocol]!.join(', ') || 'none'})`);
      }
      const cookie = found.pool.session_persistence?.type;
      if ((cookie === 'HTTP_COOKIE' || cookie === 'APP_COOKIE') && !HTTP_LISTENERS.includes(l.protocol)) {
        problem(at, `${what} ${found.path} uses ${cookie} persistence, which needs an HTTP or TERMINATED_HTTPS listener`);
      }
    };
    if (l.default_pool && l.default_pool_id !== undefined) {
      problem(`${path}.default_pool_id`, 'give either default_pool or default_pool_id, not both');
    }
    if (l.default_pool) usePool(l.default_pool.id, `${path}.default_pool`, 'pool');
    if (l.default_pool_id !== undefined) usePool(l.default_pool_id, `${path}.default_pool_id`, 'pool');

    l.l7policies.forEach((p, j) => {
      const pp = `${path}.l7policies[${j}]`;
      policyId(p.id, `${pp}.id`);
      if (!HTTP_LISTENERS.includes(l.protocol)) problem(pp, `L7 policies need an HTTP or TERMINATED_HTTPS listener, not ${l.protocol}`);
      const needs: Record<string, keyof typeof p> = {
        REDIRECT_TO_URL: 'redirect_url', REDIRECT_PREFIX: 'redirect_prefix', REDIRECT_TO_POOL: 'redirect_pool_id',
      };
      for (const field of ['redirect_url', 'redirect_prefix', 'redirect_pool_id'] as const) {
        if (needs[p.action] === field && p[field] === undefined) problem(`${pp}.${field}`, `is required for action ${p.action}`);
        if (needs[p.action] !== field && p[field] !== undefined) problem(`${pp}.${field}`, `is not allowed with action ${p.action}`);
      }
      for (const field of ['redirect_url', 'redirect_prefix'] as const) {
        const url = p[field];
        if (url !== undefined && !/^https?:\/\/[^/?#]+/i.test(url)) problem(`${pp}.${field}`, 'must be an http:// or https:// URL with a host');
      }
      if (p.redirect_http_code !== undefined && p.action !== 'REDIRECT_TO_URL' && p.action !== 'REDIRECT_PREFIX') {
        problem(`${pp}.redirect_http_code`, `is not allowed with action ${p.action}`);
      }
      if (p.redirect_pool_id !== undefined) usePool(p.redirect_pool_id, `${pp}.redirect_pool_id`, 'pool');
      p.rules.forEach((r, k) => {
        const rp = `${pp}.rules[${k}]`;
        ruleId(r.id, `${rp}.id`);
        const keyed = ['HEADER', 'COOKIE', 'SSL_DN_FIELD'].includes(r.type);
        if (keyed && r.key === undefined) problem(`${rp}.key`, `is required for rule type ${r.type}`);
        if (!keyed && r.key !== undefined) problem(`${rp}.key`, `is not allowed for rule type ${r.type}`);
        if (r.type.startsWith('SSL_') && l.protocol !== 'TERMINATED_HTTPS') {
          problem(`${rp}.type`, `${r.type} rules need a TERMINATED_HTTPS listener`);
        }
        if (r.type === 'SSL_VERIFY_RESULT' && !/^[0-9]{1,10}$/.test(r.value)) problem(`${rp}.value`, 'must be a verify result number');
        if (r.type === 'SSL_CONN_HAS_CERT' && !/^true$/i.test(r.value)) problem(`${rp}.value`, 'must be "True"');
        if ((r.type === 'SSL_VERIFY_RESULT' || r.type === 'SSL_CONN_HAS_CERT') && r.compare_type !== 'EQUAL_TO') {
          problem(`${rp}.compare_type`, `must be EQUAL_TO for rule type ${r.type}`);
        }
        if (r.compare_type === 'REGEX' && !validRegex(r.value)) problem(`${rp}.value`, 'is not a valid regular expression');
        if (r.type === 'FILE_TYPE' && r.compare_type !== 'REGEX' && r.compare_type !== 'EQUAL_TO') {
          problem(`${rp}.compare_type`, 'must be REGEX or EQUAL_TO for rule type FILE_TYPE');
        }
        if (r.type === 'SSL_DN_FIELD' && r.key !== undefined && !/^[A-Za-z][A-Za-z0-9-]*$/.test(r.key)) {
          problem(`${rp}.key`, 'must be a distinguished-name field such as CN or OU');
        }
      });
    });
  });
  return problems;
}

/**
 * haproxy compiles REGEX values with PCRE2. JavaScript's parser is the
 * nearest pure check; it also accepts a class range from a shorthand escape
 * (`[\\d-z]`), which PCRE2 refuses, so that form is refused here too.
 */
function validRegex(value: string): boolean {
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
    problem(path, tls13.length > 0
      ? 'names only TLS 1.3 ciphersuites, and tls_versions leaves out TLSv1.3'
      : 'names no TLS 1.3 ciphersuite, and tls_versions allows only TLSv1.3');
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

function listenerProblems(l: ListenerSpec, path: string, problem: Report): void {
  const tls = TLS_LISTENERS.includes(l.protocol);
  if (l.protocol === 'TERMINATED_HTTPS' && l.default_tls_container_ref === undefined) {
    problem(`${path}.default_tls_container_ref`, 'is required for a TERMINATED_HTTPS listener');
  }
  const tlsOnly = ['default_tls_container_ref', 'client_ca_tls_container_ref', 'client_crl_container_ref',
    'tls_ciphers', 'tls_versions', 'alpn_protocols', 'hsts_max_age'] as const;
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

function poolProblems(pool: PoolSpec, path: string, problem: Report): void {
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
    if (hm.timeout > hm.delay) problem(`${hp}.timeout`, `must be <= delay (${hm.delay})`);
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
