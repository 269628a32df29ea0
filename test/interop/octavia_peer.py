"""Octavia's own controller code, driven by the interop tests.

Reads one JSON request per line on stdin, answers one JSON line on stdout:
  {"op": "setup", "args": {...}}            configure oslo.config like a worker
  {"op": "render", "args": {...}}           JinjaTemplater.build_config for a small LB
                                            (monitor: optional method, http_version, domain_name;
                                            connection_logging: flow logs, default off)
  {"op": "call", "args": {"method": ..., "params": [...]}}   AmphoraAPIClient1_0.<method>
  {"op": "agent_config", "args": {"topology": ...}}   AgentJinjaTemplater.build_agent_config
  {"op": "driver", "args": {"method": ..., "params": [...]}}   the amphora driver's method
  {"op": "update_listeners", "args": {...}}   the driver's update_amphora_listeners for a
      TERMINATED_HTTPS load balancer (certificate from the local cert manager); answers
      the /1.0/details the driver fetched on the way
  {"op": "update_lb", "args": {...}}       the driver's update_amphora_listeners for a load
      balancer of an HTTP and a TERMINATED_HTTPS listener, each with its pool (args: lb_id,
      vip, monitor, certificate, private_key, http and https: {listener_id, port, pool_id,
      members}); the certificate is stored once per peer
  {"op": "as_render", "args": {...}}        JinjaTemplater.build_config of an ACTIVE_STANDBY load
      balancer (both amphorae, peers section) for the configured amphora
  {"op": "as_vrrp", "args": {...}}          the driver's update_vrrp_conf (KeepalivedJinjaTemplater,
      upload) and, with "start", start_vrrp_service, for the configured amphora
Answers: {"ok": true, "result": ...} or {"ok": false, "exception": "<class>", "message": "..."}.
Only test code: it imports Octavia, it copies nothing from it.
"""
import inspect
import json
import sys
import traceback

from oslo_config import cfg
from oslo_log import log as oslo_logging

from octavia.common import config as octavia_config  # registers the options
from octavia.common import data_models as dm
from octavia.amphorae.drivers.haproxy import rest_api_driver
from octavia.common.jinja.haproxy.combined_listeners import jinja_cfg

CONF = cfg.CONF
# A worker's service setup registers oslo.log's options ([DEFAULT] debug, which
# the agent config template reads).
oslo_logging.register_options(CONF)
state = {}


def setup(args):
    CONF([], project='octavia', default_config_files=[])
    for group, opts in args['overrides'].items():
        for name, value in opts.items():
            CONF.set_override(name, value, group=group)
    state['client'] = rest_api_driver.AmphoraAPIClient1_0()
    amp = dm.Amphora(id=args['amphora_id'], lb_network_ip=args['lb_network_ip'])
    amp.api_version = None  # the client caches the discovered version on the object
    state['amp'] = amp
    state.pop('driver', None)
    return True


def driver():
    """The amphora driver a worker uses (built lazily: it loads the configured cert manager)."""
    if 'driver' not in state:
        from octavia.amphorae.drivers.haproxy import rest_api_driver as rd
        d = rd.HaproxyAmphoraLoadBalancerDriver()
        # Record each /1.0/details answer the driver gets, so the test can
        # recompute what Octavia renders from it.
        client = d.clients['1.0']
        original = client.get_details

        def recording_get_details(amp):
            state['last_details'] = original(amp)
            return state['last_details']
        client.get_details = recording_get_details
        state['driver'] = d
    return state['driver']


def agent_config(args):
    from octavia.amphorae.backends.agent import agent_jinja_cfg
    return agent_jinja_cfg.AgentJinjaTemplater().build_agent_config(
        state['amp'].id, args.get('topology', 'SINGLE'))


def driver_call(args):
    amp = state['amp']
    return getattr(driver(), args['method'])(amp, *args.get('params', []))


def update_listeners(args):
    from oslo_context import context as oslo_context
    d = driver()
    ref = d.cert_manager.store_cert(oslo_context.RequestContext(project_id='p'),
                                    args['certificate'], args['private_key'])
    lb, listener = build_lb(dict(args, protocol='TERMINATED_HTTPS', tls_certificate_id=ref,
                                 project_id='p'))
    state.pop('last_details', None)
    d.update_amphora_listeners(lb, state['amp'])
    return {'details': state.get('last_details')}


