"""Octavia's own renderer (python3-octavia 11, 16 or 19) for parity tests of our haproxy/keepalived renderer.

Run with the release's Debian python3 (octaviaPython() in test/helpers/haproxies.ts; a pyenv python cannot
import the Debian octavia package). The script runs unchanged on 11, 16 and 19: where their templaters
differ (see "Releases" below) it asks the installed code what it takes.
Long-running, JSON lines: one request per stdin line, one answer per stdout line, in order.

  {"op": "ping"}
      -> {"ok": true, "result": {"octavia": "11.0.0", "jinja2": "3.1.2"}}
  {"op": "render", "args": {"spec": SPEC, "haproxy_version": "2.6", "settings": SETTINGS,
                            "amp_details": DETAILS | null}}
      -> {"ok": true, "result": {"haproxy": "<haproxy.cfg text>" | null,
                                 "lvs": {"<listener id>": "<keepalived config>", ...},
                                 "warnings": ["<Octavia log warning>", ...]}}
  {"op": "bench", "args": {... as render ..., "iterations": N, "warmup": 0}}
      -> {"ok": true, "result": {"ms": [<ms of each build_config call>], "bytes": <len of the cfg>}}
  {"op": "driver_spec", "args": {... as render ..., "driver_path": "<folder of amphora_spec_driver>"}}
      -> {"ok": true, "result": <the spec octavia-driver builds from the same models (16 and 19)>}
  failures -> {"ok": false, "exception": "<class name>", "message": "...", "trace": "..."}

SPEC is a spec that went through our validateSpec() (agent/model/spec/schema.ts), so defaults are filled in.
SETTINGS are CONF overrides, snake_case as in Octavia: base_path, base_cert_dir, connection_logging
(and, optionally, user_log_format, timeout_client_data, timeout_member_connect, timeout_member_data,
timeout_tcp_inspect, default_connection_limit, haproxy_stick_size [haproxy_amphora];
user_log_facility, administrative_log_facility [amphora_agent]; default_listener_ciphers,
default_listener_tls_versions, default_listener_alpn_protocols, default_pool_ciphers,
default_pool_tls_versions, default_pool_alpn_protocols, tls1_3_supported_ciphers (19) [api_settings]).
A setting left out is reset to Octavia's default for each request, so requests do not leak into each other.
DETAILS is the amphora's /1.0/details document (cpu_count, memory {free, buffers, cached} in kB,
active_tuned_profiles), which the 16/19 driver fetches and hands to build_config; null stands for an
amphora whose details the controller could not read (the templater then leaves the tuning out).

Releases
--------
* 11: build_config(host_amphora, listeners, tls_certs, haproxy_versions); no HSTS fields on Listener.
* 16: build_config(..., haproxy_versions, amp_details) (nbthread/cpu-map, tune.ssl.cachesize);
  Listener has hsts_max_age, hsts_include_subdomains, hsts_preload.
* 19: as 16, and the templater splits tls_ciphers into TLS 1.3 ciphersuites (the names in
  [api_settings] tls1_3_supported_ciphers) and the rest. Its split deletes a key it never set when
  tls_versions is set and tls_ciphers is None (a KeyError); Octavia's API always stores a cipher list for
  TLS objects, so None never reaches it there. A spec without tls_ciphers means "haproxy's defaults", so
  19 gets ':' instead: it passes Octavia's cipher check and splits into two empty lists, which the
  template leaves out, as it would None.

What this maps, and why
-----------------------
The amphora driver (rest_api_driver.update_amphora_listeners) hands JinjaTemplater.build_config a
graph of octavia.common.data_models objects loaded from Octavia's DB, plus a `tls_certs` dict. We build
the same graph from the spec, so both renderers see one load balancer:

* LoadBalancer(enabled=admin_state_up, topology, project_id, vip=Vip, additional_vips=[AdditionalVip]).
  project_id: Octavia's DB always has one (it is substituted into the log-format); an absent spec
  project_id becomes '-'.
* spec.amphorae -> lb.amphorae, status 'ALLOCATED' (the peers macro only lists ALLOCATED amphorae),
  role MASTER/BACKUP (ACTIVE_STANDBY) or STANDALONE. The host amphora is the first one, or a made-up
  one (not added to lb.amphorae) when the spec has none.
* Every object is provisioning_status 'ACTIVE' (the templater drops PENDING_DELETE objects).
* Listener: admin_state_up -> enabled; default_tls_container_ref -> tls_certificate_id;
  sni_container_refs -> sni_containers; client_ca_tls_container_ref -> client_ca_tls_certificate_id;
  client_crl_container_ref -> client_crl_container_id; insert_headers values become the strings
  'true'/'false' (Octavia stores strings and the template calls .lower() on them); peer_port is
  HAPROXY_BASE_PEER_PORT (read, never rendered). connection_limit and timeouts are passed as given
  (None, like -1 or 0, makes the templater use the CONF default, which is what the API would store).
* default_pool (inline) or default_pool_id (a pool of spec.pools) -> Listener.default_pool.
  Listener.pools is what Octavia's DB property (db/models.py Listener.pools) gives: the default pool,
  then the redirect pool of each *enabled* policy that has at least one rule (any rule: the property
  does not look at the rules' admin state), without duplicates.
* L7 policies: Octavia keeps them in `position` order, and its repository creates them one by one,
  appending each and then moving it to index position-1 when position <= the new list length. We
  replay that (spec order, then the move), so colliding or sparse positions order as in Octavia.
  redirect_pool_id -> redirect_pool (the pool object); rules -> l7rules; admin_state_up -> enabled.
* Pool: admin_state_up -> enabled; healthmonitor -> health_monitor; tls_container_ref ->
  tls_certificate_id; ca_tls_container_ref -> ca_tls_certificate_id; crl_container_ref ->
  crl_container_id. A shared pool (spec.pools) is one object used by every listener that refers to it.
* HealthMonitor: max_retries -> rise_threshold, max_retries_down -> fall_threshold,
  admin_state_up -> enabled, http_version -> float (JSON from JavaScript writes 1.0 as 1, and the
  template must print "1.0"), id defaults to '<pool id>-hm'. For HTTP/HTTPS monitors an absent
  http_method/url_path/expected_codes becomes GET, '/', '200': Octavia's API always stores these, and
  without them the template would render the literal text "None".
* Member: address -> ip_address, admin_state_up -> enabled.
* tls_certs emulates the driver: {client CA id: file name, client CRL id: file name,
  pool id: {"client_cert"|"ca_cert"|"crl": <base_cert_dir>/<lb_id>/<file>}, listener cert id:
  TLSContainer}. The spec's *_ref values are already the file names the agent holds, so every path
  Octavia renders is <base_cert_dir>/<lb_id>/<file>, as ours. (The driver names CA/CRL files by the
  SHA-1 of their content; here the name is the spec's.) The crt-list path is Octavia's own
  CONF.haproxy_amphora.base_cert_dir/<lb_id>/<listener_id>.pem.

Rendering: JinjaTemplater(base_path, base_cert_dir, haproxy_template, connection_logging)
.build_config(host_amphora, <every non-UDP/SCTP listener, disabled ones included>, tls_certs,
haproxy_version.split('.')[:2][, amp_details on 16 and 19]); "haproxy" is null when the LB has no such listener. Each UDP/SCTP
listener is rendered with LvsJinjaTemplater().build_config(listener), as the driver does.
Nothing is sorted: Octavia's expected-codes order depends on PYTHONHASHSEED, so compare those as sets.

Only test code: it imports Octavia and copies nothing from it.
"""
import importlib.metadata
import inspect
import json
import logging
import os
import re
import sys
import time
import traceback

