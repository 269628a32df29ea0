"""An Octavia amphora driver that sends specs to agents that take them.

AmphoraSpecDriver is Octavia's REST driver (HaproxyAmphoraLoadBalancerDriver,
`amphora_haproxy_rest_driver`) with one difference: for an amphora whose
agent offers API 2.0, the load balancer's listeners, pools, members, health
monitors and L7 policies reach it as one spec, `PUT /2.0/loadbalancers/{id}`,
instead of a haproxy.cfg rendered here and uploaded through API 1.0 with a
reload. The agent renders the spec itself and applies member-only changes
through haproxy's runtime API, without a reload.

Which amphora speaks what is asked once per amphora (GET /2.0/openapi.json)
and kept for the life of the process. An amphora without API 2.0 (Octavia's
own agent, an image from before it) gets exactly Octavia's driver: every
method falls through to it. Plugging, VRRP, the agent's configuration and
certificate, failover, start and reload stay on API 1.0 for every amphora;
so do the certificate files a spec names, which are uploaded through API
1.0's certificate endpoint as Octavia uploads them.

The worker's tasks (Octavia 16 to 19, controller/worker/v2) reach the data
path through three methods: update_amphora_listeners (AmpListenersUpdate,
AmphoraIndexListenerUpdate), update (ListenersUpdate: every listener, pool,
member, batch member, health monitor and L7 flow; Octavia's update() calls
update_amphora_listeners for each amphora) and delete (ListenerDelete). Those
two are overridden here; update() is inherited.
"""

import hashlib
import os

from octavia.amphorae.drivers.haproxy import rest_api_driver
from octavia.common import constants as consts
from octavia.common.config import cfg
from octavia.common.tls_utils import cert_parser
from octavia.db import api as db_api
from octavia.db import repositories as repo
from oslo_log import log as logging

from amphora_spec_driver import client
from amphora_spec_driver import spec as spec_lib

LOG = logging.getLogger(__name__)
CONF = cfg.CONF