def update_lb(args):
    from oslo_context import context as oslo_context
    d = driver()
    if 'tls_ref' not in state:
        state['tls_ref'] = d.cert_manager.store_cert(oslo_context.RequestContext(project_id='p'),
                                                     args['certificate'], args['private_key'])
    common = dict(lb_id=args['lb_id'], vip=args['vip'], monitor=args['monitor'], project_id='p')
    lb, _ = build_lb(dict(args['http'], **common))
    add_listener(lb, dict(args['https'], **common, protocol='TERMINATED_HTTPS',
                          tls_certificate_id=state['tls_ref']))
    if 'amp_memory' not in args:
        d.update_amphora_listeners(lb, state['amp'])
        return True
    # The memory an amphora would report (kB), instead of the test host's:
    # Octavia 19 sizes the TLS session cache from it (LP #2119987), and a
    # host's free gigabytes make a cache haproxy cannot allocate.
    client = d.clients['1.0']
    details = client.get_details  # driver()'s recording wrapper

    def amphora_details(amp, *a, **kw):
        answer = details(amp, *a, **kw)
        answer['memory'] = dict(answer['memory'], **args['amp_memory'])
        return answer

    client.get_details = amphora_details
    try:
        d.update_amphora_listeners(lb, state['amp'])
    finally:
        client.get_details = details
    return True


def build_lb(spec):
    """A load balancer with one HTTP listener and one pool, from a small JSON spec."""
    lb = dm.LoadBalancer(id=spec['lb_id'], topology='SINGLE', enabled=True,
                         project_id=spec.get('project_id'),
                         vip=dm.Vip(ip_address=spec['vip']), amphorae=[state['amp']],
                         listeners=[], pools=[])
    return lb, add_listener(lb, spec)


def add_listener(lb, spec):
    """One more HTTP listener (listener_id, port) with its pool (pool_id, members) on lb."""
    protocol = spec.get('protocol', 'HTTP')
    tls = {}
    if protocol == 'TERMINATED_HTTPS':
        tls = dict(tls_certificate_id=spec['tls_certificate_id'], sni_containers=[],
                   project_id='p', tls_ciphers=None, tls_versions=['TLSv1.2', 'TLSv1.3'],
                   alpn_protocols=['http/1.1'])
    listener = dm.Listener(
        id=spec['listener_id'], protocol=protocol, protocol_port=spec['port'], enabled=True, **tls,
        load_balancer=lb, connection_limit=spec.get('connection_limit', 5000),
        timeout_client_data=50000, timeout_member_connect=5000, timeout_member_data=50000,
        timeout_tcp_inspect=0, insert_headers={}, l7policies=[], tags=[], allowed_cidrs=[],
        provisioning_status='ACTIVE')
    hm = None
    pool = dm.Pool(id=spec['pool_id'], protocol='HTTP', lb_algorithm='ROUND_ROBIN', enabled=True,
                   members=[], listeners=[listener], load_balancer=lb, tls_enabled=False,
                   provisioning_status='ACTIVE', session_persistence=None, alpn_protocols=None)
    if spec.get('monitor'):
        m = spec['monitor']
        # JSON has no 1.0 apart from 1: Octavia's API hands the templater a float.
        http_version = float(m['http_version']) if m.get('http_version') is not None else None
        hm = dm.HealthMonitor(id=spec['pool_id'] + '-hm', type='HTTP', delay=m['delay'],
                              timeout=m['timeout'], fall_threshold=m['fall'],
                              rise_threshold=m['rise'], http_method=m.get('method', 'GET'),
                              url_path=m['path'], expected_codes='200', enabled=True, pool=pool,
                              provisioning_status='ACTIVE', http_version=http_version,
                              domain_name=m.get('domain_name'))
        pool.health_monitor = hm
    for mem in spec['members']:
        pool.members.append(dm.Member(id=mem['id'], ip_address=mem['address'],
                                      protocol_port=mem['port'], weight=mem.get('weight', 1),
                                      enabled=mem.get('enabled', True),
                                      backup=False, pool=pool, provisioning_status='ACTIVE',
                                      monitor_address=None, monitor_port=None))
    if spec.get('persistence'):
        pool.session_persistence = dm.SessionPersistence(
            pool_id=pool.id, type=spec['persistence'], cookie_name=spec.get('cookie_name'),
            pool=pool)
    listener.default_pool = pool
    listener.pools = [pool]
    lb.listeners.append(listener)
    lb.pools.append(pool)
    return listener


