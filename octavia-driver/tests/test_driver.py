"""The driver's choice between API 2.0 and 1.0, its caches, If-Match and
the 412 retry, certificates and listener deletes, against two fake agents
(tests/fake_amphora.py) on 127.0.0.1 and 127.0.0.2, reached through
Octavia's own request code with mutual TLS.

"Exactly Octavia's behaviour" is checked by running Octavia's driver
(HaproxyAmphoraLoadBalancerDriver) against the same fake and comparing
every request and the uploaded haproxy.cfg."""

import shutil
import tempfile
import unittest
from unittest import mock

from tests import base
from tests import fake_amphora
from tests import models

from octavia.amphorae.drivers.haproxy import rest_api_driver
from octavia.common import constants

from amphora_spec_driver import client
from amphora_spec_driver import driver
from amphora_spec_driver import spec as spec_lib

CONF = base.CONF
AMPHORAE = (('amphora-a', '127.0.0.1'), ('amphora-b', '127.0.0.2'))


class FakeCert:
    def __init__(self, cert, key):
        self.cert, self.key = cert, key

    def get_certificate(self):
        return self.cert

    def get_private_key(self):
        return self.key

    def get_private_key_passphrase(self):
        return None

    def get_intermediates(self):
        return None


class FakeCertManager:
    """Barbican's part: the TLS containers and secrets tls_lb() names."""

    def __init__(self, pki):
        self.certs = {ref: pki.issue(f'{ref}.example.org') for ref in (
            'listener-cert-ref', 'sni-a-ref', 'sni-b-ref',
            'pool-client-cert-ref')}
        self.secrets = {ref: pki.ca_pem.decode() + f'# {ref}\n' for ref in (
            'client-ca-ref', 'client-crl-ref', 'pool-ca-ref',
            'pool-crl-ref')}
        self.broken = set()

    def get_cert(self, context, cert_ref, **kwargs):
        if cert_ref in self.broken:
            raise RuntimeError(f'{cert_ref} is gone')
        return FakeCert(*self.certs[cert_ref])

    def get_secret(self, context, secret_ref):
        return self.secrets[secret_ref]


class DriverTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='amphora-spec-driver-')
        cls.pki = fake_amphora.Pki(cls.tmp)
        port = fake_amphora.free_port([a for _i, a in AMPHORAE])
        openapi = base.openapi_document()
        cls.agents = {
            amp_id: fake_amphora.FakeAgent(address, port, cls.pki, amp_id,
                                           openapi, base.spec_problems)
            for amp_id, address in AMPHORAE}
        ha = 'haproxy_amphora'
        for name, value in (('client_cert', cls.pki.client_file()),
                            ('server_ca', cls.pki.ca_file),
                            ('bind_port', port),
                            ('connection_max_retries', 2),
                            ('connection_retry_interval', 0),
                            ('rest_request_conn_timeout', 5),
                            ('rest_request_read_timeout', 10)):
            CONF.set_override(name, value, group=ha)

    @classmethod
    def tearDownClass(cls):
        for agent in cls.agents.values():
            agent.close()
        CONF.clear_override('client_cert', group='haproxy_amphora')
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        driver.AmphoraSpecDriver.api_2_0.clear()
        driver.AmphoraSpecDriver.etags.clear()
        for agent in self.agents.values():
            agent.reset()
        self.a = self.agents['amphora-a']
        self.b = self.agents['amphora-b']

    @staticmethod
    def place(lb):
        """The load balancer's amphorae are the fake agents; the ids and
        addresses Octavia's helpers number are made the same each time."""
        lb.id = 'lb-under-test'
        lb.vip.ip_address = '203.0.113.10'
        for i, (amp, (amp_id, address)) in enumerate(zip(lb.amphorae,
                                                         AMPHORAE)):
            amp.id = amp_id
            amp.lb_network_ip = address
            amp.vrrp_ip = f'198.51.100.{i + 1}'
        return lb.amphorae

    @staticmethod
    def fresh(lb):
        """As the next task loads them from the database: Octavia's driver
        keeps the discovered api_version on the amphora object."""
        for amp in lb.amphorae:
            amp.api_version = None

    def spec_driver(self, certs=None):
        d = driver.AmphoraSpecDriver()
        if certs is not None:
            d.cert_manager = certs
        return d

    def octavia_driver(self, certs=None):
        d = rest_api_driver.HaproxyAmphoraLoadBalancerDriver()
        if certs is not None:
            d.cert_manager = certs
        return d


