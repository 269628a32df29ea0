"""The agent's load-balancer spec (API 2.0) built from Octavia's data models.

build_spec() turns the object graph Octavia's worker loads from its database
(octavia.common.data_models: a LoadBalancer with its VIPs, amphorae,
listeners, pools, members, health monitors, L7 policies and rules) into the
JSON document the agent's `PUT /2.0/loadbalancers/{id}` takes, in the
spec's field names (Octavia's API names: docs/specs.md, the schema in
agent/model/spec/schema.ts). It is a pure function: no database, no
certificate manager, no network. What it cannot know from the models comes
in as arguments:

* CertificateFiles: the names of the certificate files the agent holds for
  this load balancer, as the driver uploaded them through API 1.0 (a TLS
  container is `<sha1 of its certificate>.pem`, a CA or CRL secret
  `<sha1 of its content>.pem`, as Octavia's own driver names them).
* ControllerDefaults: the controller's `[haproxy_amphora]` and
  `[api_settings]` values Octavia's templater falls back on when an object
  leaves a field unset (a listener's -1 connection limit, a timeout of
  None), so the agent renders what this controller would have rendered.

What Octavia's JinjaTemplater leaves out, the spec leaves out too: objects
in PENDING_DELETE (members, health monitors, L7 policies and rules) are not
in the spec, and a pool in PENDING_DELETE is kept only as a disabled pool
without members, which renders as Octavia renders a pool being deleted: no
backend, no default_backend and no use_backend, the policies' ACLs stay.
Fields a protocol does not use (TLS settings of a plain listener or pool,
the HTTP fields of a TCP monitor, the key of a PATH rule) are not sent:
Octavia's API stores defaults for some of them, its templater ignores them,
and the agent's validation refuses them where they mean nothing.
"""

import dataclasses
import re

LVS_PROTOCOLS = ('UDP', 'SCTP')
TLS_LISTENERS = ('TERMINATED_HTTPS', 'PROMETHEUS')
HTTP_MONITORS = ('HTTP', 'HTTPS')
KEYED_RULES = ('HEADER', 'COOKIE', 'SSL_DN_FIELD')
REDIRECT_CODE_ACTIONS = ('REDIRECT_TO_URL', 'REDIRECT_PREFIX')
PENDING_DELETE = 'PENDING_DELETE'
# Octavia's TLS_1_3_AND_NEWER_VERSIONS; every other version is older.
TLS_1_3_AND_NEWER = ('TLSv1.3',)
AMPHORA_ALLOCATED = 'ALLOCATED'
ACTIVE_STANDBY = 'ACTIVE_STANDBY'

# The schema's patterns for text that is never rendered: a name or a
# project id that does not fit is left out rather than refused.
_NAME = re.compile(r'^[^\x00-\x1f\x7f"\'\\]{0,255}$')
_PROJECT_ID = re.compile(r'^[A-Za-z0-9_-]{1,64}$')
# An id that is only carried along (a subnet): left out when it does not fit.
_ID = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$')
# Octavia's VALID_CIPHER_RE, as the schema has it.
_CIPHERS = re.compile(r'^[A-Za-z0-9+!:@=_.-]{1,2048}$')


class SpecBuildError(Exception):
    """The models cannot be described as a spec (a certificate file is
    missing from CertificateFiles, a load balancer without a VIP)."""


@dataclasses.dataclass
class ListenerFiles:
    """The certificate files of one listener, by the names the agent holds."""

    default: str | None = None
    sni: list[str] = dataclasses.field(default_factory=list)
    client_ca: str | None = None
    client_crl: str | None = None


@dataclasses.dataclass
class PoolFiles:
    """The certificate files of one pool (re-encryption to its members)."""

    client_cert: str | None = None
    ca: str | None = None
    crl: str | None = None


@dataclasses.dataclass
class CertificateFiles:
    """Listener and pool certificate files, by listener and pool id."""

    listeners: dict[str, ListenerFiles] = dataclasses.field(
        default_factory=dict)
    pools: dict[str, PoolFiles] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class ControllerDefaults:
    """The controller's fallbacks for fields an object leaves unset.

    None leaves the choice to the agent's own configuration.
    """

    connection_limit: int | None = None
    timeout_client_data: int | None = None
    timeout_member_connect: int | None = None
    timeout_member_data: int | None = None
    timeout_tcp_inspect: int | None = None
    listener_ciphers: str | None = None
    pool_ciphers: str | None = None

    @classmethod
    def from_conf(cls, conf):
        """The values of Octavia's configuration object (cfg.CONF)."""
        ha = conf.haproxy_amphora
        api = conf.api_settings
        return cls(connection_limit=ha.default_connection_limit,
                   timeout_client_data=ha.timeout_client_data,
                   timeout_member_connect=ha.timeout_member_connect,
                   timeout_member_data=ha.timeout_member_data,
                   timeout_tcp_inspect=ha.timeout_tcp_inspect,
                   listener_ciphers=api.default_listener_ciphers,
                   pool_ciphers=api.default_pool_ciphers)


