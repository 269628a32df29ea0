"""Octavia network driver of the box: Neutron's part, forwarded to the cloud.

It does what Octavia's allowed-address-pairs driver does with Neutron, in the
same order and with the same return values, minus security groups, QoS and
DNS, which the box does not have. Written against Octavia 16 and 19; the
data model constructors differ between releases, so every model is built
through model(), which drops the arguments the installed Octavia lacks.
"""

import inspect
import ipaddress
import logging
import time

from octavia.common import constants
from octavia.common import data_models
from octavia.common import exceptions
from octavia.network import base
from octavia.network import data_models as n_models

from octavia_box import cloud

LOG = logging.getLogger(__name__)

# Octavia's owner mark on ports it made; deallocate_vip deletes only those.
OCTAVIA_OWNER = getattr(constants, 'OCTAVIA_OWNER', 'Octavia')
VRRP_PORT_PREFIX = 'octavia-lb-vrrp-'
# unplug_network waits for the detached ports to leave the server, as the
# Neutron driver does; the cloud detaches synchronously, so this is a bound.
DETACH_WAIT = 10.0


def model(cls, **kwargs):
    """cls(**kwargs) without the keywords this Octavia's cls does not take."""
    accepted = inspect.signature(cls.__init__).parameters
    return cls(**{k: v for k, v in kwargs.items() if k in accepted})


def fixed_ip_model(fixed_ip):
    return n_models.FixedIP(subnet_id=fixed_ip.get('subnet_id'),
                            ip_address=fixed_ip.get('ip_address'))


def port_model(port):
    return model(
        n_models.Port,
        id=port['id'], name=port.get('name'),
        device_id=port.get('device_id') or '',
        device_owner=port.get('device_owner') or '',
        mac_address=port.get('mac_address'),
        network_id=port.get('network_id'),
        status=port.get('status'),
        project_id=port.get('project_id'),
        admin_state_up=port.get('admin_state_up', True),
        fixed_ips=[fixed_ip_model(f) for f in port.get('fixed_ips') or []],
        qos_policy_id=port.get('qos_policy_id'),
        security_group_ids=port.get('security_group_ids') or [],
        vnic_type=port.get('vnic_type') or 'normal')


def network_model(net):
    # port_security_enabled: the amphora provider driver refuses a VIP
    # network without it (create_vip_port); the box's bridges have no
    # filtering, which is what port security off would mean, but saying
    # True is what lets Octavia use the network at all.
    return model(
        n_models.Network,
        id=net['id'], name=net.get('name'),
        subnets=list(net.get('subnets') or []),
        project_id=net.get('project_id'),
        admin_state_up=True, mtu=net.get('mtu', 1500),
        provider_network_type=net.get('provider_network_type', 'flat'),
        provider_physical_network=None, provider_segmentation_id=None,
        router_external=False, port_security_enabled=True)


def subnet_model(sub):
    routes = [n_models.HostRoute(nexthop=r.get('nexthop'),
                                 destination=r.get('destination'))
              for r in sub.get('host_routes') or []]
    return model(
        n_models.Subnet,
        id=sub['id'], name=sub.get('name'),
        network_id=sub.get('network_id'), project_id=sub.get('project_id'),
        gateway_ip=sub.get('gateway_ip'), cidr=sub.get('cidr'),
        ip_version=sub.get('ip_version', 4), host_routes=routes)


def interface_model(compute_id, port):
    """A port attached to a server, as Octavia's Interface."""
    return model(
        n_models.Interface,
        compute_id=compute_id, network_id=port.get('network_id'),
        port_id=port['id'],
        fixed_ips=[fixed_ip_model(f) for f in port.get('fixed_ips') or []],
        vnic_type=port.get('vnic_type') or 'normal')


class VIPAddressTaken(base.VIPInUseException, base.AllocateVIPException):
    """The VIP address asked for is in use. Octavia 19 catches
    VIPInUseException (HTTP 409 to the user); 16 knows only
    AllocateVIPException for any allocation failure: one class for both."""


def _not_found(exc_class, what, ident, err):
    return exc_class(f'{what} not found ({what} id: {ident}): {err.message}')