class Api20(DriverTest):

    def test_a_spec_is_put_and_later_updates_cost_one_request(self):
        lb = models.http_lb()
        amp, = self.place(lb)
        self.spec_driver().update_amphora_listeners(lb, amp, ())
        path = f'/2.0/loadbalancers/{lb.id}'
        self.assertEqual(self.a.calls(), [
            'GET /2.0/openapi.json', f'GET {path}', f'PUT {path}'])
        self.assertIsNone(self.a.header(2, 'If-Match'))
        spec, etag = self.a.specs[lb.id]
        self.assertEqual(spec, spec_lib.build_spec(
            lb, defaults=driver.AmphoraSpecDriver.controller_defaults(),
            host_amphora=amp))

        # A member change, through a new driver object, as the worker's
        # next task makes one: the process's caches answer.
        self.a.clear()
        self.fresh(lb)
        lb.pools[0].members[0].weight = 7
        self.spec_driver().update_amphora_listeners(lb, amp)
        self.assertEqual(self.a.calls(), [f'PUT {path}'])
        self.assertEqual(self.a.header(0, 'If-Match'), etag)
        self.assertEqual(self.a.specs[lb.id][0]['pools'][0]['members'][0][
            'weight'], 7)
        self.assertEqual(self.b.calls(), [])

    def test_update_sends_the_spec_to_every_amphora(self):
        lb = models.lvs_lb()
        self.place(lb)
        self.spec_driver().update(lb)
        for agent in (self.a, self.b):
            self.assertEqual([c.split()[1] for c in agent.calls()], [
                '/2.0/openapi.json', f'/2.0/loadbalancers/{lb.id}',
                f'/2.0/loadbalancers/{lb.id}'])
            self.assertEqual([p['id'] for p in agent.specs[lb.id][0][
                'amphorae']], ['amphora-a', 'amphora-b'])

    def test_a_moved_etag_is_fetched_again_once(self):
        lb = models.http_lb()
        amp, = self.place(lb)
        self.spec_driver().update_amphora_listeners(lb, amp)
        ours = self.a.specs[lb.id][1]
        self.a.bump(lb.id)  # another controller wrote meanwhile
        theirs = self.a.specs[lb.id][1]
        self.a.clear()
        self.spec_driver().update_amphora_listeners(lb, amp)
        path = f'/2.0/loadbalancers/{lb.id}'
        self.assertEqual(self.a.calls(),
                         [f'PUT {path}', f'GET {path}', f'PUT {path}'])
        self.assertEqual(self.a.header(0, 'If-Match'), ours)
        self.assertEqual(self.a.header(2, 'If-Match'), theirs)
        self.assertEqual(driver.AmphoraSpecDriver.etags.get(
            (amp.id, lb.id)), self.a.specs[lb.id][1])

    def test_a_second_412_is_an_error(self):
        lb = models.http_lb()
        amp, = self.place(lb)
        self.spec_driver().update_amphora_listeners(lb, amp)
        refusal = (412, {'Content-Type': 'application/json',
                         'ETag': '"elsewhere"'},
                   b'{"error": "precondition_failed", "message": "moved"}')
        self.a.put_answers = [refusal, refusal]
        self.a.clear()
        with self.assertRaises(client.AgentRequestFailed) as caught:
            self.spec_driver().update_amphora_listeners(lb, amp)
        self.assertEqual(caught.exception.http_status, 412)
        path = f'/2.0/loadbalancers/{lb.id}'
        self.assertEqual(self.a.calls(),
                         [f'PUT {path}', f'GET {path}', f'PUT {path}'])
        # Nothing is assumed about the agent's spec after a failure.
        self.assertIsNone(driver.AmphoraSpecDriver.etags.get(
            (amp.id, lb.id)))
        self.a.clear()
        self.spec_driver().update_amphora_listeners(lb, amp)
        self.assertEqual(self.a.calls(), [f'GET {path}', f'PUT {path}'])

    def test_a_refused_spec_is_an_error_naming_the_problems(self):
        lb = models.http_lb()
        amp, = self.place(lb)
        self.a.put_answers = [(400, {'Content-Type': 'application/json'},
                               b'{"error": "invalid_spec", "message": "the '
                               b'spec is invalid", "problems": ["pools[0].'
                               b'healthmonitor.type: PING cannot monitor a '
                               b'UDP pool"]}')]
        with self.assertRaises(client.AgentRequestFailed) as caught:
            self.spec_driver().update_amphora_listeners(lb, amp)
        self.assertEqual(caught.exception.error, 'invalid_spec')
        self.assertIn('pools[0].healthmonitor.type: PING cannot monitor',
                      str(caught.exception))

    def test_nothing_for_a_deleted_amphora_or_no_listeners(self):
        lb = models.http_lb()
        amp, = self.place(lb)
        amp.status = constants.DELETED
        self.spec_driver().update_amphora_listeners(lb, amp)
        amp.status = constants.AMPHORA_ALLOCATED
        lb.listeners = []
        self.spec_driver().update_amphora_listeners(lb, amp)
        self.assertEqual(self.a.calls(), [])