def build_as_lb(spec):
    """An ACTIVE_STANDBY load balancer: build_lb's, with both amphorae, VRRP group and peers.

    spec['amphorae']: [{id, lb_network_ip, vrrp_ip, role, priority}]; the one
    whose id is the configured amphora's replaces state['amp']. spec['more_listeners']:
    further listeners with their pools (add_listener's spec, members from spec).
    """
    lb, listener = build_lb(spec)
    for more in spec.get('more_listeners', []):
        add_listener(lb, dict(more, members=spec['members']))
    lb.topology = 'ACTIVE_STANDBY'
    for each in lb.listeners:
        each.peer_port = 1025
    amps = []
    for a in spec['amphorae']:
        amp = dm.Amphora(id=a['id'], lb_network_ip=a['lb_network_ip'], vrrp_ip=a['vrrp_ip'],
                         role=a['role'], vrrp_priority=a['priority'], vrrp_id=1,
                         vrrp_interface='eth1', status='ALLOCATED', load_balancer=lb,
                         load_balancer_id=lb.id)
        amp.api_version = None
        if a['id'] == state['amp'].id:
            state['amp'] = amp
        amps.append(amp)
    lb.amphorae = amps
    lb.vrrp_group = dm.VRRPGroup(load_balancer_id=lb.id, vrrp_group_name=lb.id.replace('-', ''),
                                 vrrp_auth_type='PASS', vrrp_auth_pass='aat-pass',
                                 advert_int=spec.get('advert_int', 1))
    return lb, listener


def as_render(args):
    lb, listener = build_as_lb(args)
    templater = jinja_cfg.JinjaTemplater(
        base_amp_path=CONF.haproxy_amphora.base_path,
        base_crt_dir=CONF.haproxy_amphora.base_cert_dir,
        haproxy_template=CONF.haproxy_amphora.haproxy_template,
        connection_logging=False)
    versions = args['haproxy_version'].split('.')[:2]
    if 'amp_details' in inspect.signature(templater.build_config).parameters:
        return templater.build_config(state['amp'], lb.listeners, {}, versions, amp_details=None)
    return templater.build_config(state['amp'], lb.listeners, {}, versions)


def as_vrrp(args):
    lb, _ = build_as_lb(args)
    amp = state['amp']
    net_config = {'additional_vip_data': [],
                  'vip_subnet': {'cidr': args['vip_cidr'], 'gateway_ip': args.get('gateway'),
                                 'host_routes': []}}
    d = driver()
    d.update_vrrp_conf(lb, {amp.id: net_config}, amp)
    if args.get('start'):
        d.start_vrrp_service(amp)
    return True


def render(args):
    lb, listener = build_lb(args)
    templater = jinja_cfg.JinjaTemplater(
        base_amp_path=CONF.haproxy_amphora.base_path,
        base_crt_dir=CONF.haproxy_amphora.base_cert_dir,
        haproxy_template=CONF.haproxy_amphora.haproxy_template,
        connection_logging=args.get('connection_logging', False))
    versions = args['haproxy_version'].split('.')[:2]
    # Octavia 12+ also take the amphora's GET /details; None reads as "no TuneD profile".
    if 'amp_details' in inspect.signature(templater.build_config).parameters:
        return templater.build_config(state['amp'], [listener], {}, versions, amp_details=None)
    return templater.build_config(state['amp'], [listener], {}, versions)


def call(args):
    client = state['client']
    amp = state['amp']
    if args['method'] == 'get_api_version' or amp.api_version is None:
        # What the driver's _populate_amphora_api_version does before each task.
        version = client.get_api_version(amp)
        amp.api_version = version['api_version']
        if args['method'] == 'get_api_version':
            return version
    result = getattr(client, args['method'])(amp, *args.get('params', []))
    if hasattr(result, 'status_code'):
        try:
            body = result.json()
        except Exception:
            body = result.text
        return {'status': result.status_code, 'body': body,
                'content_type': result.headers.get('content-type')}
    return result


OPS = {'setup': setup, 'render': render, 'call': call, 'agent_config': agent_config,
       'driver': driver_call, 'update_listeners': update_listeners, 'update_lb': update_lb,
       'as_render': as_render, 'as_vrrp': as_vrrp}

for line in sys.stdin:
    req = json.loads(line)
    try:
        out = {'ok': True, 'result': OPS[req['op']](req.get('args', {}))}
    except Exception as e:  # report every failure to the test, typed by class name
        out = {'ok': False, 'exception': type(e).__name__, 'message': str(e),
               'trace': traceback.format_exc(limit=3)}
    sys.stdout.write(json.dumps(out, default=str) + '\n')
    sys.stdout.flush()
