"""Octavia data-model graphs for the tests, as the worker loads them.

Load balancers, VIPs and amphorae come from Octavia's own test helpers
(octavia.tests.common.data_model_helpers); listeners, pools, members,
monitors and L7 objects are octavia.common.data_models objects built with
the values Octavia's API stores (its defaults filled in: tls_ciphers and
tls_versions on TLS objects, HTTP fields on monitors, -1 connection limits,
insert_headers as the strings "true"/"false"), wired both ways as the
database relationships are.
"""

import uuid

from octavia.common import constants
from octavia.common import data_models as dm
from octavia.tests.common import data_model_helpers

_NS = uuid.UUID('6b3bd0a8-6c0f-4c07-9e5e-0bfb8f2d2f30')
PROJECT = 'e3cd678b11784734bc366148aa37580e'


def uid(name):
    """A fixed UUID per name, so that specs compare between runs."""
    return str(uuid.uuid5(_NS, name))


def common(ident, /, **kw):
    base = dict(id=uid(ident), project_id=PROJECT,
                provisioning_status=constants.ACTIVE,
                operating_status=constants.ONLINE, enabled=True)
    base.update(kw)
    return base


def load_balancer(topology=constants.TOPOLOGY_SINGLE, amphorae=1,
                  additional_vips=None):
    vip = data_model_helpers.generate_vip()
    amps = [data_model_helpers.generate_amphora() for _ in range(amphorae)]
    lb = data_model_helpers.generate_load_balancer(
        vip=vip, amphorae=amps, topology=topology,
        additional_vips=additional_vips)
    lb.project_id = PROJECT
    lb.enabled = True
    lb.provisioning_status = constants.ACTIVE
    if topology == constants.TOPOLOGY_ACTIVE_STANDBY:
        for amp, role in zip(amps, (constants.ROLE_MASTER,
                                    constants.ROLE_BACKUP)):
            amp.role = role
    return lb


def pool(lb, name, protocol, algorithm=constants.LB_ALGORITHM_ROUND_ROBIN,
         **kw):
    p = dm.Pool(**common(name, name=name, protocol=protocol,
                         lb_algorithm=algorithm, load_balancer_id=lb.id,
                         load_balancer=lb, tls_enabled=False, **kw))
    lb.pools.append(p)
    return p


def member(p, name, address, port, **kw):
    values = dict(weight=1, backup=False)
    values.update(kw)
    m = dm.Member(**common(name, name=name, ip_address=address,
                           protocol_port=port, pool_id=p.id, pool=p,
                           **values))
    p.members.append(m)
    return m


def monitor(p, kind, **kw):
    values = dict(delay=5, timeout=3, rise_threshold=2, fall_threshold=3)
    if kind in (constants.HEALTH_MONITOR_HTTP,
                constants.HEALTH_MONITOR_HTTPS):
        values.update(http_method='GET', url_path='/', expected_codes='200')
    values.update(kw)
    hm = dm.HealthMonitor(**common(f'{p.name}-hm', name=f'{p.name}-hm',
                                   type=kind, pool_id=p.id, pool=p,
                                   **values))
    p.health_monitor = hm
    return hm


def persistence(p, kind, **kw):
    p.session_persistence = dm.SessionPersistence(pool_id=p.id, type=kind,
                                                  pool=p, **kw)
    return p.session_persistence


def listener(lb, name, protocol, port, default_pool=None, **kw):
    values = dict(connection_limit=-1, insert_headers={},
                  timeout_client_data=50000, timeout_member_connect=5000,
                  timeout_member_data=50000, timeout_tcp_inspect=0,
                  client_authentication=constants.CLIENT_AUTH_NONE,
                  peer_port=constants.HAPROXY_BASE_PEER_PORT)
    if protocol in constants.LVS_PROTOCOLS:
        values.update(timeout_client_data=None, timeout_member_connect=None,
                      timeout_member_data=None, timeout_tcp_inspect=None)
    values.update(kw)
    li = dm.Listener(**common(name, name=name, protocol=protocol,
                              protocol_port=port, load_balancer_id=lb.id,
                              load_balancer=lb,
                              default_pool_id=(default_pool.id
                                               if default_pool else None),
                              default_pool=default_pool, **values))
    lb.listeners.append(li)
    if default_pool is not None:
        li.pools.append(default_pool)
        default_pool.listeners.append(li)
    return li