# The protocol owns stdout: anything the imported code prints goes to stderr instead.
PROTOCOL_OUT = sys.stdout
sys.stdout = sys.stderr

from oslo_config import cfg  # noqa: E402

from octavia.common import config as octavia_config  # noqa: E402,F401 (registers the options)
from octavia.common import constants  # noqa: E402
from octavia.common import data_models as dm  # noqa: E402
from octavia.common import validate  # noqa: E402
from octavia.common.jinja.haproxy.combined_listeners import jinja_cfg  # noqa: E402
from octavia.common.jinja.lvs import jinja_cfg as lvs_jinja_cfg  # noqa: E402

CONF = cfg.CONF
CONF([], project='octavia', default_config_files=[])

LVS_PROTOCOLS = ('UDP', 'SCTP')

# settings key -> CONF group
SETTINGS = {
    'base_path': 'haproxy_amphora',
    'base_cert_dir': 'haproxy_amphora',
    'connection_logging': 'haproxy_amphora',
    'user_log_format': 'haproxy_amphora',
    'timeout_client_data': 'haproxy_amphora',
    'timeout_member_connect': 'haproxy_amphora',
    'timeout_member_data': 'haproxy_amphora',
    'timeout_tcp_inspect': 'haproxy_amphora',
    'default_connection_limit': 'haproxy_amphora',
    'haproxy_stick_size': 'haproxy_amphora',
    'user_log_facility': 'amphora_agent',
    'administrative_log_facility': 'amphora_agent',
    'default_listener_ciphers': 'api_settings',
    'default_listener_tls_versions': 'api_settings',
    'default_listener_alpn_protocols': 'api_settings',
    'default_pool_ciphers': 'api_settings',
    'default_pool_tls_versions': 'api_settings',
    'default_pool_alpn_protocols': 'api_settings',
    'tls1_3_supported_ciphers': 'api_settings',
}

