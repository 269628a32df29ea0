"""build_spec() on Octavia's data models: every spec is valid for the
agent's schema, and the fields say what Octavia's templater reads from the
same models."""

import unittest

from tests import base
from tests import models

from octavia.common import constants
from octavia.tests.common import sample_data_models

from amphora_spec_driver import spec as spec_lib

TLS_FILES = spec_lib.CertificateFiles(
    listeners={models.uid('https'): spec_lib.ListenerFiles(
        default='a' * 40 + '.pem', sni=['b' * 40 + '.pem', 'c' * 40 + '.pem'],
        client_ca='d' * 40 + '.pem', client_crl='e' * 40 + '.pem')},
    pools={models.uid('reencrypt'): spec_lib.PoolFiles(
        client_cert='f' * 40 + '.pem', ca='0' * 40 + '.pem',
        crl='1' * 40 + '.pem')})


def build(lb, **kw):
    kw.setdefault('defaults',
                  spec_lib.ControllerDefaults.from_conf(base.CONF))
    return spec_lib.build_spec(lb, **kw)


def by_id(items, name):
    wanted = models.uid(name)
    found = [x for x in items if x['id'] == wanted]
    assert len(found) == 1, f'{name}: {len(found)} found'
    return found[0]


class EverySpecIsValid(unittest.TestCase):

    def test_every_model_builds_a_valid_spec(self):
        for name, make in models.ALL.items():
            with self.subTest(name):
                certs = TLS_FILES if name == 'tls' else None
                spec = build(make(), certificates=certs)
                self.assertEqual(base.spec_problems(spec), [])
                base.write_spec(name, spec)

    def test_octavia_sample_objects(self):
        # Members, a monitor and an L7 policy from Octavia's own sample data
        # (octavia.tests.common.sample_data_models), which carries what its
        # API would not store together: HTTP fields and a domain name on a
        # PING monitor, a key on a PATH rule, weight 0.
        sample = sample_data_models.SampleDriverDataModels()
        lb = models.load_balancer()
        pool = models.pool(lb, 'sample-pool', constants.PROTOCOL_HTTP)
        pool.members = [sample.db_member1, sample.db_member2]
        pool.health_monitor = sample.db_hm2
        # Its timeout (3) is above its delay (1): Octavia's API takes that,
        # and so does the agent (run-tests.sh renders the spec).
        li = models.listener(lb, 'sample', constants.PROTOCOL_HTTP, 80,
                             default_pool=pool)
        li.l7policies = [sample.db_l7policy1]
        spec = build(lb)
        self.assertEqual(base.spec_problems(spec), [])
        base.write_spec('octavia-sample', spec)
        out = spec['pools'][0]
        self.assertEqual([m['id'] for m in out['members']],
                         [sample.member1_id, sample.member2_id])
        self.assertEqual(out['members'][0]['weight'], 0)
        self.assertEqual(out['healthmonitor']['type'], 'PING')
        self.assertNotIn('url_path', out['healthmonitor'])
        self.assertNotIn('domain_name', out['healthmonitor'])
        rule = spec['listeners'][0]['l7policies'][0]['rules'][0]
        self.assertNotIn('key', rule)