def policy(li, name, action, rules=(), **kw):
    pol = dm.L7Policy(**common(name, name=name, action=action,
                               listener_id=li.id, listener=li,
                               position=len(li.l7policies) + 1, **kw))
    if pol.redirect_pool is not None:
        pol.redirect_pool_id = pol.redirect_pool.id
        pol.redirect_pool.l7policies.append(pol)
        if pol.redirect_pool not in li.pools and pol.enabled:
            li.pools.append(pol.redirect_pool)
    for i, (kind, compare, value, extra) in enumerate(rules):
        values = dict(invert=False)
        values.update(extra)
        pol.l7rules.append(dm.L7Rule(**common(
            f'{name}-rule{i}', type=kind, compare_type=compare, value=value,
            l7policy_id=pol.id, l7policy=pol, **values)))
    li.l7policies.append(pol)
    return pol


def tls_settings(kind):
    """What Octavia's API stores on a TLS listener or pool by default."""
    from oslo_config import cfg
    api = cfg.CONF.api_settings

    def default(name):
        return getattr(api, f'default_{kind}_{name}')
    return dict(tls_ciphers=default('ciphers'),
                tls_versions=list(default('tls_versions')),
                alpn_protocols=list(default('alpn_protocols')))


# -- the load balancers -------------------------------------------------------


def http_lb():
    """HTTP with every L7 action and rule type, a TCP listener with PROXY,
    HTTPS passthrough; disabled and PENDING_DELETE objects on the way."""
    lb = load_balancer()
    web = pool(lb, 'web', constants.PROTOCOL_HTTP)
    monitor(web, constants.HEALTH_MONITOR_HTTP, url_path='/health',
            expected_codes='200-204', http_version=1.1,
            domain_name='app.example.org')
    persistence(web, constants.SESSION_PERSISTENCE_HTTP_COOKIE)
    member(web, 'web-1', '10.0.1.11', 8080)
    member(web, 'web-2', '10.0.1.12', 8080, weight=5,
           monitor_address='10.0.1.112', monitor_port=9090,
           subnet_id=uid('member-subnet'))
    member(web, 'web-3', '10.0.1.13', 8080, backup=True, enabled=False)
    member(web, 'web-gone', '10.0.1.14', 8080,
           provisioning_status=constants.PENDING_DELETE)

    api = pool(lb, 'api', constants.PROTOCOL_HTTP,
               constants.LB_ALGORITHM_LEAST_CONNECTIONS)
    persistence(api, constants.SESSION_PERSISTENCE_APP_COOKIE,
                cookie_name='JSESSIONID')
    member(api, 'api-1', '10.0.2.11', 9000)

    http = listener(lb, 'http', constants.PROTOCOL_HTTP, 80,
                    default_pool=web, connection_limit=1000,
                    insert_headers={'X-Forwarded-For': 'true',
                                    'X-Forwarded-Port': 'false'},
                    allowed_cidrs=[dm.ListenerCidr(cidr='192.0.2.0/24'),
                                   dm.ListenerCidr(cidr='2001:db8::/32')])
    policy(http, 'to-api', constants.L7POLICY_ACTION_REDIRECT_TO_POOL,
           redirect_pool=api,
           rules=[(constants.L7RULE_TYPE_PATH,
                   constants.L7RULE_COMPARE_TYPE_STARTS_WITH, '/api',
                   # Octavia keeps a key it ignores on a PATH rule.
                   {'key': 'ignored'}),
                  (constants.L7RULE_TYPE_FILE_TYPE,
                   constants.L7RULE_COMPARE_TYPE_REGEX, 'jpe?g', {}),
                  (constants.L7RULE_TYPE_PATH,
                   constants.L7RULE_COMPARE_TYPE_CONTAINS, '/old',
                   {'provisioning_status': constants.PENDING_DELETE})])
    policy(http, 'moved', constants.L7POLICY_ACTION_REDIRECT_TO_URL,
           redirect_url='https://www.example.org/moved',
           redirect_http_code=302,
           rules=[(constants.L7RULE_TYPE_HOST_NAME,
                   constants.L7RULE_COMPARE_TYPE_EQUAL_TO, 'old.example.org',
                   {})])
    policy(http, 'prefix', constants.L7POLICY_ACTION_REDIRECT_PREFIX,
           redirect_prefix='https://static.example.org',
           redirect_http_code=301,
           rules=[(constants.L7RULE_TYPE_HEADER,
                   constants.L7RULE_COMPARE_TYPE_ENDS_WITH, 'bot',
                   {'key': 'User-Agent'})])
    policy(http, 'deny', constants.L7POLICY_ACTION_REJECT,
           rules=[(constants.L7RULE_TYPE_COOKIE,
                   constants.L7RULE_COMPARE_TYPE_EQUAL_TO, 'evil value',
                   {'key': 'session', 'invert': True})])
    policy(http, 'off', constants.L7POLICY_ACTION_REJECT, enabled=False,
           rules=[(constants.L7RULE_TYPE_PATH,
                   constants.L7RULE_COMPARE_TYPE_EQUAL_TO, '/off',
                   {'enabled': False})])
    policy(http, 'going', constants.L7POLICY_ACTION_REJECT,
           provisioning_status=constants.PENDING_DELETE,
           rules=[(constants.L7RULE_TYPE_PATH,
                   constants.L7RULE_COMPARE_TYPE_EQUAL_TO, '/going', {})])

    tcp = pool(lb, 'tcp-pool', constants.PROTOCOL_PROXY,
               constants.LB_ALGORITHM_SOURCE_IP)
    # Octavia's sample monitors carry HTTP fields on a PING monitor.
    monitor(tcp, constants.HEALTH_MONITOR_PING, http_method='GET',
            url_path='/', expected_codes='200')
    persistence(tcp, constants.SESSION_PERSISTENCE_SOURCE_IP)
    member(tcp, 'tcp-1', '10.0.3.11', 5000)
    listener(lb, 'tcp', constants.PROTOCOL_TCP, 81, default_pool=tcp,
             timeout_tcp_inspect=None, timeout_client_data=None)

    passthrough = pool(lb, 'pt-pool', constants.PROTOCOL_HTTPS)
    monitor(passthrough, constants.HEALTH_MONITOR_TLS_HELLO)
    member(passthrough, 'pt-1', '10.0.4.11', 443)
    listener(lb, 'passthrough', constants.PROTOCOL_HTTPS, 443,
             default_pool=passthrough, enabled=False)
    return lb