# What this release's code takes (see "Releases").
LISTENER_HAS_HSTS = 'hsts_max_age' in inspect.signature(dm.Listener.__init__).parameters
TAKES_AMP_DETAILS = 'amp_details' in inspect.signature(jinja_cfg.JinjaTemplater.build_config).parameters
SPLITS_TLS13_CIPHERS = hasattr(CONF.api_settings, 'tls1_3_supported_ciphers')
NO_CIPHERS = ':' if SPLITS_TLS13_CIPHERS else None



class WarningCollector(logging.Handler):
    """Keeps Octavia's log warnings (e.g. a sanitised redirect URL or a dropped L7 rule)."""

    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


WARNINGS = WarningCollector()
logging.getLogger('octavia').addHandler(WARNINGS)


def apply_settings(settings):
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise ValueError('unknown settings: %s' % ', '.join(unknown))
    for name, group in SETTINGS.items():
        if not hasattr(getattr(CONF, group), name):
            if name in settings:
                raise ValueError('this Octavia has no [%s] %s' % (group, name))
            continue
        if name in settings:
            CONF.set_override(name, settings[name], group=group)
        else:
            CONF.clear_override(name, group=group)


def header_value(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value).lower()


class Builder:
    """Spec (validated, defaults filled in) -> octavia.common.data_models graph."""

    def __init__(self, spec):
        self.spec = spec
        self.project_id = spec.get('project_id') or '-'
        self.pools = {}

    def build(self):
        spec = self.spec
        lb = dm.LoadBalancer(
            id=spec['id'], project_id=self.project_id, name=spec.get('name'),
            description=spec.get('description'), enabled=spec.get('admin_state_up', True),
            topology=spec.get('topology', constants.TOPOLOGY_SINGLE),
            provisioning_status=constants.ACTIVE, operating_status=constants.ONLINE)
        self.lb = lb
        lb.vip = dm.Vip(load_balancer_id=lb.id, ip_address=spec['vip_address'], load_balancer=lb)
        lb.additional_vips = [
            dm.AdditionalVip(load_balancer_id=lb.id, ip_address=v['ip_address'],
                             subnet_id=v.get('subnet_id'), load_balancer=lb)
            for v in spec.get('additional_vips', [])]
        standby = lb.topology == constants.TOPOLOGY_ACTIVE_STANDBY
        for i, a in enumerate(spec.get('amphorae', [])):
            role = (constants.ROLE_MASTER if i == 0 else constants.ROLE_BACKUP) if standby \
                else constants.ROLE_STANDALONE
            lb.amphorae.append(dm.Amphora(
                id=a['id'], load_balancer_id=lb.id, status=constants.AMPHORA_ALLOCATED,
                vrrp_ip=a['vrrp_ip'], role=role, load_balancer=lb))
        self.host_amphora = lb.amphorae[0] if lb.amphorae else dm.Amphora(
            id='%s-amphora' % lb.id, load_balancer_id=lb.id, status=constants.AMPHORA_ALLOCATED,
            role=constants.ROLE_STANDALONE, load_balancer=lb)

        # Every pool definition first (shared ones and listeners' inline default pools): objects
        # are shared by reference, as in the DB graph.
        for p in spec.get('pools', []):
            self.pool(p)
        for l in spec['listeners']:
            if l.get('default_pool'):
                self.pool(l['default_pool'])
        lb.pools = list(self.pools.values())
        lb.listeners = [self.listener(l) for l in spec['listeners']]
        return lb

    # -- pools ------------------------------------------------------------------------------

    def pool(self, p):
        if p['id'] in self.pools:
            return self.pools[p['id']]
        tls_enabled = p.get('tls_enabled', False)
        pool = dm.Pool(
            id=p['id'], project_id=self.project_id, name=p.get('name'),
            description=p.get('description'), protocol=p['protocol'],
            lb_algorithm=p['lb_algorithm'], enabled=p.get('admin_state_up', True),
            operating_status=constants.ONLINE, load_balancer_id=self.lb.id, load_balancer=self.lb,
            provisioning_status=constants.ACTIVE, tls_enabled=tls_enabled,
            tls_certificate_id=p.get('tls_container_ref'),
            ca_tls_certificate_id=p.get('ca_tls_container_ref'),
            crl_container_id=p.get('crl_container_ref'),
            tls_ciphers=p.get('tls_ciphers', NO_CIPHERS if tls_enabled else None),
            tls_versions=copy_list(p.get('tls_versions')),
            alpn_protocols=copy_list(p.get('alpn_protocols')))
        for m in p.get('members', []):
            pool.members.append(dm.Member(
                id=m['id'], project_id=self.project_id, pool_id=pool.id, ip_address=m['address'],
                protocol_port=m['protocol_port'], weight=m.get('weight', 1),
                backup=m.get('backup', False), enabled=m.get('admin_state_up', True),
                subnet_id=m.get('subnet_id'), operating_status=constants.ONLINE, pool=pool,
                provisioning_status=constants.ACTIVE, name=m.get('name'),
                monitor_address=m.get('monitor_address'), monitor_port=m.get('monitor_port')))
        if p.get('healthmonitor'):
            pool.health_monitor = self.monitor(p['healthmonitor'], pool)
        sp = p.get('session_persistence')
        if sp:
            pool.session_persistence = dm.SessionPersistence(
                pool_id=pool.id, type=sp['type'], cookie_name=sp.get('cookie_name'), pool=pool,
                persistence_timeout=sp.get('persistence_timeout'),
                persistence_granularity=sp.get('persistence_granularity'))
        self.pools[pool.id] = pool
        return pool

    def monitor(self, h, pool):
        http_method = h.get('http_method')
        url_path = h.get('url_path')
        expected_codes = h.get('expected_codes')
        if h['type'] in (constants.HEALTH_MONITOR_HTTP, constants.HEALTH_MONITOR_HTTPS):
            # What Octavia's API always stores for HTTP/HTTPS monitors.
            http_method = http_method or constants.HEALTH_MONITOR_HTTP_DEFAULT_METHOD
            url_path = url_path or constants.HEALTH_MONITOR_DEFAULT_URL_PATH
            expected_codes = expected_codes or constants.HEALTH_MONITOR_DEFAULT_EXPECTED_CODES
        version = h.get('http_version')
        return dm.HealthMonitor(
            id=h.get('id') or '%s-hm' % pool.id, project_id=self.project_id, pool_id=pool.id,
            type=h['type'], delay=h['delay'], timeout=h['timeout'],
            fall_threshold=h.get('max_retries_down', constants.DEFAULT_MAX_RETRIES_DOWN),
            rise_threshold=h['max_retries'], http_method=http_method, url_path=url_path,
            expected_codes=expected_codes, enabled=h.get('admin_state_up', True), pool=pool,
            name=h.get('name'), provisioning_status=constants.ACTIVE,
            operating_status=constants.ONLINE,
            http_version=float(version) if version is not None else None,
            domain_name=h.get('domain_name'))

    # -- listeners --------------------------------------------------------------------------

    def listener(self, l):
        default_pool = None
        if l.get('default_pool'):
            default_pool = self.pools[l['default_pool']['id']]
        elif l.get('default_pool_id') is not None:
            default_pool = self.pools[l['default_pool_id']]
        hsts = {}
        if LISTENER_HAS_HSTS:
            hsts = {'hsts_max_age': l.get('hsts_max_age'),
                    'hsts_include_subdomains': l.get('hsts_include_subdomains', False),
                    'hsts_preload': l.get('hsts_preload', False)}
        tls = l['protocol'] in ('TERMINATED_HTTPS', 'PROMETHEUS')
        listener = dm.Listener(
            **hsts,
            id=l['id'], project_id=self.project_id, name=l.get('name'),
            description=l.get('description'),
            default_pool_id=default_pool.id if default_pool else None,
            load_balancer_id=self.lb.id, protocol=l['protocol'],
            protocol_port=l['protocol_port'], connection_limit=l.get('connection_limit'),
            enabled=l.get('admin_state_up', True), provisioning_status=constants.ACTIVE,
            operating_status=constants.ONLINE,
            tls_certificate_id=l.get('default_tls_container_ref'), default_pool=default_pool,
            load_balancer=self.lb,
            sni_containers=[dm.SNI(listener_id=l['id'], position=i, tls_container_id=ref)
                            for i, ref in enumerate(l.get('sni_container_refs', []))],
            peer_port=constants.HAPROXY_BASE_PEER_PORT,
            insert_headers={k: header_value(v) for k, v in l.get('insert_headers', {}).items()},
            timeout_client_data=l.get('timeout_client_data'),
            timeout_member_connect=l.get('timeout_member_connect'),
            timeout_member_data=l.get('timeout_member_data'),
            timeout_tcp_inspect=l.get('timeout_tcp_inspect'),
            client_ca_tls_certificate_id=l.get('client_ca_tls_container_ref'),
            client_authentication=l.get('client_authentication', constants.CLIENT_AUTH_NONE),
            client_crl_container_id=l.get('client_crl_container_ref'),
            allowed_cidrs=[dm.ListenerCidr(listener_id=l['id'], cidr=c)
                           for c in l.get('allowed_cidrs', [])],
            tls_ciphers=l.get('tls_ciphers', NO_CIPHERS if tls else None),
            tls_versions=copy_list(l.get('tls_versions')),
            alpn_protocols=copy_list(l.get('alpn_protocols')))

        for p in l.get('l7policies', []):
            policy = self.policy(p, listener)
            # L7PolicyRepository.create: append, then move to position-1 if that is inside the list.
            listener.l7policies.append(policy)
            position = p.get('position')
            if position is not None and position < len(listener.l7policies) + 1:
                listener.l7policies.pop()
                listener.l7policies.insert(position - 1, policy)
        for i, policy in enumerate(listener.l7policies):
            policy.position = i + 1

        # Octavia's Listener.pools DB property.
        pools = [default_pool] if default_pool else []
        for policy in listener.l7policies:
            if (policy.redirect_pool is not None and len(policy.l7rules) > 0 and
                    policy.enabled is True and policy.redirect_pool not in pools):
                pools.append(policy.redirect_pool)
        listener.pools = pools
        for pool in pools:
            if listener not in pool.listeners:
                pool.listeners.append(listener)
        return listener

    def policy(self, p, listener):
        redirect_pool = self.pools[p['redirect_pool_id']] if p.get('redirect_pool_id') else None
        code = p.get('redirect_http_code')
        policy = dm.L7Policy(
            id=p['id'], name=p.get('name'), description=p.get('description'),
            listener_id=listener.id, action=p['action'],
            redirect_pool_id=redirect_pool.id if redirect_pool else None,
            redirect_url=p.get('redirect_url'), position=p.get('position'), listener=listener,
            redirect_pool=redirect_pool, enabled=p.get('admin_state_up', True),
            provisioning_status=constants.ACTIVE, operating_status=constants.ONLINE,
            project_id=self.project_id, redirect_prefix=p.get('redirect_prefix'),
            redirect_http_code=code)
        for r in p.get('rules', []):
            policy.l7rules.append(dm.L7Rule(
                id=r['id'], l7policy_id=policy.id, type=r['type'],
                enabled=r.get('admin_state_up', True), compare_type=r['compare_type'],
                key=r.get('key'), value=r['value'], l7policy=policy,
                invert=r.get('invert', False), provisioning_status=constants.ACTIVE,
                operating_status=constants.ONLINE, project_id=self.project_id))
        if redirect_pool is not None:
            redirect_pool.l7policies.append(policy)
        return policy