class HttpLoadBalancer(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.lb = models.http_lb()
        cls.spec = build(cls.lb)
        cls.http = by_id(cls.spec['listeners'], 'http')
        cls.web = by_id(cls.spec['pools'], 'web')

    def test_load_balancer(self):
        lb = self.lb
        self.assertEqual(self.spec['id'], lb.id)
        self.assertEqual(self.spec['vip_address'], lb.vip.ip_address)
        self.assertEqual(self.spec['project_id'], models.PROJECT)
        self.assertEqual(self.spec['topology'], 'SINGLE')
        self.assertNotIn('amphorae', self.spec)  # peers: ACTIVE_STANDBY only
        self.assertEqual([li['id'] for li in self.spec['listeners']],
                         [li.id for li in lb.listeners])

    def test_members_as_octavia_renders_them(self):
        members = {m['name']: m for m in self.web['members']}
        self.assertEqual(sorted(members), ['web-1', 'web-2', 'web-3'],
                         'the PENDING_DELETE member is left out')
        self.assertEqual(members['web-1'], {
            'id': models.uid('web-1'), 'name': 'web-1',
            'address': '10.0.1.11', 'protocol_port': 8080, 'weight': 1,
            'admin_state_up': True, 'backup': False})
        self.assertEqual(members['web-2']['monitor_address'], '10.0.1.112')
        self.assertEqual(members['web-2']['monitor_port'], 9090)
        self.assertEqual(members['web-2']['subnet_id'],
                         models.uid('member-subnet'))
        self.assertFalse(members['web-3']['admin_state_up'])
        self.assertTrue(members['web-3']['backup'])

    def test_monitors(self):
        self.assertEqual(self.web['healthmonitor'], {
            'id': models.uid('web-hm'), 'name': 'web-hm', 'type': 'HTTP',
            'delay': 5, 'timeout': 3, 'max_retries': 2,
            'max_retries_down': 3, 'http_method': 'GET',
            'url_path': '/health', 'expected_codes': '200-204',
            'http_version': 1.1, 'domain_name': 'app.example.org',
            'admin_state_up': True})
        ping = by_id(self.spec['pools'], 'tcp-pool')['healthmonitor']
        self.assertEqual(ping['type'], 'PING')
        for field in ('http_method', 'url_path', 'expected_codes'):
            self.assertNotIn(field, ping)

    def test_persistence(self):
        self.assertEqual(self.web['session_persistence'],
                         {'type': 'HTTP_COOKIE'})
        self.assertEqual(by_id(self.spec['pools'], 'api')[
            'session_persistence'],
            {'type': 'APP_COOKIE', 'cookie_name': 'JSESSIONID'})

    def test_listener_fields(self):
        http = self.http
        self.assertEqual(http['default_pool_id'], models.uid('web'))
        self.assertEqual(http['connection_limit'], 1000)
        self.assertEqual(http['insert_headers'], {
            'X-Forwarded-For': 'true', 'X-Forwarded-Port': 'false'})
        self.assertEqual(http['allowed_cidrs'],
                         ['192.0.2.0/24', '2001:db8::/32'])
        self.assertEqual(http['timeout_client_data'], 50000)
        self.assertNotIn('default_tls_container_ref', http)
        self.assertNotIn('tls_ciphers', http)
        self.assertFalse(by_id(self.spec['listeners'],
                               'passthrough')['admin_state_up'])

    def test_unset_values_take_the_controller_defaults(self):
        # -1 and None: what Octavia's templater takes from [haproxy_amphora].
        tcp = by_id(self.spec['listeners'], 'tcp')
        ha = base.CONF.haproxy_amphora
        self.assertEqual(tcp['connection_limit'], ha.default_connection_limit)
        self.assertEqual(tcp['timeout_client_data'], ha.timeout_client_data)
        self.assertEqual(tcp['timeout_tcp_inspect'], ha.timeout_tcp_inspect)
        bare = spec_lib.build_spec(self.lb)
        self.assertNotIn('connection_limit',
                         by_id(bare['listeners'], 'tcp'))

    def test_l7_policies_in_octavia_order_without_pending_deletes(self):
        policies = self.http['l7policies']
        self.assertEqual([p['name'] for p in policies],
                         ['to-api', 'moved', 'prefix', 'deny', 'off'])
        self.assertEqual([p['position'] for p in policies], [1, 2, 3, 4, 5])
        to_api, moved, prefix, deny, off = policies
        self.assertEqual(to_api['redirect_pool_id'], models.uid('api'))
        self.assertNotIn('redirect_http_code', to_api)
        self.assertEqual(len(to_api['rules']), 2,
                         'the PENDING_DELETE rule is left out')
        self.assertNotIn('key', to_api['rules'][0], 'PATH takes no key')
        self.assertEqual(moved['redirect_url'],
                         'https://www.example.org/moved')
        self.assertEqual(moved['redirect_http_code'], 302)
        self.assertEqual(prefix['redirect_prefix'],
                         'https://static.example.org')
        self.assertEqual(prefix['rules'][0]['key'], 'User-Agent')
        self.assertEqual(deny['rules'][0], {
            'id': models.uid('deny-rule0'), 'type': 'COOKIE',
            'compare_type': 'EQUAL_TO', 'key': 'session',
            'value': 'evil value', 'invert': True, 'admin_state_up': True})
        self.assertFalse(off['admin_state_up'])
        self.assertFalse(off['rules'][0]['admin_state_up'])

    def test_pools_are_the_ones_listeners_refer_to(self):
        self.assertEqual([p['name'] for p in self.spec['pools']],
                         ['web', 'api', 'tcp-pool', 'pt-pool'])


class TlsLoadBalancer(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.spec = build(models.tls_lb(), certificates=TLS_FILES)
        cls.https = by_id(cls.spec['listeners'], 'https')
        cls.pool = by_id(cls.spec['pools'], 'reencrypt')

    def test_listener_certificates_by_file_name(self):
        files = TLS_FILES.listeners[models.uid('https')]
        https = self.https
        self.assertEqual(https['default_tls_container_ref'], files.default)
        self.assertEqual(https['sni_container_refs'], files.sni)
        self.assertEqual(https['client_ca_tls_container_ref'],
                         files.client_ca)
        self.assertEqual(https['client_crl_container_ref'],
                         files.client_crl)
        self.assertEqual(https['client_authentication'], 'MANDATORY')

    def test_listener_tls_settings(self):
        api = base.CONF.api_settings
        https = self.https
        self.assertEqual(https['tls_ciphers'], api.default_listener_ciphers)
        self.assertEqual(https['tls_versions'],
                         list(api.default_listener_tls_versions))
        self.assertEqual(https['alpn_protocols'],
                         list(api.default_listener_alpn_protocols))
        self.assertEqual((https['hsts_max_age'],
                          https['hsts_include_subdomains'],
                          https['hsts_preload']), (31536000, True, False))
        self.assertEqual(sorted(https['insert_headers']), [
            'X-Forwarded-Proto', 'X-SSL-Client-DN', 'X-SSL-Client-Verify'])

    def test_pool_tls(self):
        files = TLS_FILES.pools[models.uid('reencrypt')]
        self.assertTrue(self.pool['tls_enabled'])
        self.assertEqual((self.pool['tls_container_ref'],
                          self.pool['ca_tls_container_ref'],
                          self.pool['crl_container_ref']),
                         (files.client_cert, files.ca, files.crl))
        self.assertEqual(self.pool['tls_ciphers'],
                         base.CONF.api_settings.default_pool_ciphers)

    def test_ssl_rules(self):
        rules = self.https['l7policies'][0]['rules']
        self.assertEqual([(r['type'], r.get('key')) for r in rules],
                         [('SSL_CONN_HAS_CERT', None), ('SSL_DN_FIELD', 'CN'),
                          ('SSL_VERIFY_RESULT', None)])

    def test_prometheus_listener(self):
        metrics = by_id(self.spec['listeners'], 'metrics')
        self.assertEqual(metrics['protocol'], 'PROMETHEUS')
        self.assertNotIn('default_pool_id', metrics)

    def test_a_missing_certificate_file_is_an_error(self):
        with self.assertRaisesRegex(spec_lib.SpecBuildError,
                                    'default TLS container'):
            build(models.tls_lb())

    def test_plain_pools_carry_no_tls_fields(self):
        # Octavia's API stores default ciphers on every pool; only a TLS
        # pool may carry them in a spec.
        lb = models.http_lb()
        web = lb.pools[0]
        for key, value in models.tls_settings('pool').items():
            setattr(web, key, value)
        pool = by_id(build(lb)['pools'], 'web')
        for field in ('tls_enabled', 'tls_ciphers', 'tls_versions',
                      'alpn_protocols'):
            self.assertNotIn(field, pool)

    def test_a_cipher_list_octavia_would_not_take_falls_back(self):
        lb = models.tls_lb()
        lb.listeners[0].tls_ciphers = 'ECDHE-RSA-AES128-GCM-SHA256 #bad'
        spec = build(lb, certificates=TLS_FILES)
        self.assertEqual(by_id(spec['listeners'], 'https')['tls_ciphers'],
                         base.CONF.api_settings.default_listener_ciphers)

    def test_only_the_ciphers_the_allowed_versions_use(self):
        # Octavia 19's templater splits TLS 1.3 ciphersuites from the rest
        # and drops the part no allowed version uses; none left: no cipher
        # option (OpenSSL's defaults), which the agent renders for a spec
        # without tls_ciphers.
        lb = models.tls_lb()
        li = lb.listeners[0]

        def ciphers(names, versions):
            li.tls_ciphers, li.tls_versions = names, versions
            https = by_id(build(lb, certificates=TLS_FILES)['listeners'],
                          'https')
            return https.get('tls_ciphers')

        both = 'TLS_AES_128_GCM_SHA256:ECDHE-RSA-AES128-GCM-SHA256'
        self.assertEqual(ciphers(both, ['TLSv1.3']), 'TLS_AES_128_GCM_SHA256')
        self.assertEqual(ciphers(both, ['TLSv1.2']),
                         'ECDHE-RSA-AES128-GCM-SHA256')
        self.assertEqual(ciphers(both, ['TLSv1.2', 'TLSv1.3']), both)
        self.assertIsNone(ciphers('ECDHE-RSA-AES128-GCM-SHA256', ['TLSv1.3']))
        self.assertIsNone(ciphers(':', ['TLSv1.2']))


class LvsActiveStandby(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.lb = models.lvs_lb()
        cls.spec = build(cls.lb)

    def test_peers_are_the_allocated_amphorae(self):
        self.assertEqual(self.spec['topology'], 'ACTIVE_STANDBY')
        self.assertEqual(self.spec['amphorae'], [
            {'id': a.id, 'vrrp_ip': a.vrrp_ip} for a in self.lb.amphorae])
        self.lb.amphorae[1].status = constants.PENDING_DELETE
        try:
            spec = build(self.lb)
        finally:
            self.lb.amphorae[1].status = constants.AMPHORA_ALLOCATED
        self.assertEqual([a['id'] for a in spec['amphorae']],
                         [self.lb.amphorae[0].id])

    def test_a_new_amphora_stands_in_when_none_is_allocated(self):
        lb = models.lvs_lb()
        for amp in lb.amphorae:
            amp.status = constants.AMPHORA_BOOTING
        host = lb.amphorae[0]
        spec = build(lb, host_amphora=host)
        self.assertEqual(spec['amphorae'],
                         [{'id': host.id, 'vrrp_ip': host.vrrp_ip}])

    def test_additional_vips(self):
        self.assertEqual(self.spec['additional_vips'], [
            {'ip_address': '2001:db8::100',
             'subnet_id': models.uid('v6-subnet')}])

    def test_udp_listener(self):
        dns = by_id(self.spec['listeners'], 'dns')
        for field in ('connection_limit', 'timeout_client_data',
                      'timeout_tcp_inspect'):
            self.assertNotIn(field, dns, 'LVS: no controller default')
        pool = by_id(self.spec['pools'], 'dns-pool')
        self.assertEqual(pool['session_persistence'], {
            'type': 'SOURCE_IP', 'persistence_timeout': 360,
            'persistence_granularity': '255.255.255.0'})
        self.assertEqual(pool['healthmonitor']['type'], 'UDP-CONNECT')
        self.assertEqual(by_id(self.spec['listeners'], 'sig')[
            'connection_limit'], 5000)


class PendingDeletes(unittest.TestCase):

    def test_a_pool_being_deleted_is_a_disabled_pool_without_members(self):
        spec = build(models.deleting_pools_lb())
        self.assertEqual(spec['pools'], [
            {'id': models.uid('going'), 'protocol': 'HTTP',
             'lb_algorithm': 'ROUND_ROBIN', 'admin_state_up': False,
             'members': []},
            {'id': models.uid('also-going'), 'protocol': 'HTTP',
             'lb_algorithm': 'ROUND_ROBIN', 'admin_state_up': False,
             'members': []}])
        li = spec['listeners'][0]
        self.assertEqual(li['default_pool_id'], models.uid('going'))
        self.assertEqual(li['l7policies'][0]['redirect_pool_id'],
                         models.uid('also-going'))

    def test_a_monitor_being_deleted_is_left_out(self):
        lb = models.http_lb()
        lb.pools[0].health_monitor.provisioning_status = (
            constants.PENDING_DELETE)
        self.assertNotIn('healthmonitor', by_id(build(lb)['pools'], 'web'))


class TextThatIsNeverRendered(unittest.TestCase):

    def test_names_and_a_project_id_the_schema_refuses_are_left_out(self):
        lb = models.ipv6_lb()
        lb.name = 'say "hello"'
        lb.project_id = 'not a project id'
        lb.listeners[0].name = 'back\\slash'
        spec = build(lb)
        self.assertEqual(base.spec_problems(spec), [])
        self.assertNotIn('name', spec)
        self.assertNotIn('project_id', spec)
        self.assertNotIn('name', spec['listeners'][0])
        self.assertFalse(spec['admin_state_up'])

    def test_no_vip_is_an_error(self):
        lb = models.ipv6_lb()
        lb.vip = None
        with self.assertRaises(spec_lib.SpecBuildError):
            build(lb)


if __name__ == '__main__':
    unittest.main()