class AmphoraSpecDriver(rest_api_driver.HaproxyAmphoraLoadBalancerDriver):

    # Shared by the driver objects of the process (client.SharedCache).
    api_2_0 = client.SharedCache(4096)  # amphora id -> bool
    etags = client.SharedCache(16384)  # (amphora id, lb id) -> ETag

    def __init__(self):
        super().__init__()
        self.spec_client = client.AmphoraAPIClient2_0()

    # -- which API -----------------------------------------------------------

    def offers_spec_api(self, amphora, timeout_dict=None):
        """Whether `amphora`'s agent takes specs; asked once per amphora."""
        known = self.api_2_0.get(amphora.id)
        if known is None:
            known = self.spec_client.offers_spec_api(amphora, timeout_dict)
            self.api_2_0.set(amphora.id, known)
            LOG.info('Amphora %s: the agent %s', amphora.id,
                     'offers API 2.0: load balancer specs go through it'
                     if known else 'has no API 2.0: API 1.0 as Octavia')
        return known

    # -- the data path -------------------------------------------------------

    def update_amphora_listeners(self, loadbalancer, amphora,
                                 timeout_dict=None):
        timeout_dict = timeout_dict or None  # tasks may pass ()
        if (not loadbalancer.listeners or amphora is None or
                amphora.status == consts.DELETED or
                not self.offers_spec_api(amphora, timeout_dict)):
            return super().update_amphora_listeners(
                loadbalancer, amphora, timeout_dict)
        self._send_spec(loadbalancer, amphora, timeout_dict)
        return None

    def delete(self, listener):
        # Octavia's delete(), amphora by amphora, so that an amphora with
        # API 2.0 and one without (a rolling upgrade of an ACTIVE_STANDBY
        # pair) each get theirs.
        loadbalancer = listener.load_balancer
        for amp in loadbalancer.amphorae:
            if amp.status == consts.DELETED:
                continue
            if self.offers_spec_api(amp):
                self._delete_listener_by_spec(amp, listener)
            elif listener.protocol in consts.LVS_PROTOCOLS:
                self._populate_amphora_api_version(amp)
                self.clients[amp.api_version].delete_listener(
                    amp, listener.id)
            else:
                self._combined_config_delete(amp, listener)

    # -- specs ---------------------------------------------------------------

    def _send_spec(self, loadbalancer, amphora, timeout_dict=None):
        """Upload the certificates the spec names, then PUT the spec (or
        DELETE the load balancer when no listener is left to describe).
        Returns the CertificateFiles the spec names."""
        files, listeners = self._upload_certificates(
            loadbalancer, amphora, loadbalancer.listeners, timeout_dict)
        if not listeners:
            # As Octavia's driver: no listener could be rendered.
            self._delete_by_spec(amphora, loadbalancer.id, timeout_dict)
            return files
        spec = spec_lib.build_spec(
            loadbalancer, listeners=listeners, certificates=files,
            defaults=self.controller_defaults(), host_amphora=amphora)
        self._put_spec(amphora, loadbalancer.id, spec, timeout_dict)
        return files

    @staticmethod
    def controller_defaults():
        return spec_lib.ControllerDefaults.from_conf(CONF)

    def _put_spec(self, amphora, lb_id, spec, timeout_dict=None):
        key = (amphora.id, lb_id)
        request = f'PUT /2.0/loadbalancers/{lb_id} on amphora {amphora.id}'
        etag = self.etags.get(key)
        if etag is None:
            etag = self.spec_client.get_etag(amphora, lb_id, timeout_dict)
        r = self.spec_client.put_spec(amphora, lb_id, spec, etag,
                                      timeout_dict)
        if r.status_code == 412:
            # Someone else wrote since our last ETag: the database is the
            # truth either way, so take the current ETag and write once more.
            LOG.info('%s: ETag %s is not current; fetching it again',
                     request, etag)
            etag = self.spec_client.get_etag(amphora, lb_id, timeout_dict)
            r = self.spec_client.put_spec(amphora, lb_id, spec, etag,
                                          timeout_dict)
        if r.status_code not in (200, 201):
            self.etags.discard(key)
            raise client.AgentRequestFailed(request, r)
        try:
            body = r.json()
        except ValueError:
            body = {}
        etag = r.headers.get('ETag') or body.get('etag')
        if etag:
            self.etags.set(key, etag)
        else:
            self.etags.discard(key)
        changes = body.get('changes') or []
        LOG.info('%s: %s, %d change(s)', request,
                 body.get('result', r.status_code), len(changes))
        LOG.debug('%s: %s', request, '; '.join(changes))
        return body

    def _delete_by_spec(self, amphora, lb_id, timeout_dict=None):
        self.etags.discard((amphora.id, lb_id))
        self.spec_client.delete_loadbalancer(amphora, lb_id, timeout_dict)

    def _delete_listener_by_spec(self, amphora, listener):
        loadbalancer = listener.load_balancer
        # An ACTIVE_STANDBY pair's second amphora finds it removed already.
        if listener in loadbalancer.listeners:
            loadbalancer.listeners.remove(listener)
        if loadbalancer.listeners:
            files = self._send_spec(loadbalancer, amphora)
        else:
            # The last listener: the agent removes the load balancer's
            # haproxy, keepalived and certificate files.
            self._delete_by_spec(amphora, loadbalancer.id)
            return
        self._remove_listener_files(amphora, listener, files)

    def _remove_listener_files(self, amphora, listener, files):
        """The deleted listener's TLS containers and crt-list, unless the
        spec just sent names them; after the PUT, so haproxy never runs a
        config without its files. Best effort, as Octavia's cleanup."""
        if listener.protocol not in spec_lib.TLS_LISTENERS:
            return
        lb_id = listener.load_balancer.id
        kept = {name for f in files.listeners.values()
                for name in [f.default, *f.sni]}
        try:
            data = self._process_tls_certificates(listener)
            names = {f'{c.id}.pem' for c in
                     [data['tls_cert'], *data['sni_certs']] if c}
            names.add(f'{listener.id}.pem')
            self._populate_amphora_api_version(amphora)
            for name in sorted(names - kept):
                self.clients[amphora.api_version].delete_cert_pem(
                    amphora, lb_id, name)
        except Exception as e:
            LOG.warning('Amphora %s: the certificate files of deleted '
                        'listener %s were not removed: %s',
                        amphora.id, listener.id, e)

    # -- certificates (API 1.0's upload, as Octavia's driver) ----------------

    def _upload_certificates(self, loadbalancer, amphora, listeners,
                             timeout_dict=None):
        """Upload each listener's and pool's certificate files; returns
        their names and the listeners that can be described. A listener
        whose certificates fail is left out and marked ERROR, as Octavia's
        driver does."""
        files = spec_lib.CertificateFiles()
        usable = []
        for listener in listeners:
            if listener.protocol in consts.LVS_PROTOCOLS:
                usable.append(listener)
                continue
            try:
                listener_files = self._listener_files(
                    loadbalancer, amphora, listener, timeout_dict)
                pool_files = {
                    pool.id: self._pool_files(loadbalancer, amphora, pool,
                                              timeout_dict)
                    for pool in spec_lib.referenced_pools(loadbalancer,
                                                          listener)
                    if pool.id not in files.pools}
            except Exception as e:
                LOG.exception('Unable to update listener %s due to "%s". '
                              'Skipping this listener.', listener.id, str(e))
                self._mark_listener_error(listener.id)
                continue
            files.listeners[listener.id] = listener_files
            files.pools.update(pool_files)
            usable.append(listener)
        return files, usable

    def _listener_files(self, loadbalancer, amphora, listener,
                        timeout_dict=None):
        out = spec_lib.ListenerFiles()
        if listener.protocol not in spec_lib.TLS_LISTENERS:
            return out
        if listener.tls_certificate_id or listener.sni_containers:
            # Octavia's loader, without its upload: the agent writes its
            # own crt-list for a spec, so Octavia's is not sent.
            data = self._process_tls_certificates(listener)
            if data['tls_cert'] is not None:
                out.default = self._upload_container(
                    amphora, loadbalancer.id, data['tls_cert'],
                    timeout_dict)
            out.sni = [self._upload_container(amphora, loadbalancer.id, c,
                                              timeout_dict)
                       for c in data['sni_certs']]
        for attr, ref in (('client_ca', listener.client_ca_tls_certificate_id),
                          ('client_crl', listener.client_crl_container_id)):
            if ref:
                self._need_api_1_0(amphora, timeout_dict)
                setattr(out, attr, self._process_secret(
                    listener, ref, amphora, loadbalancer.id))
        return out

    def _pool_files(self, loadbalancer, amphora, pool, timeout_dict=None):
        if (pool.provisioning_status == consts.PENDING_DELETE or
                not pool.tls_enabled or
                not (pool.tls_certificate_id or pool.ca_tls_certificate_id or
                     pool.crl_container_id)):
            return spec_lib.PoolFiles()
        self._need_api_1_0(amphora, timeout_dict)
        # Octavia's pool certificate upload; it reads only project_id from
        # its listener argument, which the load balancer has too.
        paths = self._process_pool_certs(loadbalancer, pool, amphora,
                                         loadbalancer.id)

        def name(key):
            return os.path.basename(paths[key]) if paths.get(key) else None
        return spec_lib.PoolFiles(client_cert=name('client_cert'),
                                  ca=name('ca_cert'), crl=name('crl'))

    def _upload_container(self, amphora, lb_id, container, timeout_dict):
        self._need_api_1_0(amphora, timeout_dict)
        pem = cert_parser.build_pem(container)
        name = f'{container.id}.pem'
        md5sum = hashlib.md5(pem, usedforsecurity=False).hexdigest()  # nosec
        self._upload_cert(amphora, lb_id, pem, md5sum, name)
        return name

    def _need_api_1_0(self, amphora, timeout_dict=None):
        """Octavia's version discovery, for its certificate calls: only
        when a certificate goes up, so a plain update costs one request."""
        self._populate_amphora_api_version(amphora, timeout_dict)

    @staticmethod
    def _mark_listener_error(listener_id):
        listener_repo = repo.ListenerRepository()
        with db_api.session().begin() as session:
            listener_repo.update(session, listener_id,
                                 provisioning_status=consts.ERROR,
                                 operating_status=consts.ERROR)
