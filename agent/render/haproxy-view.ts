// Spec -> the plain data haproxy.cfg.njk lays out. Every decision that needs
// code (defaults, which pools get a backend, sums, escaping, file paths) is
// made here; the templates own the haproxy syntax. Pure. The view's types,
// the spec-to-word mappings and the sizing from the amphora are modules of
// their own (haproxy-view-types.ts, haproxy-words.ts, amphora-tuning.ts).
import { join } from 'node:path';
import { certificateDir, pingWrapper, serverStateFile, statsSocket } from '../config/layout.js';
import { admit } from '../model/admission.js';
import { peerName } from '../model/names.js';
import {
  LVS_PROTOCOLS,
  type HealthMonitorSpec,
  type L7PolicySpec,
  type L7RuleSpec,
  type ListenerSpec,
  type LoadBalancerSpec,
  type MemberSpec,
  type PoolSpec,
} from '../model/spec/types.js';
import type { RenderSettings, RenderTarget } from './settings.js';
import { defaultPoolOf, poolsById } from '../model/spec/pools.js';
import { haproxyThreads, sslCacheSize } from './amphora-tuning.js';
import type { HaproxyView, ListenerView, MemberView, MonitorView, PolicyView, PoolView } from './haproxy-view-types.js';
import { acl, cipherWords, disabledVersions, expectedCodes, haproxyAddress, haproxyWord } from './haproxy-words.js';

/** haproxy's ceiling for a global maxconn, and Octavia's. */
const MAX_MAXCONN = 1000000;

const BALANCE: Record<string, string> = { ROUND_ROBIN: 'roundrobin', LEAST_CONNECTIONS: 'leastconn', SOURCE_IP: 'source' };
const CLIENT_AUTH: Record<string, string> = { NONE: 'none', OPTIONAL: 'optional', MANDATORY: 'required' };
const SSL_HEADERS: [string, string][] = [
  ['X-SSL-Client-Verify', '%[ssl_c_verify]'],
  ['X-SSL-Client-Has-Cert', '%[ssl_c_used]'],
  ['X-SSL-Client-DN', '%{+Q}[ssl_c_s_dn]'],
  ['X-SSL-Client-CN', '%{+Q}[ssl_c_s_dn(cn)]'],
  ['X-SSL-Issuer', '%{+Q}[ssl_c_i_dn]'],
  ['X-SSL-Client-SHA1', '%{+Q}[ssl_c_sha1,hex]'],
  ['X-SSL-Client-Not-Before', '%{+Q}[ssl_c_notbefore]'],
  ['X-SSL-Client-Not-After', '%{+Q}[ssl_c_notafter]'],
];

export function peersName(lbId: string): string {
  return `${lbId.replace(/-/g, '')}_peers`;
}

function enabledHeader(l: ListenerSpec, name: string): boolean {
  const v = l.insert_headers[name];
  return v === true || (typeof v === 'string' && v.toLowerCase() === 'true');
}

function isOn(flag: boolean | undefined): boolean {
  return flag !== false;
}

export class ViewBuilder {
  private readonly pools: Map<string, PoolSpec>;

  constructor(
    private readonly spec: LoadBalancerSpec,
    private readonly settings: RenderSettings,
    private readonly target: RenderTarget,
  ) {
    this.pools = poolsById(spec);
  }

  certPath(file: string): string {
    return join(certificateDir(this.settings.baseCertDir, this.spec.id), file);
  }

  crtListPath(listenerId: string): string {
    return this.certPath(`${listenerId}.pem`);
  }

  defaultPool(l: ListenerSpec): PoolSpec | undefined {
    return defaultPoolOf(l, this.pools);
  }

  /** Enabled policies with at least one enabled rule, in position order. */
  activePolicies(l: ListenerSpec): { policy: L7PolicySpec; rules: L7RuleSpec[] }[] {
    return l.l7policies
      .map((policy, index) => ({ policy, index, rules: policy.rules.filter((r) => isOn(r.admin_state_up)) }))
      .filter((p) => isOn(p.policy.admin_state_up) && p.rules.length > 0)
      .sort((a, b) => (a.policy.position ?? Infinity) - (b.policy.position ?? Infinity) || a.index - b.index);
  }