def tls_lb():
    """TERMINATED_HTTPS with SNI, client authentication with a CRL, HSTS,
    ALPN and SSL headers; a re-encrypting pool with a client certificate,
    CA and CRL; a PROMETHEUS listener."""
    lb = load_balancer()
    backend = pool(lb, 'reencrypt', constants.PROTOCOL_HTTP,
                   tls_certificate_id='pool-client-cert-ref',
                   ca_tls_certificate_id='pool-ca-ref',
                   crl_container_id='pool-crl-ref')
    backend.tls_enabled = True
    for key, value in tls_settings('pool').items():
        setattr(backend, key, value)
    monitor(backend, constants.HEALTH_MONITOR_HTTPS)
    member(backend, 'secure-1', '10.0.5.11', 8443)
    li = listener(lb, 'https', constants.PROTOCOL_TERMINATED_HTTPS, 443,
                  default_pool=backend,
                  tls_certificate_id='listener-cert-ref',
                  client_ca_tls_certificate_id='client-ca-ref',
                  client_crl_container_id='client-crl-ref',
                  client_authentication=constants.CLIENT_AUTH_MANDATORY,
                  insert_headers={'X-Forwarded-Proto': 'true',
                                  'X-SSL-Client-Verify': 'true',
                                  'X-SSL-Client-DN': 'true'},
                  hsts_max_age=31536000, hsts_include_subdomains=True,
                  hsts_preload=False, **tls_settings('listener'))
    li.sni_containers = [dm.SNI(listener_id=li.id, position=i,
                                tls_container_id=ref)
                         for i, ref in enumerate(('sni-a-ref', 'sni-b-ref'))]
    policy(li, 'no-cert', constants.L7POLICY_ACTION_REJECT,
           rules=[(constants.L7RULE_TYPE_SSL_CONN_HAS_CERT,
                   constants.L7RULE_COMPARE_TYPE_EQUAL_TO, 'True',
                   {'invert': True}),
                  (constants.L7RULE_TYPE_SSL_DN_FIELD,
                   constants.L7RULE_COMPARE_TYPE_STARTS_WITH, 'admin',
                   {'key': 'CN'}),
                  (constants.L7RULE_TYPE_SSL_VERIFY_RESULT,
                   constants.L7RULE_COMPARE_TYPE_EQUAL_TO, '0', {})])
    listener(lb, 'metrics', 'PROMETHEUS', 9100)
    return lb