def copy_list(value):
    return list(value) if value is not None else None


def tls_certs_for(lb, listeners):
    """The driver's `certs` dict, with the spec's file names in place of Barbican content hashes."""
    cert_dir = os.path.join(CONF.haproxy_amphora.base_cert_dir, lb.id)
    certs = {}
    for listener in listeners:
        if listener.tls_certificate_id:
            certs[listener.tls_certificate_id] = dm.TLSContainer(id=listener.tls_certificate_id)
        if listener.client_ca_tls_certificate_id:
            certs[listener.client_ca_tls_certificate_id] = listener.client_ca_tls_certificate_id
        if listener.client_crl_container_id:
            certs[listener.client_crl_container_id] = listener.client_crl_container_id
        # _process_listener_pool_certs: the listener's pools, then every redirect pool.
        pools = list(listener.pools) + [p.redirect_pool for p in listener.l7policies
                                        if p.redirect_pool is not None]
        for pool in pools:
            if pool.id in certs:
                continue
            entry = {}
            if pool.tls_certificate_id:
                entry['client_cert'] = os.path.join(cert_dir, pool.tls_certificate_id)
            if pool.ca_tls_certificate_id:
                entry['ca_cert'] = os.path.join(cert_dir, pool.ca_tls_certificate_id)
            if pool.crl_container_id:
                entry['crl'] = os.path.join(cert_dir, pool.crl_container_id)
            certs[pool.id] = entry
    return certs


