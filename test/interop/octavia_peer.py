"""Octavia's own controller code, driven by the interop tests.

Reads one JSON request per line on stdin, answers one JSON line on stdout:
  {"op": "setup", "args": {...}}            configure oslo.config like a worker
  {"op": "render", "args": {...}}           JinjaTemplater.build_config for a small LB
                                            (monitor: optional method, http_version, domain_name)
  {"op": "call", "args": {"method": ..., "params": [...]}}   AmphoraAPIClient1_0.<method>
Answers: {"ok": true, "result": ...} or {"ok": false, "exception": "<class>", "message": "..."}.
Only test code: it imports Octavia, it copies nothing from it.
"""
import inspect
import json
import sys
import traceback

from oslo_config import cfg

from octavia.common import config as octavia_config  # registers the options
from octavia.common import data_models as dm
from octavia.amphorae.drivers.haproxy import rest_api_driver
from octavia.common.jinja.haproxy.combined_listeners import jinja_cfg

CONF = cfg.CONF
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
    return True


def build_lb(spec):
    """A load balancer with one HTTP listener and one pool, from a small JSON spec."""
    lb = dm.LoadBalancer(id=spec['lb_id'], topology='SINGLE', enabled=True,
                         vip=dm.Vip(ip_address=spec['vip']), amphorae=[state['amp']])
    listener = dm.Listener(
        id=spec['listener_id'], protocol='HTTP', protocol_port=spec['port'], enabled=True,
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
    listener.default_pool = pool
    listener.pools = [pool]
    lb.listeners = [listener]
    lb.pools = [pool]
    return lb, listener


def render(args):
    lb, listener = build_lb(args)
    templater = jinja_cfg.JinjaTemplater(
        base_amp_path=CONF.haproxy_amphora.base_path,
        base_crt_dir=CONF.haproxy_amphora.base_cert_dir,
        haproxy_template=CONF.haproxy_amphora.haproxy_template,
        connection_logging=False)
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


OPS = {'setup': setup, 'render': render, 'call': call}

for line in sys.stdin:
    req = json.loads(line)
    try:
        out = {'ok': True, 'result': OPS[req['op']](req.get('args', {}))}
    except Exception as e:  # report every failure to the test, typed by class name
        out = {'ok': False, 'exception': type(e).__name__, 'message': str(e),
               'trace': traceback.format_exc(limit=3)}
    sys.stdout.write(json.dumps(out, default=str) + '\n')
    sys.stdout.flush()