class Api10(DriverTest):
    """Amphorae without API 2.0 get Octavia's driver, request by request."""

    def octavia_then_ours(self, make, act):
        """`act(driver, lb)` with Octavia's driver, then ours, each on a
        fresh graph from `make`; the calls of each and the fakes' files."""
        out = []
        for new_driver in (self.octavia_driver, self.spec_driver):
            lb = make()
            self.place(lb)
            for agent in self.agents.values():
                agent.reset()
                agent.api_2_0 = False
            act(new_driver(), lb)
            out.append((
                {a: agent.calls() for a, agent in self.agents.items()},
                {a: (agent.configs.get(lb.id), dict(agent.lvs))
                 for a, agent in self.agents.items()}))
        return out

    def test_update_is_octavias(self):
        (octavia, octavia_files), (ours, our_files) = self.octavia_then_ours(
            models.lvs_lb, lambda d, lb: d.update(lb))
        for amp_id in ('amphora-a', 'amphora-b'):
            self.assertEqual(ours[amp_id],
                             ['GET /2.0/openapi.json'] + octavia[amp_id])
            self.assertIn('PUT /1.0/loadbalancer/lb-under-test/reload',
                          ours[amp_id])
        self.assertEqual(our_files, octavia_files)

    def test_the_answer_is_kept_per_amphora(self):
        lb = models.http_lb()
        amp, = self.place(lb)
        self.a.api_2_0 = False
        for _ in range(3):
            self.fresh(lb)
            self.spec_driver().update_amphora_listeners(lb, amp)
        self.assertEqual(self.a.calls().count('GET /2.0/openapi.json'), 1)
        self.assertEqual(self.a.calls().count(
            f'PUT /1.0/loadbalancer/amphora-a/{lb.id}/haproxy'), 3)

    def test_listener_delete_is_octavias(self):
        def delete_two(d, lb):
            d.delete(lb.listeners[1])  # the TCP one: an update follows
            for li in list(lb.listeners):
                d.delete(li)  # the last one deletes the load balancer
        (octavia, _f1), (ours, _f2) = self.octavia_then_ours(
            models.http_lb, delete_two)
        self.assertEqual(ours['amphora-a'],
                         ['GET /2.0/openapi.json'] + octavia['amphora-a'])
        self.assertEqual(ours['amphora-a'][-1],
                         'DELETE /1.0/listeners/lb-under-test')


class RollingUpgrade(DriverTest):

    def test_an_active_standby_pair_with_one_new_image(self):
        lb = models.lvs_lb()
        amp_a, amp_b = self.place(lb)
        self.b.api_2_0 = False  # Octavia's agent, or an older image
        self.spec_driver().update(lb)
        self.assertEqual([c for c in self.a.calls() if '/1.0/' in c], [])
        self.assertIn(lb.id, self.a.specs)
        b_calls = self.b.calls()
        self.b.reset()
        self.b.api_2_0 = False
        self.fresh(lb)
        self.octavia_driver().update_amphora_listeners(lb, amp_b)
        self.assertEqual(b_calls, ['GET /2.0/openapi.json'] + self.b.calls())