class Prepared:
    """Models and templater for one request, built once (bench times build_config alone)."""

    def __init__(self, args):
        apply_settings(args.get('settings', {}))
        builder = Builder(args['spec'])
        self.lb = builder.build()
        self.host_amphora = builder.host_amphora
        self.versions = str(args['haproxy_version']).split('.')[:2]
        self.haproxy_listeners = [l for l in self.lb.listeners if l.protocol not in LVS_PROTOCOLS]
        self.lvs_listeners = [l for l in self.lb.listeners if l.protocol in LVS_PROTOCOLS]
        self.tls_certs = tls_certs_for(self.lb, self.haproxy_listeners)
        self.amp_details = args.get('amp_details')
        hc = CONF.haproxy_amphora
        self.templater = jinja_cfg.JinjaTemplater(
            base_amp_path=hc.base_path, base_crt_dir=hc.base_cert_dir,
            haproxy_template=hc.haproxy_template, connection_logging=hc.connection_logging)

    def haproxy(self):
        if not self.haproxy_listeners:
            return None
        extra = {'amp_details': self.amp_details} if TAKES_AMP_DETAILS else {}
        return self.templater.build_config(self.host_amphora, self.haproxy_listeners,
                                           self.tls_certs, self.versions, **extra)

    def lvs(self):
        templater = lvs_jinja_cfg.LvsJinjaTemplater(base_amp_path=CONF.haproxy_amphora.base_path)
        return {l.id: templater.build_config(listener=l) for l in self.lvs_listeners}


