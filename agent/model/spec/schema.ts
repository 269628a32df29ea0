// The load-balancer spec as a JSON Schema: the one definition of what a control
// plane may send. Field names and enumerations are Octavia's API object model
// (the single-call "graph" of POST /v2/lbaas/loadbalancers), with two agent
// facts in place of Barbican references: the *_ref fields name certificate
// files the agent already holds for this load balancer.
//
// Every string that reaches a haproxy or keepalived file is constrained here so
// that it cannot end a line, open a comment or split a word; the templates can
// then write values without guessing.

/** Ids become haproxy proxy and server names, file names and ACL names. */
const ID = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$' } as const;
/** Free text that is never rendered, but still single-line and unquoted. */
const NAME = { type: 'string', maxLength: 255, pattern: '^[^\\u0000-\\u001f\\u007f"\'\\\\]*$' } as const;
const IP = { type: 'string', anyOf: [{ format: 'ipv4' }, { format: 'ipv6' }] } as const;
const PORT = { type: 'integer', minimum: 1, maximum: 65535 } as const;
const ENABLED = { type: 'boolean', default: true } as const;
/** A certificate, key, CA or CRL file the agent holds for this load balancer. */
const CERT_FILE = { type: 'string', pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\\.pem$' } as const;
/** OpenSSL cipher string, Octavia's VALID_CIPHER_RE. */
const CIPHERS = { type: 'string', minLength: 1, maxLength: 2048, pattern: '^[A-Za-z0-9+!:@=_.-]+$' } as const;
const TLS_VERSIONS = {
  type: 'array',
  uniqueItems: true,
  minItems: 1,
  items: { enum: ['SSLv3', 'TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'] },
} as const;
const ALPN = {
  type: 'array',
  uniqueItems: true,
  minItems: 1,
  items: { enum: ['h2', 'http/1.1', 'http/1.0'] },
} as const;
/** Milliseconds, Octavia's limits (0 to 24 days). */
const TIMEOUT_MS = { type: 'integer', minimum: 0, maximum: 2073600000 } as const;

const healthMonitor = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'delay', 'timeout', 'max_retries'],
  properties: {
    id: ID,
    name: NAME,
    type: { enum: ['HTTP', 'HTTPS', 'PING', 'TCP', 'TLS-HELLO', 'UDP-CONNECT', 'SCTP'] },
    delay: { type: 'integer', minimum: 1, maximum: 2147483647 },
    timeout: { type: 'integer', minimum: 1, maximum: 2147483647 },
    max_retries: { type: 'integer', minimum: 1, maximum: 10 },
    max_retries_down: { type: 'integer', minimum: 1, maximum: 10, default: 3 },
    http_method: { enum: ['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE'] },
    // A path and query: no spaces, quotes, backslashes or '#' (haproxy comment).
    url_path: { type: 'string', maxLength: 2048, pattern: '^/[\\u0021\\u0024-\\u0026\\u0028-\\u005b\\u005d-\\u007e]*$' },
    // Octavia's forms: "200", "200,202", "200-204" (codes 100-599).
    expected_codes: { type: 'string', pattern: '^[1-5][0-9][0-9]((, ?[1-5][0-9][0-9])*|-[1-5][0-9][0-9])$' },
    http_version: { enum: [1.0, 1.1] },
    domain_name: {
      type: 'string',
      maxLength: 255,
      pattern: '^(?=.{1,255}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\\.?$',
    },
    admin_state_up: ENABLED,
  },
} as const;

export const MEMBER_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'address', 'protocol_port'],
  properties: {
    id: ID,
    name: NAME,
    address: IP,
    protocol_port: PORT,
    weight: { type: 'integer', minimum: 0, maximum: 256, default: 1 },
    admin_state_up: ENABLED,
    backup: { type: 'boolean', default: false },
    monitor_address: IP,
    monitor_port: PORT,
    subnet_id: ID,
  },
} as const;

const sessionPersistence = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: { enum: ['SOURCE_IP', 'HTTP_COOKIE', 'APP_COOKIE'] },
    // RFC 6265 token characters, as Octavia's API accepts.
    cookie_name: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_!$%&*+.^`|~-]+$' },
    persistence_timeout: { type: 'integer', minimum: 1, maximum: 2147483647 },
    persistence_granularity: IP,
  },
} as const;

const pool = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'protocol', 'lb_algorithm'],
  properties: {
    id: ID,
    name: NAME,
    description: NAME,
    protocol: { enum: ['HTTP', 'HTTPS', 'TCP', 'PROXY', 'PROXYV2', 'UDP', 'SCTP'] },
    lb_algorithm: { enum: ['ROUND_ROBIN', 'LEAST_CONNECTIONS', 'SOURCE_IP'] },
    admin_state_up: ENABLED,
    session_persistence: sessionPersistence,
    healthmonitor: healthMonitor,
    members: { type: 'array', items: MEMBER_SCHEMA, default: [] },
    tls_enabled: { type: 'boolean', default: false },
    tls_container_ref: CERT_FILE,
    ca_tls_container_ref: CERT_FILE,
    crl_container_ref: CERT_FILE,
    tls_ciphers: CIPHERS,
    tls_versions: TLS_VERSIONS,
    alpn_protocols: ALPN,
  },
} as const;

// No control characters, and nothing haproxy would read as the end of a word
// or a comment: Octavia's INVALID_URL_CHARS_RE plus quotes, backslash and '#'
// is left to escaping.
const REDIRECT_TARGET = { type: 'string', minLength: 1, maxLength: 2048, pattern: '^[^\\u0000-\\u0020\\u007f-\\u009f]+$' } as const;

const l7rule = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'type', 'compare_type', 'value'],
  properties: {
    id: ID,
    type: { enum: ['HOST_NAME', 'PATH', 'FILE_TYPE', 'HEADER', 'COOKIE', 'SSL_CONN_HAS_CERT', 'SSL_VERIFY_RESULT', 'SSL_DN_FIELD'] },
    compare_type: { enum: ['REGEX', 'STARTS_WITH', 'ENDS_WITH', 'CONTAINS', 'EQUAL_TO'] },
    // Header, cookie or DN field name: an HTTP token.
    key: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_!$%&*+.^`|~-]+$' },
    // Any printable text; spaces, quotes, '#' and backslashes are escaped for haproxy.
    value: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[^\\u0000-\\u001f\\u007f-\\u009f]+$' },
    invert: { type: 'boolean', default: false },
    admin_state_up: ENABLED,
  },
} as const;

