#!/usr/bin/env python3
"""Checks the box's compute and network drivers inside a real Octavia.

Run with the python that has Octavia installed (a root filesystem of the
release matrix), from anywhere:

    python3 test/octavia-box/test_drivers.py

The cloud is a test double here: a JSON-lines server in this process that
keeps networks, ports and servers in dicts, just enough of PROTOCOL.md to
exercise the translation. The drivers are loaded through stevedore by
Octavia's own code (utils.get_network_driver, the compute tasks), so the
entry points are checked too, and the flows' tasks that need no database
(ComputeCreate, ComputeWait, CreateVIPBasePort, AttachPort, AdminDownPort,
DeletePort...) are run as the worker and health manager run them. The
others are replaced by the driver calls they make, with the fields their
callers read asserted.
"""

import base64
import ipaddress
import itertools
import json
import logging
import os
import socketserver
import sys
import tempfile
import threading
import traceback
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The checkout is shared with other runs and suites: leave no __pycache__.
sys.dont_write_bytecode = True

# ---------------------------------------------------------------- the double

MGMT_NET, MGMT_SUBNET = 'mgmt', 'mgmt-subnet'
TENANT_NET, TENANT_SUBNET = 'tenant', 'tenant-subnet'
# Not in the box: a member network, for the network plug/unplug flows.
MEMBER_NET, MEMBER_SUBNET = 'members', 'members-subnet'
MEMBER_SUBNET2 = 'members-subnet-2'  # for additional VIPs