def build_spec(loadbalancer, listeners=None, certificates=None,
               defaults=None, host_amphora=None):
    """The spec of `loadbalancer`, as a dict ready for json.dumps.

    :param loadbalancer: octavia.common.data_models.LoadBalancer
    :param listeners: the listeners to describe, in order (default: all of
        the load balancer's, as Octavia's driver renders them; the driver
        leaves out a listener whose certificates it could not upload)
    :param certificates: CertificateFiles for the TLS listeners and pools
    :param defaults: ControllerDefaults
    :param host_amphora: the amphora the spec is for; it stands in as the
        only haproxy peer of an ACTIVE_STANDBY load balancer none of whose
        amphorae is ALLOCATED yet
    :raises SpecBuildError:
    """
    return _Builder(loadbalancer, certificates or CertificateFiles(),
                    defaults or ControllerDefaults()).build(
        loadbalancer.listeners if listeners is None else listeners,
        host_amphora)


def referenced_pools(loadbalancer, listener):
    """The pools a listener's spec refers to: its default pool, then the
    redirect pool of each L7 policy that is not being deleted (the same
    objects build_spec() puts in the spec's pools, PENDING_DELETE ones
    included)."""
    pools = []
    for pool in [default_pool(loadbalancer, listener)] + [
            redirect_pool(loadbalancer, p)
            for p in listener.l7policies or []
            if _live(p) and p.action == 'REDIRECT_TO_POOL']:
        if pool is not None and all(p.id != pool.id for p in pools):
            pools.append(pool)
    return pools


def default_pool(loadbalancer, listener):
    if listener.default_pool is not None:
        return listener.default_pool
    return _pool_by_id(loadbalancer, listener.default_pool_id)


def redirect_pool(loadbalancer, policy):
    if policy.redirect_pool is not None:
        return policy.redirect_pool
    return _pool_by_id(loadbalancer, policy.redirect_pool_id)


def _pool_by_id(loadbalancer, pool_id):
    if not pool_id:
        return None
    return next((p for p in loadbalancer.pools or [] if p.id == pool_id),
                None)


def _on(value):
    """Jinja's truth, as Octavia's templates test `enabled`."""
    return bool(value)


def _live(obj):
    return obj is not None and obj.provisioning_status != PENDING_DELETE


def _put_text(out, key, value, pattern=_NAME):
    if isinstance(value, str) and pattern.match(value):
        out[key] = value


def _put(out, key, value):
    if value is not None:
        out[key] = value


