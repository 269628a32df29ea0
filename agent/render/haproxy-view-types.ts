// The plain data haproxy.cfg.njk lays out: one HaproxyView per load
// balancer, built by ViewBuilder (haproxy-view.ts). Apart from the builder
// so the shape the templates read can be read on its own. Types only.
export interface MemberView {
  id: string;
  /** address:port, IPv6 bracketed. */
  address: string;
  weight: number;
  enabled: boolean;
  backup: boolean;
  monitorAddress?: string;
  monitorPort?: number;
}

export interface MonitorView {
  type: string;
  delay: number;
  timeout: number;
  rise: number;
  fall: number;
  method: string;
  path: string;
  /** HTTP version word, "1.0"/"1.1", or '' for haproxy's default. */
  version: string;
  host: string;
  /** Expected status codes as a regex alternation, sorted. */
  codes: string;
}

export interface PoolView {
  id: string;
  backend: string;
  mode: 'http' | 'tcp';
  httpReuse: boolean;
  balance: string;
  persistence: { type: string; cookie: string; peers: string; size: string } | null;
  monitor: MonitorView | null;
  ping: boolean;
  proxyProtocol: '' | 'send-proxy' | 'send-proxy-v2' | 'send-proxy-v2-ssl-cn';
  tls: {
    clientCert: string;
    ca: string;
    crl: string;
    verify: string;
    ciphers: string;
    ciphersuites: string;
    disabledVersions: string[];
    alpn: string;
  } | null;
  /** `check-alpn` word for the health checks of a TLS pool with ALPN, or ''. */
  checkAlpn: string;
  /** Members start with `init-state fully-down` (admission.ts, load path). */
  startFullyDown: boolean;
  headers: { name: string; value: string }[];
  fullconn: number;
  timeoutConnect: number;
  timeoutServer: number;
  members: MemberView[];
}

export interface AclView {
  id: string;
  fetch: string;
  match: string;
  value: string;
}

export interface PolicyView {
  acls: AclView[];
  /** `!id` or `id` per rule: the ACLs are ANDed. */
  condition: string;
  action: string;
  redirectCode: number | null;
  target: string;
}

export interface ListenerView {
  id: string;
  mode: 'http' | 'tcp';
  maxconn: number;
  redirectToHttps: boolean;
  hsts: string;
  binds: string[];
  bindOptions: string;
  policies: PolicyView[];
  defaultBackend: string;
  timeoutClient: number;
  inspectDelay: number;
  prometheus: boolean;
  logFormat: string;
  pools: PoolView[];
}

export interface HaproxyView {
  lbId: string;
  userLogFacility: number;
  administrativeLogFacility: number;
  statsSocket: string;
  stateFile: string;
  maxconn: number;
  /** tune.ssl.cachesize, or null for haproxy's default. */
  sslCacheSize: number | null;
  /** nbthread (and cpu-map of threads 1..n to CPUs 1..n), or null for haproxy's default. */
  threads: number | null;
  externalCheck: boolean;
  connectionLogging: boolean;
  peers: { name: string; members: { name: string; address: string }[] } | null;
  prometheus: boolean;
  listeners: ListenerView[];
  pingCommand: string;
}