class FakeCloud:
    """PROTOCOL.md's objects in dicts; servers go ACTIVE on their second
    server.get, so a caller that does not poll shows up."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = []
        self.networks = {
            MGMT_NET: {'id': MGMT_NET, 'name': 'lb-mgmt-net',
                       'subnets': [MGMT_SUBNET], 'mtu': 1500,
                       'provider_network_type': 'flat'},
            TENANT_NET: {'id': TENANT_NET, 'name': 'tenant',
                         'subnets': [TENANT_SUBNET], 'mtu': 1450,
                         'provider_network_type': 'flat'},
            MEMBER_NET: {'id': MEMBER_NET, 'name': MEMBER_NET,
                         'subnets': [MEMBER_SUBNET, MEMBER_SUBNET2],
                         'mtu': 1500,
                         'provider_network_type': 'flat'},
        }
        self.subnets = {
            MGMT_SUBNET: {'id': MGMT_SUBNET, 'network_id': MGMT_NET,
                          'name': MGMT_SUBNET, 'cidr': '172.31.0.0/24',
                          'gateway_ip': None, 'ip_version': 4,
                          'host_routes': [], 'dns_nameservers': []},
            TENANT_SUBNET: {'id': TENANT_SUBNET, 'network_id': TENANT_NET,
                            'name': TENANT_SUBNET, 'cidr': '10.99.0.0/24',
                            'gateway_ip': '10.99.0.1', 'ip_version': 4,
                            'host_routes': [{'destination': '10.98.0.0/16',
                                             'nexthop': '10.99.0.2'}],
                            'dns_nameservers': []},
            MEMBER_SUBNET: {'id': MEMBER_SUBNET, 'network_id': MEMBER_NET,
                            'name': MEMBER_SUBNET, 'cidr': '10.97.0.0/24',
                            'gateway_ip': None, 'ip_version': 4,
                            'host_routes': [], 'dns_nameservers': []},
        }
        self.subnets[MEMBER_SUBNET2] = dict(
            self.subnets[MEMBER_SUBNET], id=MEMBER_SUBNET2,
            name=MEMBER_SUBNET2, cidr='10.96.0.0/24')
        self.first_ip = {MGMT_SUBNET: 10, TENANT_SUBNET: 100,
                         MEMBER_SUBNET: 10, MEMBER_SUBNET2: 10}
        self.ports = {}
        self.servers = {}
        self.macs = itertools.count(1)

    # -- helpers

    def _err(self, kind, msg):
        raise CloudFault(kind, msg)

    def _need(self, table, ident, what):
        if ident not in table:
            self._err('NotFound', f'{what} {ident} not found')
        return table[ident]

    def _by_id_or_name(self, table, ident, what):
        if ident in table:
            return table[ident]
        for obj in table.values():
            if obj.get('name') == ident:
                return obj
        return self._err('NotFound', f'{what} {ident} not found')

    def _used(self):
        return {f['ip_address'] for p in self.ports.values()
                for f in p['fixed_ips']}

    def _allocate(self, network_id, wanted):
        out = []
        for f in wanted or [{}]:
            subnet_id = f.get('subnet_id')
            if subnet_id is None and f.get('ip_address'):
                for s in self.subnets.values():
                    if (s['network_id'] == network_id and
                            ipaddress.ip_address(f['ip_address']) in
                            ipaddress.ip_network(s['cidr'])):
                        subnet_id = s['id']
            if subnet_id is None:
                subnet_id = self.networks[network_id]['subnets'][0]
            sub = self._need(self.subnets, subnet_id, 'Subnet')
            if sub['network_id'] != network_id:
                self._err('BadRequest', 'subnet not on network')
            ip = f.get('ip_address')
            if ip:
                if ip in self._used():
                    self._err('Conflict', f'IP {ip} in use')
            else:
                net = ipaddress.ip_network(sub['cidr'])
                for n in range(self.first_ip[subnet_id], 250):
                    if str(net[n]) not in self._used():
                        ip = str(net[n])
                        break
            out.append({'subnet_id': subnet_id, 'ip_address': ip})
        return out

    def _new_port(self, p):
        net = self._need(self.networks, p.get('network_id'), 'Network')
        port = {
            'id': str(uuid.uuid4()), 'name': p.get('name', ''),
            'network_id': net['id'],
            'mac_address': 'fa:16:3e:00:00:%02x' % next(self.macs),
            'fixed_ips': self._allocate(net['id'], p.get('fixed_ips')),
            'device_id': p.get('device_id', ''),
            'device_owner': p.get('device_owner', ''),
            'admin_state_up': p.get('admin_state_up', True),
            'status': 'DOWN', 'allowed_address_pairs': [],
            'security_group_ids': p.get('security_group_ids', []),
            'qos_policy_id': None, 'vnic_type': 'normal'}
        self.ports[port['id']] = port
        return port

    def _bind(self, port, server):
        port['device_id'] = server['id']
        port['device_owner'] = port['device_owner'] or 'compute:box'
        port['status'] = 'ACTIVE' if port['admin_state_up'] else 'DOWN'
        server['port_ids'].append(port['id'])

    # -- methods

    def handle(self, method, params):
        with self.lock:
            self.calls.append(method)
            fn = getattr(self, 'm_' + method.replace('.', '_'), None)
            if fn is None:
                self._err('BadRequest', f'unknown method {method}')
            return fn(params)

    def m_network_get(self, p):
        return self._by_id_or_name(self.networks, p['id'], 'Network')

    def m_subnet_get(self, p):
        return self._by_id_or_name(self.subnets, p['id'], 'Subnet')

    def m_network_list(self, p):
        return list(self.networks.values())

    def m_subnet_list(self, p):
        return list(self.subnets.values())

    def m_port_create(self, p):
        return self._new_port(p)

    def m_port_get(self, p):
        return self._need(self.ports, p['id'], 'Port')

    def m_port_list(self, p):
        return [x for x in self.ports.values()
                if all(x.get(k) == v for k, v in p.items())]

    def m_port_update(self, p):
        port = self._need(self.ports, p['id'], 'Port')
        if 'allowed_address_pairs' in p:
            port['allowed_address_pairs'] = [
                {'ip_address': a['ip_address'],
                 'mac_address': a.get('mac_address', port['mac_address'])}
                for a in p['allowed_address_pairs']]
        if 'admin_state_up' in p:
            port['admin_state_up'] = p['admin_state_up']
            port['status'] = ('ACTIVE' if p['admin_state_up'] and
                              port['device_id'] else 'DOWN')
        if 'fixed_ips' in p:
            # Addresses already on the port stay; entries without one get a
            # fresh address on their subnet.
            kept = [f for f in p['fixed_ips'] if f.get('ip_address')]
            if any(f not in port['fixed_ips'] for f in kept):
                self._err('BadRequest', 'cannot add a given address')
            fresh = [f for f in p['fixed_ips'] if not f.get('ip_address')]
            port['fixed_ips'] = kept + (
                self._allocate(port['network_id'], fresh) if fresh else [])
        if 'name' in p:
            port['name'] = p['name']
        return port

    def m_port_delete(self, p):
        port = self.ports.pop(p['id'], None)
        if port and port['device_id'] in self.servers:
            self.servers[port['device_id']]['port_ids'].remove(port['id'])
        return None

    def m_server_create(self, p):
        if p.get('flavor_id') == 'broken':
            self._err('Internal', 'no such flavor')
        server = {'id': str(uuid.uuid4()), 'name': p['name'],
                  'status': 'BUILD', 'image_id': p['image_id'],
                  'flavor_id': p['flavor_id'], 'lb_network_ip': None,
                  'port_ids': [], 'availability_zone': 'box', 'fault': None,
                  'gets': 0, 'created': [],
                  'files': {k: base64.b64decode(v)
                            for k, v in p['config_drive_files'].items()},
                  'user_data': p['user_data'],
                  'requested_zone': p['availability_zone']}
        for net_id in p['network_ids']:
            port = self._new_port({'network_id': net_id})
            server['created'].append(port['id'])
            self._bind(port, server)
            if server['lb_network_ip'] is None:
                server['lb_network_ip'] = port['fixed_ips'][0]['ip_address']
        for port_id in p['port_ids']:
            self._bind(self._need(self.ports, port_id, 'Port'), server)
        self.servers[server['id']] = server
        return self._public(server)

    @staticmethod
    def _public(server):
        return {k: v for k, v in server.items()
                if k not in ('gets', 'created', 'files', 'user_data',
                             'requested_zone')}

    def m_server_get(self, p):
        server = self._need(self.servers, p['id'], 'Server')
        server['gets'] += 1
        if server['gets'] >= 2 and server['status'] == 'BUILD':
            server['status'] = 'ACTIVE'
        return self._public(server)

    def m_server_list(self, p):
        return [self._public(s) for s in self.servers.values()]

    def m_server_delete(self, p):
        server = self._need(self.servers, p['id'], 'Server')
        for port_id in server['port_ids']:
            port = self.ports.get(port_id)
            if port is None:
                continue
            if port_id in server['created']:
                del self.ports[port_id]
            else:
                port['device_id'] = ''
                port['status'] = 'DOWN'
        del self.servers[p['id']]
        return None

    def m_server_attach_port(self, p):
        server = self._need(self.servers, p['server_id'], 'Server')
        port = self._need(self.ports, p['port_id'], 'Port')
        if port['device_id']:
            # Nova's answer for a port in use, by this server or another.
            self._err('Conflict', f"port {port['id']} in use")
        self._bind(port, server)
        return port

    def m_server_detach_port(self, p):
        server = self._need(self.servers, p['server_id'], 'Server')
        port = self._need(self.ports, p['port_id'], 'Port')
        if port['id'] in server['port_ids']:
            server['port_ids'].remove(port['id'])
        port['device_id'] = ''
        port['status'] = 'DOWN'
        return None


class CloudFault(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def serve(fake, path):
    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            req = json.loads(self.rfile.readline())
            try:
                res = {'result': fake.handle(req['method'],
                                             req.get('params') or {})}
            except CloudFault as e:
                res = {'error': {'type': e.kind, 'message': str(e)}}
            self.wfile.write(json.dumps(res).encode() + b'\n')

    server = socketserver.ThreadingUnixStreamServer(path, Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# ------------------------------------------------------------------ the test

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


class Box:
    """What the checks share: the double, the drivers, Octavia's modules."""


