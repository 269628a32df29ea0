"""Octavia compute driver of the box: Nova's part, forwarded to the cloud.

A server is an amphora container booted by the cloud (PROTOCOL.md); its
status, management address and ports come from the cloud on every call.
Returns what Octavia's Nova driver returns, so the flows cannot tell.
"""

import base64
import logging
import types
import uuid

from octavia.common import constants
from octavia.common import data_models
from octavia.common import exceptions
from octavia.compute import compute_base

from octavia_box import cloud
from octavia_box import network

LOG = logging.getLogger(__name__)


def _file_bytes(content):
    """A config drive file as bytes: Octavia passes str (the templated
    agent and rsyslog configs) or bytes (certificates), the base class also
    allows a file-like object."""
    if hasattr(content, 'read'):
        content = content.read()
    if isinstance(content, str):
        content = content.encode('utf-8')
    return bytes(content)


def _zone_name(availability_zone):
    # Octavia 16 passes the zone's name; 19 the availability zone's metadata
    # dict, whose compute_zone is that name.
    if isinstance(availability_zone, dict):
        return availability_zone.get(
            getattr(constants, 'COMPUTE_ZONE', 'compute_zone'))
    return availability_zone


# The id the box's one image (the CI image) has, whatever tag is asked for.
BOX_IMAGE_ID = 'aa7b0000-0000-4000-8000-000000000021'


class BoxComputeDriver(compute_base.ComputeBase):

    def build(self, name='amphora_name', amphora_flavor=None,
              image_tag=None, image_owner=None, key_name=None,
              sec_groups=None, network_ids=None, port_ids=None,
              config_drive_files=None, user_data=None, server_group_id=None,
              availability_zone=None):
        """Ask the cloud for a server; returns its id while it boots.

        port_ids is passed by the flows (ComputeCreate: the VIP base port on
        failover) although ComputeBase does not declare it. Key, security
        groups and server group mean nothing in the box.
        """
        files = {path: base64.b64encode(_file_bytes(content)).decode('ascii')
                 for path, content in (config_drive_files or {}).items()}
        if isinstance(user_data, bytes):
            user_data = user_data.decode('utf-8')
        elif user_data is not None and hasattr(user_data, 'read'):
            user_data = _file_bytes(user_data).decode('utf-8')
        params = {
            'name': name,
            # There is one image, the CI's: the tag resolves to its id, as
            # Nova's driver asks Glance (Octavia 16's amphora API insists
            # on a UUID there).
            'image_id': BOX_IMAGE_ID,
            'flavor_id': amphora_flavor,
            'network_ids': list(network_ids or []),
            'port_ids': list(port_ids or []),
            'config_drive_files': files,
            'user_data': user_data,
            'availability_zone': _zone_name(availability_zone),
        }
        try:
            server = cloud.call('server.create', params)
        except cloud.CloudError as e:
            LOG.error('The cloud failed to build %s: %s', name, e)
            raise exceptions.ComputeBuildException(fault=e.message) from e
        return server['id']

    def get_amphora(self, compute_id, management_network_id=None):
        """(Amphora, fault): what ComputeWait polls until ACTIVE or ERROR.

        The cloud computes lb_network_ip (the server's management address),
        so management_network_id is not needed here.
        """
        try:
            server = cloud.call('server.get', {'id': compute_id})
        except cloud.CloudError as e:
            # The Nova driver raises this after its retries; ComputeWait's
            # own retry loop calls again.
            LOG.warning('Getting server %s failed: %s', compute_id, e)
            raise exceptions.ComputeGetException() from e
        amp = data_models.Amphora(
            compute_id=server['id'],
            status=server.get('status'),
            lb_network_ip=server.get('lb_network_ip'),
            cached_zone=server.get('availability_zone'),
            image_id=server.get('image_id'),
            compute_flavor=server.get('flavor_id'))
        return amp, server.get('fault')

    def status(self, compute_id):
        try:
            amp, _fault = self.get_amphora(compute_id)
        except exceptions.ComputeGetException as e:
            raise exceptions.ComputeStatusException() from e
        return constants.UP if amp.status == 'ACTIVE' else constants.DOWN

    def delete(self, compute_id):
        try:
            cloud.call('server.delete', {'id': compute_id})
        except cloud.NotFound:
            LOG.warning('Server %s not found. Assuming already deleted.',
                        compute_id)
        except cloud.CloudError as e:
            raise exceptions.ComputeDeleteException(
                compute_msg=e.message) from e

    def attach_network_or_port(self, compute_id, network_id=None,
                               ip_address=None, port_id=None):
        """Hot-plug a port (AttachPort task) or a new port on a network;
        returns the attached port as an Interface."""
        if port_id is None:
            port_id = self._port_for(compute_id, network_id, ip_address)
        try:
            port = cloud.call('server.attach_port',
                              {'server_id': compute_id, 'port_id': port_id})
        except cloud.NotFound as e:
            # Which one is missing decides the caller's exception (the
            # Neutron driver's plug_port looks for 'Instance' in it).
            if self._port_or_none(port_id) is None:
                raise exceptions.NotFound(resource='Port', id=port_id) from e
            raise exceptions.NotFound(resource='Instance',
                                      id=compute_id) from e
        except cloud.Conflict as e:
            # Nova answers Conflict for a port already in use; fine when it
            # is this server that uses it.
            port = self._port_or_none(port_id)
            if port is not None and port.get('device_id') == compute_id:
                return network.interface_model(compute_id, port)
            raise exceptions.ComputePortInUseException(port=port_id) from e
        except cloud.CloudError as e:
            raise exceptions.ComputeUnknownException(exc=e.message) from e
        return network.interface_model(compute_id, port)

    def _port_for(self, compute_id, network_id, ip_address):
        # Nova makes the port itself when given only a network.
        params = {'network_id': network_id, 'device_owner': 'compute:box'}
        if ip_address:
            params['fixed_ips'] = [{'ip_address': ip_address}]
        try:
            return cloud.call('port.create', params)['id']
        except cloud.NotFound as e:
            raise exceptions.NotFound(resource='Network',
                                      id=network_id) from e
        except cloud.CloudError as e:
            raise exceptions.ComputeUnknownException(exc=e.message) from e

    @staticmethod
    def _port_or_none(port_id):
        try:
            return cloud.call('port.get', {'id': port_id})
        except cloud.CloudError:
            return None

    def detach_port(self, compute_id, port_id):
        # Errors are logged and skipped, as in the Nova driver: its callers
        # (reverts, unplug_network) go on regardless.
        try:
            cloud.call('server.detach_port',
                       {'server_id': compute_id, 'port_id': port_id})
        except cloud.CloudError as e:
            LOG.error('Error detaching port %s from %s: %s. Skipping.',
                      port_id, compute_id, e)

    def create_server_group(self, name, policy):
        # Anti-affinity has no meaning on one machine; the flows only keep
        # the id and hand it back to build() and delete_server_group().
        return types.SimpleNamespace(id=str(uuid.uuid4()), name=name,
                                     policy=policy)

    def delete_server_group(self, server_group_id):
        return None

    def validate_flavor(self, flavor_id):
        # Any flavor: the container has no size.
        return None

    def validate_availability_zone(self, availability_zone):
        return None