class Certificates(DriverTest):

    def test_files_go_up_through_api_1_0_and_the_spec_names_them(self):
        lb = models.tls_lb()
        amp, = self.place(lb)
        certs = FakeCertManager(self.pki)
        self.spec_driver(certs).update_amphora_listeners(lb, amp)
        spec = self.a.specs[lb.id][0]
        https = spec['listeners'][0]
        pool = spec['pools'][0]
        named = {https['default_tls_container_ref'],
                 *https['sni_container_refs'],
                 https['client_ca_tls_container_ref'],
                 https['client_crl_container_ref'],
                 pool['tls_container_ref'], pool['ca_tls_container_ref'],
                 pool['crl_container_ref']}
        self.assertEqual(len(named), 8)
        self.assertEqual({n for (_lb, n) in self.a.files}, named)
        # Octavia's crt-list is not uploaded: the agent writes its own.
        self.assertNotIn((lb.id, f'{https["id"]}.pem'), self.a.files)
        self.assertEqual(self.a.calls().count('GET /'), 1)

        # Unchanged files are not uploaded again.
        self.a.clear()
        self.fresh(lb)
        self.spec_driver(certs).update_amphora_listeners(lb, amp)
        self.assertEqual([c for c in self.a.calls()
                          if c.startswith('PUT')],
                         [f'PUT /2.0/loadbalancers/{lb.id}'])

    def test_a_listener_whose_certificate_fails_is_left_out(self):
        lb = models.tls_lb()
        amp, = self.place(lb)
        certs = FakeCertManager(self.pki)
        certs.broken.add('listener-cert-ref')
        with mock.patch.object(driver.AmphoraSpecDriver,
                               '_mark_listener_error') as mark, \
                self.assertLogs(level='WARNING') as logs:
            self.spec_driver(certs).update_amphora_listeners(lb, amp)
        mark.assert_called_once_with(models.uid('https'))
        self.assertIn(f'Unable to update listener {models.uid("https")}',
                      '\n'.join(logs.output))
        self.assertEqual([li['id'] for li in self.a.specs[lb.id][0][
            'listeners']], [models.uid('metrics')])

    def test_a_deleted_listener_takes_its_files_after_the_put(self):
        lb = models.tls_lb()
        amp, = self.place(lb)
        certs = FakeCertManager(self.pki)
        d = self.spec_driver(certs)
        d.update_amphora_listeners(lb, amp)
        https = self.a.specs[lb.id][0]['listeners'][0]
        container_files = [https['default_tls_container_ref'],
                           *https['sni_container_refs']]
        self.a.clear()
        d.delete(lb.listeners[0])
        calls = self.a.calls()
        put = calls.index(f'PUT /2.0/loadbalancers/{lb.id}')
        deleted = [c.rsplit('/', 1)[1] for c in calls
                   if c.startswith('DELETE')]
        self.assertEqual(sorted(deleted), sorted(
            container_files + [f'{https["id"]}.pem']))
        self.assertTrue(all(calls.index(f'DELETE /1.0/loadbalancer/{lb.id}'
                                        f'/certificates/{name}') > put
                            for name in container_files))
        self.assertEqual([li['id'] for li in self.a.specs[lb.id][0][
            'listeners']], [models.uid('metrics')])


class ListenerDelete(DriverTest):

    def test_delete_puts_the_rest_and_the_last_deletes_the_lb(self):
        lb = models.http_lb()
        amp, = self.place(lb)
        d = self.spec_driver()
        d.update_amphora_listeners(lb, amp)
        path = f'/2.0/loadbalancers/{lb.id}'
        self.a.clear()
        d.delete(lb.listeners[1])
        self.assertEqual(self.a.calls(), [f'PUT {path}'])
        self.assertEqual([li['id'] for li in self.a.specs[lb.id][0][
            'listeners']], [models.uid('http'), models.uid('passthrough')])
        for li in list(lb.listeners):
            d.delete(li)
        self.assertEqual(self.a.calls()[-1], f'DELETE {path}')
        self.assertNotIn(lb.id, self.a.specs)
        self.assertIsNone(driver.AmphoraSpecDriver.etags.get(
            (amp.id, lb.id)))


if __name__ == '__main__':
    unittest.main()
