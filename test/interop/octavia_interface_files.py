"""The interface files Octavia 11's own agent code writes for plug requests.

Reads a JSON list of cases on stdin, prints a JSON list of interface files.
A case: {"kind": "vip" | "port" | "lo", "name", "mtu", "topology",
"vips": [{ip_address, subnet_cidr, gateway, host_routes}], "vrrp_ip",
"fixed_ips": [...]}. The vip kind goes through Plug.render_vips and
Plug.build_vrrp_info as plug_vip and plug_network (vip_net_info) do.
"""
import json
import sys

from octavia.amphorae.backends.agent.api_server import plug
from octavia.amphorae.backends.utils import interface_file


def as_dict(f):
    out = {'name': f.name, 'addresses': f.addresses, 'routes': f.routes,
           'rules': f.rules, 'scripts': f.scripts}
    if f.mtu:
        out['mtu'] = f.mtu
    return out


def build(case):
    p = plug.Plug(None)
    if case['kind'] == 'lo':
        return interface_file.InterfaceFile(
            name='lo', addresses=[{'address': '127.0.0.1', 'prefixlen': 8}])
    if case['kind'] == 'port':
        return interface_file.PortInterfaceFile(
            name=case['name'], mtu=case.get('mtu'),
            fixed_ips=case.get('fixed_ips', []))
    first = case['vips'][0]
    return interface_file.VIPInterfaceFile(
        name=case['name'], mtu=case.get('mtu'),
        vips=p.render_vips(case['vips']),
        vrrp_info=p.build_vrrp_info(case.get('vrrp_ip'), first['subnet_cidr'],
                                    first['gateway'], first['host_routes']),
        fixed_ips=case.get('fixed_ips'), topology=case['topology'])


print(json.dumps([as_dict(build(c)) for c in json.load(sys.stdin)]))