const l7policy = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'action'],
  properties: {
    id: ID,
    name: NAME,
    description: NAME,
    action: { enum: ['REJECT', 'REDIRECT_TO_URL', 'REDIRECT_TO_POOL', 'REDIRECT_PREFIX'] },
    position: { type: 'integer', minimum: 1, maximum: 2147483647 },
    redirect_url: REDIRECT_TARGET,
    redirect_prefix: REDIRECT_TARGET,
    redirect_http_code: { enum: [301, 302, 303, 307, 308] },
    redirect_pool_id: ID,
    admin_state_up: ENABLED,
    rules: { type: 'array', items: l7rule, default: [] },
  },
} as const;

const listener = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'protocol', 'protocol_port'],
  properties: {
    id: ID,
    name: NAME,
    description: NAME,
    protocol: { enum: ['HTTP', 'HTTPS', 'TCP', 'TERMINATED_HTTPS', 'PROMETHEUS', 'UDP', 'SCTP'] },
    protocol_port: PORT,
    admin_state_up: ENABLED,
    // -1 (and 0, as Octavia reads it) means the configured default.
    connection_limit: { type: 'integer', minimum: -1, maximum: 1000000 },
    default_pool: pool,
    default_pool_id: ID,
    insert_headers: {
      type: 'object',
      propertyNames: {
        enum: [
          'X-Forwarded-For',
          'X-Forwarded-Port',
          'X-Forwarded-Proto',
          'X-SSL-Client-Verify',
          'X-SSL-Client-Has-Cert',
          'X-SSL-Client-DN',
          'X-SSL-Client-CN',
          'X-SSL-Issuer',
          'X-SSL-Client-SHA1',
          'X-SSL-Client-Not-Before',
          'X-SSL-Client-Not-After',
        ],
      },
      // Octavia stores these as the strings "true"/"false"; booleans are accepted too.
      additionalProperties: { anyOf: [{ type: 'boolean' }, { type: 'string', pattern: '^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$' }] },
      default: {},
    },
    timeout_client_data: TIMEOUT_MS,
    timeout_member_connect: TIMEOUT_MS,
    timeout_member_data: TIMEOUT_MS,
    timeout_tcp_inspect: TIMEOUT_MS,
    default_tls_container_ref: CERT_FILE,
    sni_container_refs: { type: 'array', items: CERT_FILE, uniqueItems: true, default: [] },
    client_ca_tls_container_ref: CERT_FILE,
    client_authentication: { enum: ['NONE', 'OPTIONAL', 'MANDATORY'], default: 'NONE' },
    client_crl_container_ref: CERT_FILE,
    tls_ciphers: CIPHERS,
    tls_versions: TLS_VERSIONS,
    alpn_protocols: ALPN,
    hsts_max_age: { type: 'integer', minimum: 0, maximum: 2147483647 },
    hsts_include_subdomains: { type: 'boolean', default: false },
    hsts_preload: { type: 'boolean', default: false },
    // Enforced outside haproxy (security groups or the VIP nftables rules).
    allowed_cidrs: { type: 'array', uniqueItems: true, items: { type: 'string', pattern: '^[0-9A-Fa-f.:]+/[0-9]{1,3}$' } },
    l7policies: { type: 'array', items: l7policy, default: [] },
  },
} as const;

export const LOAD_BALANCER_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://openstack.org/octavia/amphora-agent/loadbalancer-spec.json',
  title: 'Load balancer spec',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'vip_address', 'listeners'],
  properties: {
    id: ID,
    name: NAME,
    description: NAME,
    project_id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
    admin_state_up: ENABLED,
    topology: { enum: ['SINGLE', 'ACTIVE_STANDBY'], default: 'SINGLE' },
    vip_address: IP,
    additional_vips: {
      type: 'array',
      default: [],
      items: { type: 'object', additionalProperties: false, required: ['ip_address'], properties: { ip_address: IP, subnet_id: ID } },
    },
    // The amphorae of this load balancer (both of an ACTIVE_STANDBY pair): haproxy peers.
    amphorae: {
      type: 'array',
      default: [],
      items: { type: 'object', additionalProperties: false, required: ['id', 'vrrp_ip'], properties: { id: ID, vrrp_ip: IP } },
    },
    listeners: { type: 'array', items: listener, minItems: 1 },
    // Pools referred to by id (default_pool_id, redirect_pool_id), as shared LB pools.
    pools: { type: 'array', items: pool, default: [] },
  },
} as const;