  haproxyListeners(): ListenerSpec[] {
    return this.spec.listeners.filter((l) => !LVS_PROTOCOLS.includes(l.protocol));
  }

  connectionLimit(l: ListenerSpec): number {
    return l.connection_limit !== undefined && l.connection_limit > 0 ? l.connection_limit : this.settings.defaultConnectionLimit;
  }

  build(): HaproxyView {
    const spec = this.spec;
    const lbEnabled = isOn(spec.admin_state_up);
    const listeners = this.haproxyListeners().filter((l) => isOn(l.admin_state_up));
    const views = lbEnabled ? listeners.map((l) => this.listener(l)) : [];
    // Disabled listeners take no connections, so they do not count (Octavia >= 13).
    const sum = listeners.reduce((n, l) => n + this.connectionLimit(l), 0);
    const externalCheck = listeners.some((l) => this.listenerPools(l).some((p) => monitorOf(p)?.type === 'PING'));
    const maxconn = sum > 0 && sum < MAX_MAXCONN ? sum : MAX_MAXCONN;
    const facts = this.target.amphora;
    return {
      lbId: spec.id,
      userLogFacility: this.settings.userLogFacility,
      administrativeLogFacility: this.settings.administrativeLogFacility,
      statsSocket: statsSocket(this.settings.basePath, spec.id),
      stateFile: serverStateFile(this.settings.basePath, spec.id),
      maxconn,
      // Any TERMINATED_HTTPS listener, disabled ones too (as Octavia 19).
      sslCacheSize: facts && this.haproxyListeners().some((l) => l.protocol === 'TERMINATED_HTTPS') ? sslCacheSize(facts, maxconn) : null,
      threads: facts ? haproxyThreads(facts) : null,
      externalCheck,
      connectionLogging: this.settings.connectionLogging,
      peers:
        spec.topology === 'ACTIVE_STANDBY'
          ? { name: peersName(spec.id), members: spec.amphorae.map((a) => ({ name: peerName(a.id), address: haproxyAddress(a.vrrp_ip, 1025) })) }
          : null,
      prometheus: this.haproxyListeners().some((l) => l.protocol === 'PROMETHEUS'),
      listeners: views,
      pingCommand: pingWrapper(this.settings.basePath),
    };
  }

  /** The pools that get a backend under this listener: default pool, then redirect pools, enabled, once each. */
  listenerPools(l: ListenerSpec): PoolSpec[] {
    const out: PoolSpec[] = [];
    const add = (p: PoolSpec | undefined) => {
      if (p && isOn(p.admin_state_up) && !out.includes(p)) out.push(p);
    };
    add(this.defaultPool(l));
    for (const { policy } of this.activePolicies(l)) {
      if (policy.action === 'REDIRECT_TO_POOL') add(this.pools.get(policy.redirect_pool_id!));
    }
    return out;
  }

  private listener(l: ListenerSpec): ListenerView {
    const mode = l.protocol === 'HTTP' || l.protocol === 'TERMINATED_HTTPS' || l.protocol === 'PROMETHEUS' ? 'http' : 'tcp';
    const def = this.defaultPool(l);
    const vips = [this.spec.vip_address, ...this.spec.additional_vips.map((v) => v.ip_address)];
    return {
      id: l.id,
      mode,
      maxconn: this.connectionLimit(l),
      redirectToHttps: l.protocol === 'TERMINATED_HTTPS',
      hsts:
        l.hsts_max_age !== undefined
          ? `max-age=${l.hsts_max_age};${l.hsts_include_subdomains ? ' includeSubDomains;' : ''}${l.hsts_preload ? ' preload;' : ''}`
          : '',
      binds: vips.map((ip) => haproxyAddress(ip, l.protocol_port)),
      bindOptions: this.bindOptions(l),
      policies: this.activePolicies(l).map(({ policy, rules }) => this.policy(l, policy, rules)),
      defaultBackend: def && isOn(def.admin_state_up) ? `${def.id}:${l.id}` : '',
      timeoutClient: l.timeout_client_data || this.settings.timeoutClientData,
      inspectDelay: l.timeout_tcp_inspect || this.settings.timeoutTcpInspect,
      prometheus: l.protocol === 'PROMETHEUS',
      logFormat: this.settings.connectionLogging ? this.logFormat(l) : '',
      pools: this.listenerPools(l).map((p) => this.pool(l, mode, p)),
    };
  }