class _Builder:
    def __init__(self, loadbalancer, certificates, defaults):
        self.lb = loadbalancer
        self.certs = certificates
        self.defaults = defaults
        self.pools = {}  # id -> spec pool, in the order first referred to

    def build(self, listeners, host_amphora):
        lb = self.lb
        if lb.vip is None or not lb.vip.ip_address:
            raise SpecBuildError(f'load balancer {lb.id} has no VIP address')
        spec = {'id': lb.id}
        _put_text(spec, 'name', lb.name)
        _put_text(spec, 'description', lb.description)
        _put_text(spec, 'project_id', lb.project_id, _PROJECT_ID)
        spec['admin_state_up'] = _on(lb.enabled)
        topology = lb.topology or 'SINGLE'
        spec['topology'] = topology
        spec['vip_address'] = lb.vip.ip_address
        spec['additional_vips'] = [
            _additional_vip(v)
            for v in getattr(lb, 'additional_vips', None) or []]
        if topology == ACTIVE_STANDBY:
            spec['amphorae'] = self.peers(host_amphora)
        spec['listeners'] = [self.listener(li) for li in listeners]
        spec['pools'] = list(self.pools.values())
        return spec

    def peers(self, host_amphora):
        """haproxy peers: the ALLOCATED amphorae with a VRRP address, as
        Octavia's peers macro lists them."""
        peers = [{'id': a.id, 'vrrp_ip': a.vrrp_ip}
                 for a in self.lb.amphorae or []
                 if a.status == AMPHORA_ALLOCATED and a.vrrp_ip]
        if not peers and host_amphora is not None and host_amphora.vrrp_ip:
            peers = [{'id': host_amphora.id,
                      'vrrp_ip': host_amphora.vrrp_ip}]
        return peers

    # -- listeners ----------------------------------------------------------

    def listener(self, li):
        lvs = li.protocol in LVS_PROTOCOLS
        tls = li.protocol in TLS_LISTENERS
        out = {'id': li.id}
        _put_text(out, 'name', li.name)
        _put_text(out, 'description', li.description)
        out['protocol'] = li.protocol
        out['protocol_port'] = li.protocol_port
        out['admin_state_up'] = _on(li.enabled)
        limit = li.connection_limit
        if limit and limit > -1:
            out['connection_limit'] = limit
        elif not lvs:
            # Octavia's templater: the controller's default (LVS: none).
            _put(out, 'connection_limit', self.defaults.connection_limit)
        if not lvs:
            d = self.defaults
            _put(out, 'timeout_client_data',
                 li.timeout_client_data or d.timeout_client_data)
            _put(out, 'timeout_member_connect',
                 li.timeout_member_connect or d.timeout_member_connect)
            _put(out, 'timeout_member_data',
                 li.timeout_member_data or d.timeout_member_data)
            _put(out, 'timeout_tcp_inspect',
                 li.timeout_tcp_inspect or d.timeout_tcp_inspect)
        if li.insert_headers:
            out['insert_headers'] = dict(li.insert_headers)
        cidrs = [getattr(c, 'cidr', c) for c in li.allowed_cidrs or []]
        if cidrs:
            out['allowed_cidrs'] = list(dict.fromkeys(cidrs))
        if tls:
            self.listener_tls(li, out)

        pool = self.default_pool(li)
        if pool is not None:
            out['default_pool_id'] = self.pool(pool)
        out['l7policies'] = [
            self.policy(p, i + 1)
            for i, p in enumerate(p for p in li.l7policies or []
                                  if _live(p))]
        return out

    def default_pool(self, li):
        return default_pool(self.lb, li)

    def listener_tls(self, li, out):
        files = self.certs.listeners.get(li.id, ListenerFiles())
        if li.tls_certificate_id:
            if not files.default:
                raise SpecBuildError(
                    f'listener {li.id}: no certificate file for its '
                    f'default TLS container')
            out['default_tls_container_ref'] = files.default
            out['sni_container_refs'] = list(dict.fromkeys(files.sni))
            if li.client_ca_tls_certificate_id:
                if not files.client_ca:
                    raise SpecBuildError(
                        f'listener {li.id}: no file for its client CA')
                out['client_ca_tls_container_ref'] = files.client_ca
                out['client_authentication'] = (
                    li.client_authentication or 'NONE')
                if li.client_crl_container_id:
                    if not files.client_crl:
                        raise SpecBuildError(
                            f'listener {li.id}: no file for its client CRL')
                    out['client_crl_container_ref'] = files.client_crl
        _put(out, 'tls_ciphers',
             _ciphers(li.tls_ciphers, self.defaults.listener_ciphers,
                      li.tls_versions))
        if li.tls_versions:
            out['tls_versions'] = list(li.tls_versions)
        if li.alpn_protocols:
            out['alpn_protocols'] = list(li.alpn_protocols)
        max_age = getattr(li, 'hsts_max_age', None)
        if max_age is not None:
            out['hsts_max_age'] = max_age
            out['hsts_include_subdomains'] = bool(
                getattr(li, 'hsts_include_subdomains', False))
            out['hsts_preload'] = bool(getattr(li, 'hsts_preload', False))

    # -- L7 ------------------------------------------------------------------

    def policy(self, p, position):
        out = {'id': p.id}
        _put_text(out, 'name', p.name)
        _put_text(out, 'description', p.description)
        out['action'] = p.action
        out['position'] = position
        out['admin_state_up'] = _on(p.enabled)
        if p.action == 'REDIRECT_TO_URL':
            _put(out, 'redirect_url', p.redirect_url)
        elif p.action == 'REDIRECT_PREFIX':
            _put(out, 'redirect_prefix', p.redirect_prefix)
        elif p.action == 'REDIRECT_TO_POOL':
            pool = redirect_pool(self.lb, p)
            if pool is not None:
                out['redirect_pool_id'] = self.pool(pool)
        if p.action in REDIRECT_CODE_ACTIONS:
            _put(out, 'redirect_http_code', p.redirect_http_code)
        out['rules'] = [self.rule(r) for r in p.l7rules or [] if _live(r)]
        return out

    @staticmethod
    def rule(r):
        out = {'id': r.id, 'type': r.type, 'compare_type': r.compare_type}
        if r.type in KEYED_RULES:
            _put(out, 'key', r.key)
        out['value'] = r.value
        out['invert'] = bool(r.invert)
        out['admin_state_up'] = _on(r.enabled)
        return out

    # -- pools ---------------------------------------------------------------

    def pool(self, pool):
        """Adds `pool` to the spec's pools (once) and returns its id."""
        if pool.id in self.pools:
            return pool.id
        out = {'id': pool.id, 'protocol': pool.protocol,
               'lb_algorithm': pool.lb_algorithm}
        self.pools[pool.id] = out
        if not _live(pool):
            # Being deleted: Octavia's templater renders nothing of it.
            out['admin_state_up'] = False
            out['members'] = []
            return pool.id
        lvs = pool.protocol in LVS_PROTOCOLS
        _put_text(out, 'name', pool.name)
        _put_text(out, 'description', pool.description)
        out['admin_state_up'] = _on(pool.enabled)
        sp = _persistence(pool.session_persistence, lvs)
        if sp:
            out['session_persistence'] = sp
        hm = pool.health_monitor
        if _live(hm):
            out['healthmonitor'] = _monitor(hm)
        out['members'] = [_member(m) for m in pool.members or [] if _live(m)]
        if pool.tls_enabled:
            self.pool_tls(pool, out)
        return pool.id

    def pool_tls(self, pool, out):
        out['tls_enabled'] = True
        files = self.certs.pools.get(pool.id, PoolFiles())
        for field, wanted, name in (
                ('tls_container_ref', pool.tls_certificate_id,
                 files.client_cert),
                ('ca_tls_container_ref', pool.ca_tls_certificate_id,
                 files.ca),
                ('crl_container_ref', pool.crl_container_id, files.crl)):
            if wanted:
                if not name:
                    raise SpecBuildError(
                        f'pool {pool.id}: no file for its {field}')
                out[field] = name
        _put(out, 'tls_ciphers',
             _ciphers(pool.tls_ciphers, self.defaults.pool_ciphers,
                      pool.tls_versions))
        if pool.tls_versions:
            out['tls_versions'] = list(pool.tls_versions)
        if pool.alpn_protocols:
            out['alpn_protocols'] = list(pool.alpn_protocols)