def lvs_lb():
    """ACTIVE_STANDBY with UDP and SCTP listeners and an IPv6 additional
    VIP."""
    lb = load_balancer(constants.TOPOLOGY_ACTIVE_STANDBY, amphorae=2,
                       additional_vips=[{'ip_address': '2001:db8::100',
                                         'subnet_id': uid('v6-subnet')}])
    dns = pool(lb, 'dns-pool', constants.PROTOCOL_UDP)
    monitor(dns, constants.HEALTH_MONITOR_UDP_CONNECT)
    persistence(dns, constants.SESSION_PERSISTENCE_SOURCE_IP,
                persistence_timeout=360,
                persistence_granularity='255.255.255.0')
    member(dns, 'dns-1', '10.0.6.11', 53)
    member(dns, 'dns-2', '2001:db8::11', 53)
    listener(lb, 'dns', constants.PROTOCOL_UDP, 53, default_pool=dns,
             connection_limit=-1)
    sig = pool(lb, 'sig-pool', lib_sctp())
    monitor(sig, lib_sctp())
    member(sig, 'sig-1', '10.0.7.11', 3868)
    listener(lb, 'sig', lib_sctp(), 3868, default_pool=sig,
             connection_limit=5000)
    http = pool(lb, 'peered-pool', constants.PROTOCOL_HTTP,
                constants.LB_ALGORITHM_SOURCE_IP)
    persistence(http, constants.SESSION_PERSISTENCE_SOURCE_IP)
    member(http, 'peered-1', '10.0.8.11', 80)
    listener(lb, 'peered', constants.PROTOCOL_HTTP, 80, default_pool=http)
    return lb


def lib_sctp():
    from octavia_lib.common import constants as lib_consts
    return lib_consts.PROTOCOL_SCTP


def deleting_pools_lb():
    """A listener whose default pool, and a policy whose redirect pool, are
    being deleted."""
    lb = load_balancer()
    going = pool(lb, 'going', constants.PROTOCOL_HTTP,
                 provisioning_status=constants.PENDING_DELETE)
    member(going, 'going-1', '10.0.9.11', 80)
    monitor(going, constants.HEALTH_MONITOR_TCP)
    also = pool(lb, 'also-going', constants.PROTOCOL_HTTP,
                provisioning_status=constants.PENDING_DELETE)
    li = listener(lb, 'http', constants.PROTOCOL_HTTP, 80,
                  default_pool=going)
    policy(li, 'to-going', constants.L7POLICY_ACTION_REDIRECT_TO_POOL,
           redirect_pool=also,
           rules=[(constants.L7RULE_TYPE_PATH,
                   constants.L7RULE_COMPARE_TYPE_STARTS_WITH, '/x', {})])
    return lb


def ipv6_lb():
    """An IPv6 VIP and members, a disabled load balancer."""
    lb = load_balancer()
    lb.vip.ip_address = '2001:db8::10'
    lb.enabled = False
    p = pool(lb, 'v6-pool', constants.PROTOCOL_TCP)
    monitor(p, constants.HEALTH_MONITOR_TCP, timeout=5, delay=5)
    member(p, 'v6-1', '2001:db8:1::11', 80)
    member(p, 'v6-2', '2001:db8:1::12', 80, weight=0)
    listener(lb, 'v6', constants.PROTOCOL_TCP, 80, default_pool=p)
    return lb


ALL = {'http': http_lb, 'tls': tls_lb, 'lvs': lvs_lb,
       'deleting-pools': deleting_pools_lb, 'ipv6': ipv6_lb}