  private bindOptions(l: ListenerSpec): string {
    if (l.default_tls_container_ref === undefined) return '';
    const opts = [`ssl crt-list ${this.crtListPath(l.id)}`];
    if (l.client_ca_tls_container_ref !== undefined) {
      opts.push(`ca-file ${this.certPath(l.client_ca_tls_container_ref)} verify ${CLIENT_AUTH[l.client_authentication]}`);
      if (l.client_crl_container_ref !== undefined) opts.push(`crl-file ${this.certPath(l.client_crl_container_ref)}`);
    }
    const ciphers = cipherWords(l.tls_ciphers, l.tls_versions);
    if (ciphers.ciphers) opts.push(`ciphers ${ciphers.ciphers}`);
    if (ciphers.ciphersuites) opts.push(`ciphersuites ${ciphers.ciphersuites}`);
    opts.push(...disabledVersions(l.tls_versions));
    if (l.alpn_protocols !== undefined) opts.push(`alpn ${l.alpn_protocols.join(',')}`);
    return opts.join(' ');
  }

  private logFormat(l: ListenerSpec): string {
    let format = this.settings.userLogFormat.replace('{{ project_id }}', this.spec.project_id ?? '-').replace('{{ lb_id }}', this.spec.id);
    if (l.protocol !== 'HTTP' && l.protocol !== 'TERMINATED_HTTPS') {
      // No HTTP request line or status outside HTTP listeners.
      for (const field of ['%{+Q}r', '%r', '%{+Q}ST', '%ST']) format = format.replace(field, '-');
    }
    return format.replace(/ /g, '\\ ');
  }

  private policy(l: ListenerSpec, p: L7PolicySpec, rules: L7RuleSpec[]): PolicyView {
    const redirectPool = p.redirect_pool_id !== undefined ? this.pools.get(p.redirect_pool_id) : undefined;
    let action = p.action;
    let target = '';
    if (p.action === 'REDIRECT_TO_URL') target = haproxyWord(p.redirect_url!);
    else if (p.action === 'REDIRECT_PREFIX') target = haproxyWord(p.redirect_prefix!);
    else if (p.action === 'REDIRECT_TO_POOL') {
      // A disabled pool has no backend: its ACLs stay, without an action (as Octavia).
      if (redirectPool && isOn(redirectPool.admin_state_up)) target = `${redirectPool.id}:${l.id}`;
      else action = 'NONE' as typeof action;
    }
    return {
      acls: rules.map((r) => acl(r)),
      condition: rules.map((r) => `${r.invert ? '!' : ''}${r.id}`).join(' '),
      action,
      redirectCode: p.redirect_http_code ?? null,
      target,
    };
  }