def _ciphers(value, fallback, versions):
    """A stored cipher list as Octavia's templater renders it: one its API
    would not take now falls back to the controller's default (19), and
    only the names the allowed versions use are kept (19 splits TLS 1.3
    ciphersuites from the rest and drops the part no allowed version uses;
    16 renders them all, and OpenSSL applies each part only to its
    versions). None when no name is left: haproxy's defaults, as Octavia
    renders no cipher option then; the agent refuses a list that applies
    to no allowed version, since haproxy would fall back silently."""
    if not value:
        return None
    if not _CIPHERS.match(value):
        if not (fallback and _CIPHERS.match(fallback)):
            return None
        value = fallback
    names = [name for name in value.split(':') if name]
    if versions:
        tls13 = any(v in TLS_1_3_AND_NEWER for v in versions)
        older = any(v not in TLS_1_3_AND_NEWER for v in versions)
        names = [name for name in names
                 if (tls13 if name.startswith('TLS_') else older)]
    return ':'.join(names) or None


def _persistence(sp, lvs):
    if sp is None or not sp.type:
        return None
    out = {'type': sp.type}
    if sp.type == 'APP_COOKIE':
        _put(out, 'cookie_name', sp.cookie_name)
    if lvs:
        if sp.persistence_timeout:
            out['persistence_timeout'] = sp.persistence_timeout
        if sp.persistence_granularity:
            out['persistence_granularity'] = sp.persistence_granularity
    return out


def _monitor(hm):
    out = {'id': hm.id}
    _put_text(out, 'name', hm.name)
    out.update(type=hm.type, delay=hm.delay, timeout=hm.timeout,
               max_retries=hm.rise_threshold)
    _put(out, 'max_retries_down', hm.fall_threshold)
    if hm.type in HTTP_MONITORS:
        _put(out, 'http_method', hm.http_method)
        _put(out, 'url_path', hm.url_path)
        _put(out, 'expected_codes', hm.expected_codes)
        version = hm.http_version
        if version is not None:
            out['http_version'] = float(version)
            if hm.domain_name and float(version) == 1.1:
                out['domain_name'] = hm.domain_name
    out['admin_state_up'] = _on(hm.enabled)
    return out


def _member(m):
    out = {'id': m.id}
    _put_text(out, 'name', m.name)
    out['address'] = m.ip_address
    out['protocol_port'] = m.protocol_port
    _put(out, 'weight', m.weight)
    out['admin_state_up'] = _on(m.enabled)
    out['backup'] = bool(m.backup)
    _put(out, 'monitor_address', m.monitor_address)
    _put(out, 'monitor_port', m.monitor_port)
    _put_text(out, 'subnet_id', m.subnet_id, _ID)
    return out


def _additional_vip(v):
    out = {'ip_address': v.ip_address}
    _put_text(out, 'subnet_id', v.subnet_id, _ID)
    return out