def expect(exc_types, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc_types:
        return
    except Exception as e:
        raise AssertionError(f'{fn.__name__}: {type(e).__name__}: {e}, '
                             f'wanted {exc_types}') from e
    raise AssertionError(f'{fn.__name__} raised nothing, wanted {exc_types}')


def load(box):
    from oslo_config import cfg
    from oslo_log import log as oslo_log
    from octavia.common import config  # noqa: F401 (registers the options)
    from octavia.common import constants, data_models, exceptions, utils
    from octavia.controller.worker.v2.tasks import compute_tasks
    from octavia.controller.worker.v2.tasks import network_tasks
    from octavia.network import base as net_base
    from octavia.network import data_models as n_models

    conf = cfg.CONF
    # As octavia.common.service.prepare_service: the templaters read
    # oslo.log's options (debug).
    oslo_log.register_options(conf)
    conf([], project='octavia', default_config_files=[])
    conf.set_override('compute_driver', 'octavia_box_compute',
                      group='controller_worker')
    conf.set_override('network_driver', 'octavia_box_network',
                      group='controller_worker')
    conf.set_override('amp_boot_network_list', [MGMT_NET],
                      group='controller_worker')
    conf.set_override('amp_active_wait_sec', 0, group='controller_worker')
    conf.set_override('retry_interval', 0, group='networking')
    box.conf = conf
    box.constants, box.dm, box.exc = constants, data_models, exceptions
    box.utils, box.nb, box.nm = utils, net_base, n_models
    box.compute_tasks, box.network_tasks = compute_tasks, network_tasks
    # As Octavia loads them: the API and network tasks through
    # utils.get_network_driver(), the compute tasks in their constructor.
    box.net = utils.get_network_driver()
    box.compute = compute_tasks.ComputeWait().compute
    assert type(box.net).__name__ == 'BoxNetworkDriver', type(box.net)
    assert type(box.compute).__name__ == 'BoxComputeDriver'
    assert type(network_tasks.GetSubnetFromVIP().network_driver) is \
        type(box.net)


def make_lb(box, vip, amphorae=()):
    lb = box.dm.LoadBalancer(id=str(uuid.uuid4()), project_id='p1',
                             vip=vip, amphorae=list(amphorae))
    if hasattr(lb, 'additional_vips') and lb.additional_vips is None:
        lb.additional_vips = []
    vip.load_balancer = lb
    vip.load_balancer_id = lb.id
    return lb


@check
def api_lookups(box):
    """The API validates the VIP network/subnet and picks a subnet."""
    net = box.net.get_network(TENANT_NET)
    assert net.id == TENANT_NET and net.subnets == [TENANT_SUBNET], net
    assert net.port_security_enabled is True and net.mtu == 1450
    sub = box.net.get_subnet(TENANT_SUBNET)
    assert (sub.cidr, sub.gateway_ip, sub.ip_version, sub.network_id) == (
        '10.99.0.0/24', '10.99.0.1', 4, TENANT_NET), sub
    assert sub.host_routes[0].nexthop == '10.99.0.2'
    avail = box.net.get_network_ip_availability(net)
    assert box.utils.subnet_ip_availability(avail, TENANT_SUBNET, 3) is True
    assert box.net.get_network_by_name('lb-mgmt-net').id == MGMT_NET
    assert box.net.get_subnet_by_name(MGMT_SUBNET).cidr == '172.31.0.0/24'
    expect(box.nb.NetworkNotFound, box.net.get_network, 'nope')
    expect(box.nb.SubnetNotFound, box.net.get_subnet, 'nope')
    expect(box.nb.PortNotFound, box.net.get_port, 'nope')
    expect(box.nb.PortNotFound, box.net.get_port_by_name, 'nope')
    # validate.security_group_exists and qos_policy_exists turn these into
    # InvalidSubresource; qos_extension_enabled refuses QoS outright.
    expect(box.nb.SecurityGroupNotFound, box.net.get_security_group_by_id,
           'sg')
    expect(box.nb.QosPolicyNotFound, box.net.get_qos_policy, 'q')
    assert box.net.qos_enabled() is False
    assert box.net.get_security_group('lb-x') is None
    assert box.net.sec_grp_enabled is False
    box.compute.validate_flavor('any')
    box.compute.validate_availability_zone('any')


@check
def api_create_vip_port(box):
    """The amphora provider driver's create_vip_port, as the API calls it
    on a load balancer POST, with an additional VIP."""
    from octavia.api.drivers.amphora_driver.v2 import driver as amp_driver
    # Its constructor sets up RPC and the certificate key, which this
    # method does not use.
    provider = amp_driver.AmphoraProviderDriver.__new__(
        amp_driver.AmphoraProviderDriver)
    lb_id = str(uuid.uuid4())
    vip, extra = provider.create_vip_port(
        lb_id, 'p1',
        {'vip_network_id': MEMBER_NET, 'vip_subnet_id': MEMBER_SUBNET},
        [{'subnet_id': MEMBER_SUBNET2}])
    assert vip['vip_address'] == '10.97.0.10', vip
    assert vip['vip_subnet_id'] == MEMBER_SUBNET and vip['vip_port_id']
    assert [(a['subnet_id'], a['ip_address']) for a in extra] == [
        (MEMBER_SUBNET2, '10.96.0.10')], extra
    port = box.fake.ports[vip['vip_port_id']]
    assert port['device_id'] == 'lb-' + lb_id, port
    assert len(port['fixed_ips']) == 2
    # Taken: a Conflict for the user (HTTP 409) in 19, a DriverError in 16.
    from octavia_lib.api.drivers import exceptions as lib_exc
    taken = tuple(getattr(lib_exc, n) for n in ('Conflict', 'DriverError')
                  if hasattr(lib_exc, n))
    expect(taken, provider.create_vip_port, str(uuid.uuid4()), 'p1',
           {'vip_network_id': MEMBER_NET, 'vip_subnet_id': MEMBER_SUBNET,
            'vip_address': '10.97.0.10'}, [])
    box.net.deallocate_vip(box.dm.Vip(port_id=vip['vip_port_id']))
    assert vip['vip_port_id'] not in box.fake.ports


@check
def create_flow(box):
    """allocate_vip, build, get_amphora, update_vip_sg, plug_aap_port,
    get_network_configs: the load balancer create."""
    vip = box.dm.Vip(subnet_id=TENANT_SUBNET, network_id=TENANT_NET)
    lb = make_lb(box, vip)
    new_vip, extra = box.net.allocate_vip(lb)
    assert extra == [], extra
    assert new_vip.ip_address == '10.99.0.100', new_vip.ip_address
    assert new_vip.subnet_id == TENANT_SUBNET and new_vip.octavia_owned
    assert new_vip.network_id == TENANT_NET and new_vip.load_balancer_id
    vport = box.fake.ports[new_vip.port_id]
    assert vport['admin_state_up'] is False
    assert vport['device_owner'] == 'Octavia', vport
    # Again with the VIP kept (the failover's AllocateVIP): same port.
    lb.vip = new_vip
    again, _ = box.net.allocate_vip(lb)
    assert again.port_id == new_vip.port_id
    # An address in use is the user's conflict (HTTP 409 from the API).
    other = make_lb(box, box.dm.Vip(subnet_id=TENANT_SUBNET,
                                    network_id=TENANT_NET,
                                    ip_address='10.99.0.100'))
    expect(box.nb.VIPInUseException, box.net.allocate_vip, other)
    box.lb, box.vip = lb, new_vip

    # ComputeCreate as the worker runs it (config drive, port_ids=...).
    amp_id = str(uuid.uuid4())
    create = box.compute_tasks.ComputeCreate()
    compute_id = create.execute(
        amp_id, None,
        config_drive_files={'/etc/octavia/certs/server.pem': b'\x00PEM\xff',
                            '/etc/octavia/certs/client_ca.pem': 'CA'},
        availability_zone={'compute_zone': 'box-az'})
    server = box.fake.servers[compute_id]
    assert server['files']['/etc/octavia/certs/server.pem'] == b'\x00PEM\xff'
    assert server['files']['/etc/octavia/certs/client_ca.pem'] == b'CA'
    agent_conf = server['files']['/etc/octavia/amphora-agent.conf'].decode()
    assert amp_id in agent_conf, agent_conf
    assert '/etc/rsyslog.d/10-rsyslog.conf' in server['files']
    assert server['requested_zone'] == 'box-az', server['requested_zone']
    assert server['name'] == 'amphora-' + amp_id

    # ComputeWait: BUILD raises the retry exception, then ACTIVE.
    wait = box.compute_tasks.ComputeWait()
    expect(box.exc.ComputeWaitTimeoutException, wait.execute, compute_id,
           amp_id, None)
    amp_dict = wait.execute(compute_id, amp_id, None)
    assert amp_dict['status'] == 'ACTIVE', amp_dict
    assert amp_dict['lb_network_ip'] == '172.31.0.10', amp_dict
    assert amp_dict['compute_id'] == compute_id
    assert amp_dict['cached_zone'] == 'box'
    assert amp_dict['image_id'] and 'compute_flavor' in amp_dict
    assert box.compute.status(compute_id) == box.constants.UP

    assert box.net.update_vip_sg(lb, new_vip) is None
    box.net.update_aap_port_sg(lb, None, new_vip)
    box.net.update_vip(lb)
    box.net.update_vip(lb, for_delete=True)

    amp = box.dm.Amphora(id=amp_id, compute_id=compute_id,
                         lb_network_ip=amp_dict['lb_network_ip'],
                         status=box.constants.AMPHORA_ALLOCATED)
    subnet = box.net.get_subnet(new_vip.subnet_id)
    got = box.net.plug_aap_port(lb, new_vip, amp, subnet)
    assert got.vrrp_ip == '10.99.0.101', got.vrrp_ip
    assert got.ha_ip == '10.99.0.100' and got.ha_port_id == new_vip.port_id
    vrrp = box.fake.ports[got.vrrp_port_id]
    assert vrrp['device_id'] == compute_id
    assert vrrp['name'] == 'octavia-lb-vrrp-' + amp_id
    assert [a['ip_address'] for a in vrrp['allowed_address_pairs']] == [
        '10.99.0.100']
    # A second plug (revert and retry) reuses the port.
    assert box.net.plug_aap_port(lb, new_vip, amp,
                                 subnet).vrrp_port_id == got.vrrp_port_id
    for key in ('vrrp_ip', 'ha_ip', 'vrrp_port_id', 'ha_port_id'):
        setattr(amp, key, getattr(got, key))
    lb.amphorae = [amp]
    box.amp = amp

    configs = box.net.get_network_configs(lb)
    one = box.net.get_network_configs(lb, amphora=amp)
    assert list(configs) == [amp.id] == list(one)
    cfg = configs[amp.id]
    # What the REST driver's post_vip_plug and post_network_plug read.
    port = cfg.vrrp_port.to_dict(recurse=True)
    assert port['network']['mtu'] == 1450 and port['mac_address']
    sub = cfg.vip_subnet.to_dict(recurse=True)
    assert sub['cidr'] == '10.99.0.0/24' and sub['gateway_ip'] == '10.99.0.1'
    assert sub['host_routes'] == [{'nexthop': '10.99.0.2',
                                   'destination': '10.98.0.0/16'}], sub
    assert cfg.ha_port.id == new_vip.port_id
    assert cfg.vrrp_subnet.id == cfg.ha_subnet.id == TENANT_SUBNET
    assert cfg.vip_port.fixed_ips[0].ip_address == '10.99.0.100'
    assert getattr(cfg, 'additional_vip_data', []) == []
    cfg.to_dict(recurse=True)  # stored in taskflow's results in 19


@check
def member_update(box):
    """Batch member update: the amphora's interfaces, then its configs."""
    ifaces = box.net.get_plugged_networks(box.amp.compute_id)
    nets = sorted(i.network_id for i in ifaces)
    assert nets == [MGMT_NET, TENANT_NET], nets
    for i in ifaces:
        assert i.port_id and i.compute_id == box.amp.compute_id
        assert i.fixed_ips[0].subnet_id and i.fixed_ips[0].ip_address
    assert box.net.get_plugged_networks('no-such-server') == []
    port = box.net.get_port_by_net_id_device_id(TENANT_NET,
                                                box.amp.compute_id)
    assert port.id == box.amp.vrrp_port_id
    assert box.net.get_port_by_name('octavia-lb-vrrp-' + box.amp.id).id == \
        box.amp.vrrp_port_id
    assert box.net.get_network_configs(box.lb)[box.amp.id].vrrp_port


@check
def failover_flow(box):
    """The health manager's amphora failover: VIP base port, build with it,
    wait, admin down and delete of the old ports, delete of the old server.
    """
    old = box.amp
    new_amp_id = str(uuid.uuid4())
    vip = {'network_id': TENANT_NET, 'subnet_id': TENANT_SUBNET,
           'ip_address': box.vip.ip_address, 'sg_ids': [],
           'qos_policy_id': None, 'port_id': box.vip.port_id}
    base_port = box.network_tasks.CreateVIPBasePort().execute(
        vip, None, new_amp_id, [])
    prefix = box.constants.AMP_BASE_PORT_PREFIX
    assert base_port['name'] == prefix + new_amp_id, base_port
    fake_port = box.fake.ports[base_port['id']]
    assert [a['ip_address'] for a in fake_port['allowed_address_pairs']] == [
        box.vip.ip_address]
    assert base_port['fixed_ips'][0]['ip_address'], base_port

    ports = [box.nm.Port(**{k: base_port[k] for k in ('id', 'network_id')})]
    compute_id = box.compute_tasks.ComputeCreate().execute(
        new_amp_id, None, ports=ports, availability_zone=None)
    server = box.fake.servers[compute_id]
    assert base_port['id'] in server['port_ids'], server['port_ids']
    box.compute.get_amphora(compute_id)
    amp, fault = box.compute.get_amphora(compute_id, MGMT_NET)
    assert amp.status == 'ACTIVE' and fault is None
    assert amp.lb_network_ip == '172.31.0.11', amp.lb_network_ip
    ifaces = box.net.get_plugged_networks(compute_id)
    assert {i.port_id for i in ifaces} >= {base_port['id']}

    # AttachPort of the flow: already attached at boot is not an error.
    attach = box.compute_tasks.AttachPort()
    attach.execute({'compute_id': compute_id}, {'id': base_port['id']})
    iface = box.compute.attach_network_or_port(compute_id,
                                               port_id=base_port['id'])
    assert iface.port_id == base_port['id'] and iface.network_id == TENANT_NET
    # A port of another server is in use.
    expect(box.exc.ComputePortInUseException,
           box.compute.attach_network_or_port, compute_id,
           port_id=old.vrrp_port_id)
    expect(box.exc.NotFound, box.compute.attach_network_or_port,
           'no-such-server', port_id=base_port['id'])
    try:
        box.compute.attach_network_or_port(compute_id, port_id='no-port')
        raise AssertionError('attached a missing port')
    except box.exc.NotFound as e:
        assert 'Port' in str(e), str(e)
    # Given a network only, Nova makes the port.
    iface = box.compute.attach_network_or_port(compute_id,
                                               network_id=MEMBER_NET)
    assert iface.network_id == MEMBER_NET and iface.fixed_ips[0].ip_address
    box.compute.detach_port(compute_id, iface.port_id)
    assert box.fake.ports[iface.port_id]['device_id'] == ''
    box.net.delete_port(iface.port_id)

    # The old amphora's VRRP port goes admin down, then is deleted.
    box.network_tasks.AdminDownPort().execute(old.vrrp_port_id)
    assert box.net.get_port(old.vrrp_port_id).status == 'DOWN'
    box.network_tasks.AdminDownPort().execute('no-such-port')
    box.compute.delete(old.compute_id)
    assert old.compute_id not in box.fake.servers
    box.compute.delete(old.compute_id)  # already gone: not an error
    box.network_tasks.DeletePort().execute(old.vrrp_port_id)
    assert old.vrrp_port_id not in box.fake.ports
    box.net.delete_port(old.vrrp_port_id)  # already gone
    expect(box.exc.ComputeGetException, box.compute.get_amphora,
           old.compute_id)

    # Member-network plug: a new port hot-plugged by plug_port, as
    # HandleNetworkDelta does, then unplug_network and its detach wait.
    amp = box.dm.Amphora(id=new_amp_id, compute_id=compute_id,
                         lb_network_ip=amp.lb_network_ip)
    port = box.net.create_port(MEMBER_NET, name='octavia-lb-member-x',
                               vnic_type='normal')
    plugged = box.net.plug_port(amp, port)
    assert plugged.port_id == port.id and plugged.compute_id == compute_id
    assert box.net.plug_port(amp, port).port_id == port.id  # again
    gone = box.dm.Amphora(id='x', compute_id='no-such-server')
    expect(box.nb.AmphoraNotFound, box.net.plug_port, gone, port)
    expect(box.nb.PortNotFound, box.net.plug_port, amp,
           box.nm.Port(id='no-port', network_id=MEMBER_NET))
    nets = {i.network_id for i in box.net.get_plugged_networks(compute_id)}
    assert nets == {MGMT_NET, TENANT_NET, MEMBER_NET}, nets
    box.net.unplug_network(compute_id, MEMBER_NET)
    nets = {i.network_id for i in box.net.get_plugged_networks(compute_id)}
    assert nets == {MGMT_NET, TENANT_NET}, nets
    expect(box.nb.NetworkNotFound, box.net.unplug_network, 'no-server',
           MEMBER_NET)
    box.net.delete_port(port.id)

    # The new amphora takes the VIP as its VRRP port carries it already.
    got = box.net.plug_aap_port(box.lb, box.vip, amp,
                                box.net.get_subnet(TENANT_SUBNET))
    assert got.vrrp_port_id == base_port['id'], got.vrrp_port_id
    for key in ('vrrp_ip', 'ha_ip', 'vrrp_port_id', 'ha_port_id'):
        setattr(amp, key, getattr(got, key))
    amp.status = box.constants.AMPHORA_ALLOCATED
    box.lb.amphorae = [amp]
    box.amp = amp
    box.net.failover_preparation(amp)
    assert list(box.net.get_network_configs(box.lb)) == [amp.id]


@check
def fixed_ips_and_groups(box):
    port = box.net.create_port(TENANT_NET, name='extra')
    more = box.net.plug_fixed_ip(port.id, TENANT_SUBNET)
    assert len(more.fixed_ips) == 2, more.fixed_ips
    less = box.net.unplug_fixed_ip(port.id, TENANT_SUBNET)
    assert less.fixed_ips == [], less.fixed_ips
    expect(box.nb.PortNotFound, box.net.plug_fixed_ip, 'nope', TENANT_SUBNET)
    box.net.set_port_admin_state_up(port.id, True)
    expect(box.nb.PortNotFound, box.net.set_port_admin_state_up, 'nope',
           False)
    box.net.apply_qos_on_port('q', port.id)
    box.net.delete_port(port.id)
    group = box.compute.create_server_group('octavia-lb-x', 'anti-affinity')
    assert group.id
    box.compute.delete_server_group(group.id)
    box.compute_tasks.NovaServerGroupDelete().execute(group.id)
    expect(box.nb.CreatePortException, box.net.create_port, 'nope')
    expect(box.exc.ComputeBuildException, box.compute.build,
           amphora_flavor='broken')


@check
def delete_flow(box):
    """Load balancer delete: unplug_vip, compute delete, deallocate_vip."""
    amp = box.amp
    box.net.unplug_vip(box.lb, box.vip)
    ifaces = box.net.get_plugged_networks(amp.compute_id)
    assert [i.network_id for i in ifaces] == [MGMT_NET], ifaces
    # The VRRP port (the failover's base port, named like the ones
    # plug_aap_port makes) is deleted with the VIP unplug.
    assert amp.vrrp_port_id not in box.fake.ports
    box.compute.delete(amp.compute_id)
    box.net.deallocate_vip(box.vip)
    assert box.vip.port_id not in box.fake.ports
    assert amp.vrrp_port_id not in box.fake.ports
    assert box.fake.ports == {}, box.fake.ports
    assert box.fake.servers == {}
    box.net.deallocate_vip(box.vip)  # twice: nothing left, no error
    expect(box.nb.PluggedVIPNotFound, box.net.unplug_vip, box.lb,
           box.dm.Vip(subnet_id='nope'))


@check
def cloud_unreachable(box):
    """Without an answer every call fails with the exception its caller
    handles, never hangs (the socket has a timeout)."""
    saved = os.environ['AAT_CLOUD_SOCKET']
    os.environ['AAT_CLOUD_SOCKET'] = saved + '.missing'
    try:
        expect(box.nb.NetworkException, box.net.get_port, 'x')
        expect(box.nb.AllocateVIPException, box.net.allocate_vip,
               make_lb(box, box.dm.Vip(subnet_id=TENANT_SUBNET,
                                       network_id=TENANT_NET)))
        expect(box.exc.ComputeBuildException, box.compute.build)
        expect(box.exc.ComputeGetException, box.compute.get_amphora, 'x')
        expect(box.exc.ComputeStatusException, box.compute.status, 'x')
        expect(box.exc.ComputeDeleteException, box.compute.delete, 'x')
        box.compute.detach_port('x', 'y')
        assert box.net.get_plugged_networks('x') == []
    finally:
        os.environ['AAT_CLOUD_SOCKET'] = saved


def main():
    # The drivers' own warnings, for the failures the checks provoke.
    logging.basicConfig(level=logging.WARNING,
                        format='    log %(levelname)s %(name)s: %(message)s')
    box = Box()
    box.fake = FakeCloud()
    with tempfile.TemporaryDirectory(prefix='aatb-drivers-') as tmp:
        path = os.path.join(tmp, 'cloud.sock')
        server = serve(box.fake, path)
        os.environ['AAT_CLOUD_SOCKET'] = path
        load(box)
        import octavia
        version = getattr(octavia, '__version__', None)
        if version is None:
            from importlib import metadata
            version = metadata.version('octavia')
        failed = 0
        for fn in CHECKS:
            try:
                fn(box)
                print(f'ok   {fn.__name__}')
            except Exception:
                failed += 1
                print(f'FAIL {fn.__name__}')
                traceback.print_exc()
        server.shutdown()
        server.server_close()
    calls = sorted(set(box.fake.calls))
    print(f'octavia {version}: {len(CHECKS) - failed}/{len(CHECKS)} checks '
          f'passed; cloud methods used: {", ".join(calls)}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