  private pool(l: ListenerSpec, listenerMode: 'http' | 'tcp', p: PoolSpec): PoolView {
    const proxy = p.protocol === 'PROXY' || p.protocol === 'PROXYV2';
    const mode = proxy ? listenerMode : p.protocol === 'HTTP' ? 'http' : 'tcp';
    const monitor = monitorOf(p);
    const sp = p.session_persistence;
    const peers = this.spec.topology === 'ACTIVE_STANDBY' ? peersName(this.spec.id) : '';
    const listenerTls = l.protocol === 'TERMINATED_HTTPS' || l.protocol === 'PROMETHEUS';
    return {
      id: p.id,
      backend: `${p.id}:${l.id}`,
      mode,
      httpReuse: mode === 'http',
      balance: BALANCE[p.lb_algorithm]!,
      persistence: sp ? { type: sp.type, cookie: sp.cookie_name ?? '', peers, size: this.settings.stickSize } : null,
      monitor: monitor ? monitorView(monitor) : null,
      ping: monitor?.type === 'PING',
      proxyProtocol: p.protocol === 'PROXY' ? 'send-proxy' : p.protocol === 'PROXYV2' ? (listenerTls ? 'send-proxy-v2-ssl-cn' : 'send-proxy-v2') : '',
      tls: p.tls_enabled
        ? {
            clientCert: p.tls_container_ref !== undefined ? this.certPath(p.tls_container_ref) : '',
            ca: p.ca_tls_container_ref !== undefined ? this.certPath(p.ca_tls_container_ref) : '',
            crl: p.crl_container_ref !== undefined ? this.certPath(p.crl_container_ref) : '',
            // Without a CA nothing can be verified; with one, haproxy's default is "required".
            verify: p.ca_tls_container_ref === undefined ? 'none' : p.crl_container_ref !== undefined ? 'required' : '',
            ...cipherWords(p.tls_ciphers, p.tls_versions),
            disabledVersions: disabledVersions(p.tls_versions),
            alpn: p.alpn_protocols?.join(',') ?? '',
          }
        : null,
      // The checks negotiate what the traffic does (Octavia >= 16).
      checkAlpn: monitor !== null && p.tls_enabled && p.alpn_protocols !== undefined ? p.alpn_protocols.join(',') : '',
      startFullyDown:
        admit({ checked: monitor !== null, initStateOnLine: false, path: 'load', initStateAtStartup: this.target.initStateAtStartup }).method === 'init-state',
      headers: this.headers(l, p),
      fullconn: this.connectionLimit(l),
      timeoutConnect: l.timeout_member_connect || this.settings.timeoutMemberConnect,
      timeoutServer: l.timeout_member_data || this.settings.timeoutMemberData,
      members: p.members.map(memberView),
    };
  }

  private headers(l: ListenerSpec, p: PoolSpec): { name: string; value: string }[] {
    const out: { name: string; value: string }[] = [];
    // X-Forwarded-For/-Port need an http pool: PROXY pools carry the client address already.
    if (p.protocol === 'HTTP') {
      if (enabledHeader(l, 'X-Forwarded-For')) out.push({ name: 'X-Forwarded-For', value: '' });
      if (enabledHeader(l, 'X-Forwarded-Port')) out.push({ name: 'X-Forwarded-Port', value: '%[dst_port]' });
    }
    if (enabledHeader(l, 'X-Forwarded-Proto')) {
      if (l.protocol === 'HTTP') out.push({ name: 'X-Forwarded-Proto', value: 'http' });
      if (l.protocol === 'TERMINATED_HTTPS') out.push({ name: 'X-Forwarded-Proto', value: 'https' });
    }
    if (l.protocol === 'TERMINATED_HTTPS') {
      for (const [name, value] of SSL_HEADERS) if (enabledHeader(l, name)) out.push({ name, value });
    }
    return out;
  }
}

function monitorOf(p: PoolSpec): HealthMonitorSpec | null {
  return p.healthmonitor && isOn(p.healthmonitor.admin_state_up) ? p.healthmonitor : null;
}

function monitorView(m: HealthMonitorSpec): MonitorView {
  return {
    type: m.type,
    delay: m.delay,
    timeout: m.timeout,
    rise: m.max_retries,
    fall: m.max_retries_down,
    method: m.http_method ?? 'GET',
    path: m.url_path ?? '/',
    version: m.http_version !== undefined ? m.http_version.toFixed(1) : '',
    host: m.domain_name ?? '',
    codes: expectedCodes(m.expected_codes ?? '200').join('|'),
  };
}

function memberView(m: MemberSpec): MemberView {
  return {
    id: m.id,
    address: haproxyAddress(m.address, m.protocol_port),
    weight: m.weight,
    enabled: isOn(m.admin_state_up),
    backup: m.backup,
    ...(m.monitor_address !== undefined ? { monitorAddress: haproxyAddress(m.monitor_address) } : {}),
    ...(m.monitor_port !== undefined ? { monitorPort: m.monitor_port } : {}),
  };
}
