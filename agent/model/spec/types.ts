// TypeScript view of a spec that passed validation (schema.ts is the contract;
// these types follow it, with the schema's defaults filled in).

export type ListenerProtocol = 'HTTP' | 'HTTPS' | 'TCP' | 'TERMINATED_HTTPS' | 'PROMETHEUS' | 'UDP' | 'SCTP';
export type PoolProtocol = 'HTTP' | 'HTTPS' | 'TCP' | 'PROXY' | 'PROXYV2' | 'UDP' | 'SCTP';
export type LbAlgorithm = 'ROUND_ROBIN' | 'LEAST_CONNECTIONS' | 'SOURCE_IP';
export type MonitorType = 'HTTP' | 'HTTPS' | 'PING' | 'TCP' | 'TLS-HELLO' | 'UDP-CONNECT' | 'SCTP';
export type TlsVersion = 'SSLv3' | 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3';
export type AlpnProtocol = 'h2' | 'http/1.1' | 'http/1.0';
export type L7Action = 'REJECT' | 'REDIRECT_TO_URL' | 'REDIRECT_TO_POOL' | 'REDIRECT_PREFIX';
export type L7RuleType = 'HOST_NAME' | 'PATH' | 'FILE_TYPE' | 'HEADER' | 'COOKIE' | 'SSL_CONN_HAS_CERT' | 'SSL_VERIFY_RESULT' | 'SSL_DN_FIELD';
export type L7CompareType = 'REGEX' | 'STARTS_WITH' | 'ENDS_WITH' | 'CONTAINS' | 'EQUAL_TO';

export interface HealthMonitorSpec {
  id?: string;
  name?: string;
  type: MonitorType;
  delay: number;
  timeout: number;
  max_retries: number;
  max_retries_down: number;
  http_method?: string;
  url_path?: string;
  expected_codes?: string;
  http_version?: 1.0 | 1.1;
  domain_name?: string;
  admin_state_up: boolean;
}

export interface MemberSpec {
  id: string;
  name?: string;
  address: string;
  protocol_port: number;
  weight: number;
  admin_state_up: boolean;
  backup: boolean;
  monitor_address?: string;
  monitor_port?: number;
  subnet_id?: string;
}

export interface SessionPersistenceSpec {
  type: 'SOURCE_IP' | 'HTTP_COOKIE' | 'APP_COOKIE';
  cookie_name?: string;
  persistence_timeout?: number;
  persistence_granularity?: string;
}

export interface PoolSpec {
  id: string;
  name?: string;
  protocol: PoolProtocol;
  lb_algorithm: LbAlgorithm;
  admin_state_up: boolean;
  session_persistence?: SessionPersistenceSpec;
  healthmonitor?: HealthMonitorSpec;
  members: MemberSpec[];
  tls_enabled: boolean;
  tls_container_ref?: string;
  ca_tls_container_ref?: string;
  crl_container_ref?: string;
  tls_ciphers?: string;
  tls_versions?: TlsVersion[];
  alpn_protocols?: AlpnProtocol[];
}

export interface L7RuleSpec {
  id: string;
  type: L7RuleType;
  compare_type: L7CompareType;
  key?: string;
  value: string;
  invert: boolean;
  admin_state_up: boolean;
}

export interface L7PolicySpec {
  id: string;
  name?: string;
  action: L7Action;
  position?: number;
  redirect_url?: string;
  redirect_prefix?: string;
  redirect_http_code?: 301 | 302 | 303 | 307 | 308;
  redirect_pool_id?: string;
  admin_state_up: boolean;
  rules: L7RuleSpec[];
}

export interface ListenerSpec {
  id: string;
  name?: string;
  protocol: ListenerProtocol;
  protocol_port: number;
  admin_state_up: boolean;
  connection_limit?: number;
  default_pool?: PoolSpec;
  default_pool_id?: string;
  insert_headers: Record<string, boolean | string>;
  timeout_client_data?: number;
  timeout_member_connect?: number;
  timeout_member_data?: number;
  timeout_tcp_inspect?: number;
  default_tls_container_ref?: string;
  sni_container_refs: string[];
  client_ca_tls_container_ref?: string;
  client_authentication: 'NONE' | 'OPTIONAL' | 'MANDATORY';
  client_crl_container_ref?: string;
  tls_ciphers?: string;
  tls_versions?: TlsVersion[];
  alpn_protocols?: AlpnProtocol[];
  hsts_max_age?: number;
  hsts_include_subdomains: boolean;
  hsts_preload: boolean;
  allowed_cidrs?: string[];
  l7policies: L7PolicySpec[];
}

export interface LoadBalancerSpec {
  id: string;
  name?: string;
  project_id?: string;
  admin_state_up: boolean;
  topology: 'SINGLE' | 'ACTIVE_STANDBY';
  vip_address: string;
  additional_vips: { ip_address: string; subnet_id?: string }[];
  amphorae: { id: string; vrrp_ip: string }[];
  listeners: ListenerSpec[];
  pools: PoolSpec[];
}

export const LVS_PROTOCOLS: readonly string[] = ['UDP', 'SCTP'];