def ping(_args):
    return {'octavia': importlib.metadata.version('octavia'),
            'jinja2': importlib.metadata.version('jinja2')}


# The OSSA-2026-039 fix (Debian 11.0.0-2+deb12u1, upstream after 19): the templater replaces TLS
# ciphers that do not match VALID_CIPHER_RE, clears redirect URLs that INVALID_URL_CHARS_RE finds
# characters in, and drops L7 rules with INVALID_CONFIG_CHARS_RE characters. With "unpatched" these
# checks pass everything, which renders what 11.0.0-2 (bookworm's main archive, before the fix)
# renders: a diff of the two packages' jinja_cfg.py shows those checks are the whole change to it.
UNPATCHED = {
    'VALID_CIPHER_RE': re.compile(r'(?s).*'),
    'INVALID_URL_CHARS_RE': re.compile(r'(?!)'),
    'INVALID_CONFIG_CHARS_RE': re.compile(r'(?!)'),
}


def render(args):
    WARNINGS.messages = []
    saved = {}
    if args.get('unpatched'):
        for name, regex in UNPATCHED.items():
            if hasattr(validate, name):
                saved[name] = getattr(validate, name)
                setattr(validate, name, regex)
    try:
        prepared = Prepared(args)
        return {'haproxy': prepared.haproxy(), 'lvs': prepared.lvs(), 'warnings': WARNINGS.messages}
    finally:
        for name, regex in saved.items():
            setattr(validate, name, regex)


