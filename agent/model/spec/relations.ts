// The rules that tie a spec's objects together: unique ids, references
// between listeners, pools and policies, which pool protocol goes with which
// listener, what L7 policies and rules may say. Each object's own rules are
// object-rules.ts. Problems name the exact field. Pure.
import { LVS_PROTOCOLS, type LoadBalancerSpec, type PoolSpec } from './types.js';
import { HTTP_LISTENERS, listenerProblems, poolProblems, validRegex } from './object-rules.js';

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

interface PoolAt {
  pool: PoolSpec;
  path: string;
}

export function relationProblems(spec: LoadBalancerSpec): string[] {
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
        problem(
          at,
          `${what} ${found.path} has protocol ${found.pool.protocol}, which a ${l.protocol} listener cannot use ` +
            `(allowed: ${POOL_PROTOCOLS_FOR[l.protocol]!.join(', ') || 'none'})`,
        );
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
        REDIRECT_TO_URL: 'redirect_url',
        REDIRECT_PREFIX: 'redirect_prefix',
        REDIRECT_TO_POOL: 'redirect_pool_id',
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
