"""Octavia's VRRP keepalived configs (python3-octavia 11, 16 or 19), for the keepalived policy test.

Run with the release's Debian python3 (octaviaPython() in test/helpers/haproxies.ts), one JSON
argument: {"base_path": "...", "interface": "<vrrp_interface, default eth1>", "check_interval": <s, optional>,
"amphora": {"vrrp_ip", "peer", "vip", "cidr", "gateway"} (optional: one more variant, "amphora", for a real
network)}. Prints one JSON object: {"octavia": "<version>", "configs":
{"<variant>": "<keepalived config>", ...}}, rendered by KeepalivedJinjaTemplater.build_keepalived_config
with the controller's [haproxy_amphora] base_path, as the amphora driver's update_vrrp_conf does.

The variants cover every branch of keepalived_base.template: MASTER and BACKUP, one and two peers,
an IPv4 and an IPv6 VRRP address (so VIPs of the other family go to virtual_ipaddress_excluded),
additional VIPs, subnets with and without a gateway, host routes.
"""
import importlib.metadata
import json
import sys

PROTOCOL_OUT = sys.stdout
sys.stdout = sys.stderr

from oslo_config import cfg  # noqa: E402

from octavia.amphorae.drivers.keepalived.jinja import jinja_cfg  # noqa: E402
from octavia.common import config as octavia_config  # noqa: E402,F401 (registers the options)
from octavia.common import data_models as dm  # noqa: E402

CONF = cfg.CONF
CONF([], project='octavia', default_config_files=[])

LB_ID = '6a2b9a64-3c1e-4d5f-8a71-0c2d9e1f4b10'


def subnet(cidr, gateway, host_routes=()):
    return {'cidr': cidr, 'gateway_ip': gateway,
            'host_routes': [{'destination': d, 'nexthop': n} for d, n in host_routes]}


def render(templater, interface, role, vrrp_ip, peers, vip, vip_subnet, additional):
    lb = dm.LoadBalancer(id=LB_ID, topology='ACTIVE_STANDBY', vip=dm.Vip(ip_address=vip), amphorae=[])
    lb.vrrp_group = dm.VRRPGroup(load_balancer_id=LB_ID, vrrp_group_name=LB_ID.replace('-', ''),
                                 vrrp_auth_type='PASS', vrrp_auth_pass='6a2b9a6', advert_int=1)
    me = None
    for i, ip in enumerate([vrrp_ip] + peers):
        amp = dm.Amphora(id='amp-%d' % i, vrrp_ip=ip, role=role if i == 0 else 'BACKUP',
                         vrrp_priority=100 if i == 0 else 90, vrrp_id=1, vrrp_interface=interface,
                         status='ALLOCATED', load_balancer=lb)
        lb.amphorae.append(amp)
        me = me or amp
    net_config = {'vip_subnet': vip_subnet,
                  'additional_vip_data': [{'ip_address': ip, 'subnet': s} for ip, s in additional]}
    return templater.build_keepalived_config(lb, me, net_config)


def main():
    args = json.loads(sys.argv[1])
    CONF.set_override('base_path', args['base_path'], group='haproxy_amphora')
    if args.get('check_interval'):
        CONF.set_override('vrrp_check_interval', args['check_interval'], group='keepalived_vrrp')
    templater = jinja_cfg.KeepalivedJinjaTemplater()
    intf = args.get('interface', 'eth1')
    v4 = subnet('10.61.0.0/24', '10.61.0.1', [('172.16.0.0/16', '10.61.0.254'), ('0.0.0.0/0', '10.61.0.253')])
    v6 = subnet('2001:db8:61::/64', '2001:db8:61::1', [('2001:db8:99::/48', '2001:db8:61::fe')])
    configs = {
        'ipv4-master': render(templater, intf, 'MASTER', '10.61.0.11', ['10.61.0.12'], '10.61.0.100', v4, []),
        'ipv4-backup-no-gateway': render(templater, intf, 'BACKUP', '10.61.0.12', ['10.61.0.11'], '10.61.0.100',
                                         subnet('10.61.0.0/24', None), []),
        'ipv4-additional-vips': render(templater, intf, 'MASTER', '10.61.0.11', ['10.61.0.12', '10.61.0.13'], '10.61.0.100', v4,
                                       [('10.62.0.100', subnet('10.62.0.0/24', '10.62.0.1')), ('2001:db8:61::100', v6)]),
        'ipv6-master': render(templater, intf, 'MASTER', '2001:db8:61::11', ['2001:db8:61::12'], '2001:db8:61::100', v6,
                              [('10.61.0.100', v4)]),
    }
    if args.get('amphora'):
        a = args['amphora']
        configs['amphora'] = render(templater, intf, 'MASTER', a['vrrp_ip'], [a['peer']], a['vip'],
                                    subnet(a['cidr'], a['gateway']), [])
    PROTOCOL_OUT.write(json.dumps({'octavia': importlib.metadata.version('octavia'), 'configs': configs}) + '\n')


if __name__ == '__main__':
    main()