def bench(args):
    prepared = Prepared(args)
    if not prepared.haproxy_listeners:
        raise ValueError('the load balancer has no haproxy listener to render')
    iterations = int(args['iterations'])
    for _ in range(int(args.get('warmup', 0))):
        prepared.haproxy()
    ms = []
    out = ''
    for _ in range(iterations):
        start = time.perf_counter()
        out = prepared.haproxy()
        ms.append((time.perf_counter() - start) * 1000.0)
    return {'ms': ms, 'bytes': len(out.encode('utf-8'))}


def driver_spec(args):
    """The spec this project's Octavia driver (octavia-driver/) builds from the models render() hands
    the templater: the same load balancer as the controller describes it through API 2.0. `driver_path`
    is the folder that holds the amphora_spec_driver package (visible inside the release's root)."""
    if args['driver_path'] not in sys.path:
        sys.path.insert(0, args['driver_path'])
    from amphora_spec_driver import spec as driver
    prepared = Prepared(args)
    files = driver.CertificateFiles()
    # The spec's certificate file names stand in for the driver's sha1 names, as in tls_certs_for().
    for listener in prepared.lb.listeners:
        files.listeners[listener.id] = driver.ListenerFiles(
            default=listener.tls_certificate_id,
            sni=[s.tls_container_id for s in listener.sni_containers or []],
            client_ca=listener.client_ca_tls_certificate_id,
            client_crl=listener.client_crl_container_id)
    for pool in prepared.lb.pools:
        files.pools[pool.id] = driver.PoolFiles(
            client_cert=pool.tls_certificate_id, ca=pool.ca_tls_certificate_id,
            crl=pool.crl_container_id)
    return driver.build_spec(prepared.lb, certificates=files,
                             defaults=driver.ControllerDefaults.from_conf(CONF),
                             host_amphora=prepared.host_amphora)


OPS = {'ping': ping, 'render': render, 'bench': bench, 'driver_spec': driver_spec}


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            out = {'ok': True, 'result': OPS[req['op']](req.get('args', {}))}
        except Exception as e:  # every failure goes back to the test, typed by class name
            out = {'ok': False, 'exception': type(e).__name__, 'message': str(e),
                   'trace': traceback.format_exc(limit=5)}
        PROTOCOL_OUT.write(json.dumps(out, default=str) + '\n')
        PROTOCOL_OUT.flush()


if __name__ == '__main__':
    main()
