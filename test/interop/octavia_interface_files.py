"""The interface files a release of Octavia's own agent code writes for plug
requests (11: bookworm, 16: trixie, 19: sid; run with that release's python).

Reads a JSON list of cases on stdin, prints a JSON list of interface files.
A case: {"kind": "vip" | "port" | "lo", "name", "mtu", "topology",
"vips": [{ip_address, subnet_cidr, gateway, host_routes}], "vrrp_ip",
"fixed_ips": [...], "is_sriov"}. The vip kind goes through Plug.render_vips
and Plug.build_vrrp_info as plug_vip and plug_network (vip_net_info) do.
16 and later record if_type and is_sriov (11 has neither: left out, and
is_sriov is not passed to it).
"""
import inspect
import json
import sys

from octavia.amphorae.backends.agent.api_server import plug
from octavia.amphorae.backends.utils import interface_file

NEWER = 'if_type' in inspect.signature(interface_file.InterfaceFile.__init__).parameters


def as_dict(f):
    out = {'name': f.name, 'addresses': f.addresses, 'routes': f.routes,
           'rules': f.rules, 'scripts': f.scripts}
    if NEWER:
        out['if_type'] = f.if_type
        out['is_sriov'] = f.is_sriov
    if f.mtu:
        out['mtu'] = f.mtu
    return out


def build(case):
    p = plug.Plug(None)
    sriov = {'is_sriov': case.get('is_sriov', False)} if NEWER else {}
    if case['kind'] == 'lo':
        # osutils.write_interface_file, as plug_lo writes lo.json
        return interface_file.InterfaceFile(
            name='lo', addresses=[{'address': '127.0.0.1', 'prefixlen': 8}],
            **({'if_type': 'lo'} if NEWER else {}))
    if case['kind'] == 'port':
        return interface_file.PortInterfaceFile(
            name=case['name'], mtu=case.get('mtu'),
            fixed_ips=case.get('fixed_ips', []), **sriov)
    first = case['vips'][0]
    return interface_file.VIPInterfaceFile(
        name=case['name'], mtu=case.get('mtu'),
        vips=p.render_vips(case['vips']),
        vrrp_info=p.build_vrrp_info(case.get('vrrp_ip'), first['subnet_cidr'],
                                    first['gateway'], first['host_routes']),
        fixed_ips=case.get('fixed_ips'), topology=case['topology'], **sriov)


print(json.dumps([as_dict(build(c)) for c in json.load(sys.stdin)]))