class BoxNetworkDriver(base.AbstractNetworkDriver):
    # Read as attributes by Octavia's tasks (GetVIPSecurityGroupID,
    # failover_preparation): the box has no security groups and no DNS.
    sec_grp_enabled = False
    dns_integration_enabled = False

    # ---- lookups: NotFound becomes the *NotFound the callers catch, any
    # other failure NetworkException, as the Neutron driver does.

    def _get(self, method, ident, not_found, what, convert):
        try:
            return convert(cloud.call(method, {'id': ident}))
        except cloud.NotFound as e:
            raise _not_found(not_found, what, ident, e) from e
        except cloud.CloudError as e:
            raise base.NetworkException(
                f'Error retrieving {what} {ident}: {e.message}') from e

    def get_network(self, network_id, context=None):
        return self._get('network.get', network_id, base.NetworkNotFound,
                         'network', network_model)

    def get_subnet(self, subnet_id, context=None):
        return self._get('subnet.get', subnet_id, base.SubnetNotFound,
                         'subnet', subnet_model)

    def get_port(self, port_id, context=None):
        return self._get('port.get', port_id, base.PortNotFound, 'port',
                         port_model)

    # The cloud's network.get and subnet.get take a name as well as an id.
    def get_network_by_name(self, network_name):
        return self.get_network(network_name)

    def get_subnet_by_name(self, subnet_name):
        return self.get_subnet(subnet_name)

    def _first_port(self, **filters):
        try:
            ports = cloud.call('port.list', filters)
        except cloud.CloudError as e:
            raise base.NetworkException(
                f'Error listing ports {filters}: {e.message}') from e
        if not ports:
            raise base.PortNotFound(f'No port matches {filters}')
        return port_model(ports[0])

    def get_port_by_name(self, port_name):
        return self._first_port(name=port_name)

    def get_port_by_net_id_device_id(self, network_id, device_id):
        return self._first_port(network_id=network_id, device_id=device_id)

    def get_plugged_networks(self, compute_id):
        # A server's interfaces are the ports whose device_id is the server,
        # as with Neutron. Failures give an empty list, as upstream.
        try:
            ports = cloud.call('port.list', {'device_id': compute_id})
        except cloud.CloudError as e:
            LOG.debug('Listing ports of %s failed: %s', compute_id, e)
            ports = []
        return [interface_model(compute_id, p) for p in ports]

    def get_network_ip_availability(self, network):
        """Totals per subnet, counted from the ports: the API uses them to
        pick the VIP subnet when only a network is given."""
        try:
            ports = cloud.call('port.list', {'network_id': network.id})
            subnets = [cloud.call('subnet.get', {'id': s})
                       for s in network.subnets or []]
        except cloud.NotFound as e:
            raise _not_found(base.NetworkNotFound, 'network', network.id,
                             e) from e
        except cloud.CloudError as e:
            raise base.NetworkException(e.message) from e
        per_subnet = []
        for sub in subnets:
            used = sum(1 for p in ports for f in p.get('fixed_ips') or []
                       if f.get('subnet_id') == sub['id'])
            size = ipaddress.ip_network(sub['cidr'], strict=False)
            per_subnet.append({
                'subnet_id': sub['id'], 'subnet_name': sub.get('name'),
                'cidr': sub['cidr'], 'ip_version': sub.get('ip_version', 4),
                # network and broadcast addresses are not allocatable
                'total_ips': max(size.num_addresses - 2, 0),
                'used_ips': used})
        return model(
            n_models.Network_IP_Availability,
            network_id=network.id, network_name=network.name,
            total_ips=sum(s['total_ips'] for s in per_subnet),
            used_ips=sum(s['used_ips'] for s in per_subnet),
            subnet_ip_availability=per_subnet)

    # ---- ports

    def create_port(self, network_id, name=None, fixed_ips=(),
                    secondary_ips=(), security_group_ids=(),
                    admin_state_up=True, qos_policy_id=None,
                    vnic_type='normal'):
        params = {'network_id': network_id, 'admin_state_up': admin_state_up,
                  'device_owner': OCTAVIA_OWNER}
        if name:
            params['name'] = name
        if fixed_ips:
            params['fixed_ips'] = [dict(f) for f in fixed_ips]
        try:
            port = cloud.call('port.create', params)
        except cloud.CloudError as e:
            raise base.CreatePortException(
                f'Error creating a port on network {network_id}: '
                f'{e.message}') from e
        if secondary_ips:
            # The failover flow's VIP base port carries the VIP as an
            # allowed address pair from its creation on.
            try:
                port = self._set_aap(port['id'], secondary_ips)
            except cloud.CloudError as e:
                self._delete_quietly(port['id'])
                raise base.CreatePortException(
                    f'Error adding allowed address pairs to port '
                    f'{port["id"]}: {e.message}') from e
        return port_model(port)

    def _set_aap(self, port_id, ip_addresses):
        pairs = [{'ip_address': ip} for ip in ip_addresses]
        return cloud.call('port.update', {'id': port_id,
                                          'allowed_address_pairs': pairs})

    def _delete_quietly(self, port_id):
        try:
            cloud.call('port.delete', {'id': port_id})
        except cloud.CloudError as e:
            LOG.warning('Could not delete port %s: %s', port_id, e)

    def delete_port(self, port_id):
        try:
            cloud.call('port.delete', {'id': port_id})
        except cloud.NotFound:
            LOG.debug('Port %s already deleted.', port_id)
        except cloud.CloudError as e:
            raise exceptions.NetworkServiceError(net_error=e.message) from e

    def set_port_admin_state_up(self, port_id, state):
        try:
            cloud.call('port.update', {'id': port_id,
                                       'admin_state_up': bool(state)})
        except cloud.NotFound as e:
            raise base.PortNotFound(e.message) from e
        except cloud.CloudError as e:
            raise exceptions.NetworkServiceError(net_error=e.message) from e

    def admin_down_port(self, port_id):
        # Called by DeletePort (passive failure) in 16 and 19 although no
        # upstream driver defines it; doing what its name says is harmless.
        self.set_port_admin_state_up(port_id, False)

    def _update_fixed_ips(self, port_id, fixed_ips):
        try:
            port = cloud.call('port.update', {'id': port_id,
                                              'fixed_ips': fixed_ips})
        except cloud.NotFound as e:
            raise base.PortNotFound(e.message) from e
        except cloud.CloudError as e:
            raise base.NetworkException(e.message) from e
        return port_model(port)

    def plug_fixed_ip(self, port_id, subnet_id, ip_address=None):
        # Used when a member subnet is on a network already plugged; the box
        # has one subnet per network, so scenarios do not get here.
        port = self.get_port(port_id)
        wanted = [{'subnet_id': f.subnet_id, 'ip_address': f.ip_address}
                  for f in port.fixed_ips]
        new = {'subnet_id': subnet_id}
        if ip_address:
            new['ip_address'] = ip_address
        return self._update_fixed_ips(port_id, wanted + [new])

    def unplug_fixed_ip(self, port_id, subnet_id):
        port = self.get_port(port_id)
        wanted = [{'subnet_id': f.subnet_id, 'ip_address': f.ip_address}
                  for f in port.fixed_ips if f.subnet_id != subnet_id]
        return self._update_fixed_ips(port_id, wanted)

    def plug_port(self, amphora, port):
        """Hot-plug a port into the amphora (Nova's interface attach)."""
        try:
            attached = cloud.call('server.attach_port',
                                  {'server_id': amphora.compute_id,
                                   'port_id': port.id})
        except cloud.NotFound as e:
            # The callers tell a missing amphora from other failures; ask
            # which of the two is missing rather than parse the message.
            try:
                cloud.call('port.get', {'id': port.id})
            except cloud.CloudError:
                raise base.PortNotFound(e.message) from e
            raise base.AmphoraNotFound(e.message) from e
        except cloud.Conflict:
            # Already attached: what Nova's Conflict means for the Neutron
            # driver too.
            LOG.info('Port %s is already plugged, skipping', port.id)
            return model(n_models.Interface, compute_id=amphora.compute_id,
                         network_id=port.network_id, port_id=port.id,
                         fixed_ips=port.fixed_ips)
        except cloud.CloudError as e:
            raise base.PlugNetworkException(
                f'Error plugging amphora (compute_id: {amphora.compute_id}) '
                f'into port {port.id}: {e.message}') from e
        return interface_model(amphora.compute_id, attached)

    def unplug_network(self, compute_id, network_id):
        interfaces = self.get_plugged_networks(compute_id)
        if not interfaces:
            raise base.NetworkNotFound(
                f'Amphora with compute id {compute_id} does not have any '
                f'plugged networks')
        removed = set()
        for iface in interfaces:
            if iface.network_id != network_id:
                continue
            try:
                cloud.call('server.detach_port', {'server_id': compute_id,
                                                  'port_id': iface.port_id})
            except cloud.NotFound as e:
                raise base.AmphoraNotFound(e.message) from e
            except cloud.CloudError as e:
                raise base.UnplugNetworkException(e.message) from e
            removed.add(iface.port_id)
        deadline = time.monotonic() + DETACH_WAIT
        while removed and time.monotonic() < deadline:
            plugged = {i.port_id
                       for i in self.get_plugged_networks(compute_id)}
            if not plugged & removed:
                return
            time.sleep(0.2)
        if removed:
            LOG.warning('Ports %s still attached to %s after %ss', removed,
                        compute_id, DETACH_WAIT)

    # ---- the VIP

    def allocate_vip(self, load_balancer):
        """Reserve the VIP: a port on the VIP network that no amphora uses,
        its fixed IPs the VIP and the additional VIPs. Returns
        (Vip, [AdditionalVip])."""
        vip = load_balancer.vip
        if vip.port_id:
            existing = self._reuse_vip_port(load_balancer)
            if existing is not None:
                return existing
        fixed_ips = []
        for wanted in [vip] + list(getattr(load_balancer, 'additional_vips',
                                           None) or []):
            entry = {}
            if wanted.subnet_id:
                entry['subnet_id'] = wanted.subnet_id
            if wanted.ip_address:
                entry['ip_address'] = wanted.ip_address
            if entry:
                fixed_ips.append(entry)
        params = {'name': 'octavia-lb-' + load_balancer.id,
                  'network_id': vip.network_id,
                  # Neutron's VIP port is down: the address lives on the
                  # amphorae' VRRP ports as an allowed address pair.
                  'admin_state_up': False,
                  'device_id': 'lb-' + load_balancer.id,
                  'device_owner': OCTAVIA_OWNER}
        if fixed_ips:
            params['fixed_ips'] = fixed_ips
        try:
            port = cloud.call('port.create', params)
        except cloud.Conflict as e:
            raise VIPAddressTaken(e.message, orig_msg=e.message,
                                  orig_code=409) from e
        except cloud.CloudError as e:
            code = 400 if isinstance(e, cloud.BadRequest) else None
            raise base.AllocateVIPException(
                f'Error creating the VIP port on network {vip.network_id}: '
                f'{e.message}', orig_msg=e.message, orig_code=code) from e
        return self._port_to_vip(port_model(port), load_balancer,
                                 octavia_owned=True)

    def _reuse_vip_port(self, load_balancer):
        """The VIP port given by the user, or kept over a failover: use it
        when it still carries the VIP, else rebuild it if it is Octavia's."""
        vip = load_balancer.vip
        try:
            port = self.get_port(vip.port_id)
        except base.PortNotFound:
            LOG.warning('VIP port %s is missing. Rebuilding.', vip.port_id)
            return None
        except base.NetworkException as e:
            raise base.AllocateVIPException(str(e)) from e
        has_ip = any(f.subnet_id == vip.subnet_id and
                     (not vip.ip_address or
                      ipaddress.ip_address(f.ip_address) ==
                      ipaddress.ip_address(vip.ip_address))
                     for f in port.fixed_ips)
        if port.network_id == vip.network_id and has_ip:
            return self._port_to_vip(port, load_balancer)
        if getattr(vip, 'octavia_owned', False):
            self.delete_port(vip.port_id)
            return None
        raise base.AllocateVIPException(
            f'VIP port {port.id} does not carry the VIP and is not '
            f"Octavia's; it will not be rebuilt.")

    def _port_to_vip(self, port, load_balancer, octavia_owned=False):
        primary = None
        others = []
        for fixed_ip in port.fixed_ips:
            if primary is None and (
                    fixed_ip.subnet_id == load_balancer.vip.subnet_id):
                primary = fixed_ip
            else:
                others.append(fixed_ip)
        vip = model(
            data_models.Vip,
            ip_address=primary.ip_address if primary else None,
            subnet_id=primary.subnet_id if primary else None,
            network_id=port.network_id, port_id=port.id,
            load_balancer=load_balancer, load_balancer_id=load_balancer.id,
            octavia_owned=octavia_owned,
            sg_ids=getattr(load_balancer.vip, 'sg_ids', None))
        additional_cls = getattr(data_models, 'AdditionalVip', None)
        if additional_cls is None:
            return vip, []
        additional = [model(additional_cls, ip_address=f.ip_address,
                            subnet_id=f.subnet_id, network_id=port.network_id,
                            port_id=port.id, load_balancer=load_balancer,
                            load_balancer_id=load_balancer.id)
                      for f in others]
        return vip, additional

    def deallocate_vip(self, vip):
        """Delete the amphorae' VRRP ports (left over after a failover) and
        the VIP port if Octavia made it."""
        try:
            amphorae = vip.load_balancer.amphorae
        except AttributeError:
            amphorae = []
        for amp in amphorae or []:
            if amp.vrrp_port_id:
                self.delete_port(amp.vrrp_port_id)
        try:
            port = self.get_port(vip.port_id)
        except base.PortNotFound:
            LOG.warning('VIP port %s is already gone.', vip.port_id)
            return
        if port.device_owner != OCTAVIA_OWNER:
            LOG.info("Port %s is not Octavia's, not deleting it.", port.id)
            return
        try:
            cloud.call('port.delete', {'id': port.id})
        except cloud.CloudError as e:
            raise base.DeallocateVIPException(
                f'Error deleting VIP port {port.id}: {e.message}') from e

    def update_vip(self, load_balancer, for_delete=False):
        # Neutron's driver updates the VIP security group rules here.
        return None

    def update_vip_sg(self, load_balancer, vip):
        # Returns the id of the VIP security group: there is none.
        return None

    def update_aap_port_sg(self, load_balancer, amphora, vip):
        return None

    def _vrrp_interface(self, amphora, network_id):
        """The amphora's interface on the VIP network, not its management
        one (both can be on one network in some deployments)."""
        for iface in self.get_plugged_networks(amphora.compute_id):
            if iface.network_id != network_id:
                continue
            if any(f.ip_address == amphora.lb_network_ip
                   for f in iface.fixed_ips or []):
                continue
            return iface
        return None

    def plug_aap_port(self, load_balancer, vip, amphora, subnet):
        """Give the amphora a VRRP port on the VIP network carrying the VIP
        as an allowed address pair; returns the amphora's VRRP fields."""
        iface = self._vrrp_interface(amphora, subnet.network_id)
        if iface is None:
            iface = self._plug_vrrp_port(amphora, subnet)
        addresses = [vip.ip_address] + [
            a.ip_address
            for a in getattr(load_balancer, 'additional_vips', None) or []]
        try:
            self._set_aap(iface.port_id, addresses)
        except cloud.NotFound as e:
            raise base.PortNotFound(e.message) from e
        except cloud.CloudError as e:
            raise base.PlugVIPException(
                f'Error adding allowed address pairs {addresses} to port '
                f'{iface.port_id}: {e.message}') from e
        vrrp_ip = None
        for f in iface.fixed_ips or []:
            if (f.subnet_id == subnet.id and
                    f.ip_address != amphora.lb_network_ip):
                vrrp_ip = f.ip_address
                break
        return data_models.Amphora(
            id=amphora.id, compute_id=amphora.compute_id, vrrp_ip=vrrp_ip,
            ha_ip=vip.ip_address, vrrp_port_id=iface.port_id,
            ha_port_id=vip.port_id)

    def _plug_vrrp_port(self, amphora, subnet):
        try:
            port = self.create_port(
                subnet.network_id, name=VRRP_PORT_PREFIX + amphora.id,
                fixed_ips=[{'subnet_id': subnet.id}])
        except base.CreatePortException as e:
            raise base.PlugVIPException(str(e)) from e
        try:
            return self.plug_port(amphora, port)
        except base.NetworkException as e:
            self._delete_quietly(port.id)
            raise base.PlugVIPException(
                f'Error plugging amphora (compute_id: {amphora.compute_id}) '
                f'into VIP network {subnet.network_id}: {e}') from e

    def unplug_aap_port(self, vip, amphora, subnet):
        iface = self._vrrp_interface(amphora, subnet.network_id)
        if iface is None:
            LOG.debug('Amphora %s has no VRRP interface, skipped',
                      amphora.compute_id)
            return
        try:
            self.unplug_network(amphora.compute_id, subnet.network_id)
        except base.NetworkException as e:
            LOG.warning('Unplugging %s: %s', amphora.compute_id, e)
        try:
            self._set_aap(iface.port_id, [])
        except cloud.CloudError as e:
            raise base.UnplugVIPException(
                f'Could not clear allowed address pairs from port '
                f'{iface.port_id}: {e.message}') from e
        # The VRRP port is deleted only if plug_aap_port made it.
        try:
            port = self.get_port(amphora.vrrp_port_id)
        except base.NetworkException:
            return
        if (port.name or '').startswith(VRRP_PORT_PREFIX):
            self.delete_port(port.id)

    def unplug_vip(self, load_balancer, vip):
        try:
            subnet = self.get_subnet(vip.subnet_id)
        except base.SubnetNotFound as e:
            raise base.PluggedVIPNotFound(
                f"Can't unplug vip because vip subnet {vip.subnet_id} "
                f"was not found") from e
        for amp in load_balancer.amphorae:
            if amp.status == constants.AMPHORA_ALLOCATED:
                self.unplug_aap_port(vip, amp, subnet)

    def get_network_configs(self, loadbalancer, amphora=None):
        """{amphora id: AmphoraNetworkConfig}: the ports and subnets the
        amphora driver sends to the agent in plug/vip and plug/network."""
        vip_subnet = self.get_subnet(loadbalancer.vip.subnet_id)
        vip_port = self.get_port(loadbalancer.vip.port_id)
        configs = {}
        if amphora is not None:
            self._amp_config(amphora, configs, vip_subnet, vip_port,
                             loadbalancer)
            return configs
        for amp in loadbalancer.amphorae:
            # One broken amphora must not hide the others' configs; the
            # failover will deal with it (as upstream).
            try:
                self._amp_config(amp, configs, vip_subnet, vip_port,
                                 loadbalancer)
            except Exception as e:  # logged and skipped, as upstream
                LOG.warning('Network configs of amphora %s: %s', amp.id, e)
        return configs

    def _amp_config(self, amp, configs, vip_subnet, vip_port, loadbalancer):
        if amp.status == constants.DELETED:
            return
        vrrp_port = self.get_port(amp.vrrp_port_id)
        vrrp_subnet = self.get_subnet(vrrp_port.get_subnet_id(amp.vrrp_ip))
        vrrp_port.network = self.get_network(vrrp_port.network_id)
        ha_port = self.get_port(amp.ha_port_id)
        ha_subnet = self.get_subnet(ha_port.get_subnet_id(amp.ha_ip))
        extra = []
        data_cls = getattr(n_models, 'AdditionalVipData', None)
        if data_cls is not None:
            for add_vip in getattr(loadbalancer, 'additional_vips',
                                   None) or []:
                extra.append(data_cls(
                    ip_address=add_vip.ip_address,
                    subnet=self.get_subnet(add_vip.subnet_id)))
        configs[amp.id] = model(
            n_models.AmphoraNetworkConfig, amphora=amp,
            vip_subnet=vip_subnet, vip_port=vip_port,
            vrrp_subnet=vrrp_subnet, vrrp_port=vrrp_port,
            ha_subnet=ha_subnet, ha_port=ha_port,
            additional_vip_data=extra)

    def failover_preparation(self, amphora):
        # Neutron's driver clears DNS names here; the box has no DNS.
        return None

    # ---- what the box does not have

    def get_security_group(self, sg_name):
        # "None if not enabled", per the base class.
        return None

    def get_security_group_by_id(self, sg_id, context=None):
        # A VIP security group named by a user cannot exist here.
        raise base.SecurityGroupNotFound(f'Security group {sg_id} not found '
                                         f'(the box has none)')

    def get_qos_policy(self, qos_policy_id, context=None):
        raise base.QosPolicyNotFound(f'QoS policy {qos_policy_id} not found '
                                     f'(the box has none)')

    def qos_enabled(self):
        return False

    def apply_qos_on_port(self, qos_id, port_id):
        return None
