// What an uploaded haproxy config may say: the lines that the JinjaTemplater
// of Octavia 11, 16 and 19 and the agent's own 2.0 renderer (templates/)
// produce (and the agent's own rewrite of Octavia's legacy health checks), as data. test/interop/haproxy-allowed.test.ts renders every
// fixture spec with all of them, every feature on, and checks that each
// rendered line matches an entry here and that every entry here is used by
// some render: the list is exactly what the templates can say.
//
// A line pattern is `<section> <words...>`: a plain word must be written as
// is, `{a|b}` is one of the words, `<slot>` is one word of a type (SLOTS in
// haproxy-config.ts), `<slot>?` may be left out at the end. Three slots take
// the rest of the line: <server-options> and <bind-options> (OPTIONS below,
// any order), <acl> (a sample expression, -i/-m flags, then values) and
// <cond> (an optional `if`/`unless` condition).
// Operators extend it with [amphora_agent] config_policy_extension
// (haproxy-allowed-extension.ts), in the same notation.

export interface AllowList {
  lines: string[];
  /** Options of `server` lines: keyword -> its value (a slot or `{a|b}`), '' for a flag. */
  serverOptions: Record<string, string>;
  /** Options of `bind` lines, likewise. */
  bindOptions: Record<string, string>;
  /** Sample fetches allowed in expressions (acl, conditions, `%[...]`, stick, sni). */
  fetches: string[];
  /** Converters allowed after a fetch (`ssl_c_sha1,hex`). */
  converters: string[];
}

export const OCTAVIA_ALLOWED: AllowList = {
  lines: [
    'global',
    'global daemon',
    'global user <user>',
    'global log <syslog> <facility> <level>?',
    'global maxconn <int>',
    'global nbthread <int>',
    'global cpu-map <cpu-map> <cpu-set>',
    // Octavia 16 renders the global `external-check` on the cpu-map line (fixed upstream in 8c0248ad0).
    'global cpu-map <cpu-map> <cpu-set> external-check',
    'global external-check',
    'global insecure-fork-wanted',
    'global server-state-file <state-file>',
    'global stats socket <stats-socket> mode <int> level user',
    'global tune.ssl.cachesize <int>',

    'defaults',
    'defaults log global',
    'defaults no log',
    'defaults option {http-keep-alive|redispatch|splice-request|splice-response}',
    'defaults retries <int>',

    'frontend <id>',
    'frontend acl <id> <acl>',
    'frontend bind <addr> <bind-options>',
    'frontend default_backend <id>',
    'frontend use_backend <id> <cond>',
    'frontend http-request deny <cond>',
    'frontend http-request reject',
    'frontend http-request use-service prometheus-exporter <cond>',
    'frontend http-response set-header <header> <log-format>',
    'frontend log-format <log-format>',
    'frontend maxconn <int>',
    'frontend mode {http|tcp}',
    'frontend no log',
    'frontend option http-use-htx',
    'frontend redirect code <int> location <log-format> <cond>',
    'frontend redirect code <int> prefix <log-format> <cond>',
    'frontend redirect location <log-format> <cond>',
    'frontend redirect prefix <log-format> <cond>',
    'frontend redirect scheme https <cond>',
    'frontend tcp-request inspect-delay <time>',
    'frontend timeout {client|http-request} <time>',

    'backend <id>',
    'backend balance {first|leastconn|roundrobin|source}',
    'backend cookie <id> insert indirect nocache',
    'backend external-check command <ping-wrapper>',
    'backend fullconn <int>',
    'backend http-check expect rstatus <statuses>',
    'backend http-check send hdr <header> <log-format>',
    // Octavia 11-16's legacy `option httpchk ... HTTP/1.1\r\nHost: x` as the agent rewrites it for haproxy 2.7+ (legacy-httpchk.ts).
    'backend http-check send meth <method> uri <uri> ver {HTTP/1.0|HTTP/1.1}',
    'backend http-check send meth <method> uri <uri> ver {HTTP/1.0|HTTP/1.1} hdr <header> <log-format>',
    'backend option httpchk',
    'backend http-request set-header <header> <log-format>',
    'backend http-reuse safe',
    'backend load-server-state-from-file global',
    'backend mode {http|tcp}',
    'backend no log',
    'backend option {allbackups|external-check|forwardfor|ssl-hello-chk}',
    'backend option httpchk <method> <uri> <httpchk-version>?',
    'backend server <id> <addr> <server-options>',
    'backend stick {match|on|store-response} <fetch>',
    'backend stick-table type {ip|ipv6} size <size>',
    'backend stick-table type {ip|ipv6} size <size> peers <id>',
    'backend stick-table type string len <int> size <size>',
    'backend stick-table type string len <int> size <size> peers <id>',
    'backend timeout {check|connect|server} <time>',

    'peers <id>',
    'peers peer <id> <addr>',
  ],
  serverOptions: {
    weight: '<int>',
    check: '',
    'check-ssl': '',
    'check-alpn': '<alpn>',
    inter: '<time>',
    fall: '<int>',
    rise: '<int>',
    addr: '<ip>',
    port: '<int>',
    backup: '',
    disabled: '',
    cookie: '<id>',
    'init-state': '{fully-down}',
    'send-proxy': '',
    'send-proxy-v2': '',
    'send-proxy-v2-ssl-cn': '',
    ssl: '',
    verify: '{none|required}',
    sni: '<fetch>',
    crt: '<cert-file>',
    'ca-file': '<cert-file>',
    'crl-file': '<cert-file>',
    ciphers: '<ciphers>',
    ciphersuites: '<ciphers>',
    alpn: '<alpn>',
    'no-sslv3': '',
    'no-tlsv10': '',
    'no-tlsv11': '',
    'no-tlsv12': '',
    'no-tlsv13': '',
  },
  bindOptions: {
    ssl: '',
    'crt-list': '<crt-list>',
    'ca-file': '<cert-file>',
    'crl-file': '<cert-file>',
    verify: '{none|optional|required}',
    ciphers: '<ciphers>',
    ciphersuites: '<ciphers>',
    alpn: '<alpn>',
    'no-sslv3': '',
    'no-tlsv10': '',
    'no-tlsv11': '',
    'no-tlsv12': '',
    'no-tlsv13': '',
  },
  fetches: [
    'dst_port',
    'path',
    'path_end',
    'req.cook',
    'req.hdr',
    'res.cook',
    'src',
    'ssl_c_i_dn',
    'ssl_c_notafter',
    'ssl_c_notbefore',
    'ssl_c_s_dn',
    'ssl_c_sha1',
    'ssl_c_used',
    'ssl_c_verify',
    'ssl_fc',
    'ssl_fc_sni',
  ],
  converters: ['hex'],
};
