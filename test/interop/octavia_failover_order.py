"""The order in which Octavia's controller fails over an ACTIVE_STANDBY load
balancer's amphorae (ControllerWorker._get_amphorae_for_failover), run
against real agents.

argv[1]: JSON {"port", "client_cert", "server_ca", "vip", "amphorae":
[{"id", "lb_network_ip"}]}. The controller asks each amphora in turn for the
interface holding the VIP; the first one that does not hold it (or does not
answer) is failed over first. Prints the amphora ids in failover order, first
to fail over first, and how long the controller took.
Only test code: it imports Octavia, it copies nothing from it.
"""
import json
import sys
import time

from oslo_config import cfg

from octavia.common import config as octavia_config  # registers the options
from octavia.common import constants
from octavia.common import data_models as dm
from octavia.controller.worker.v2 import controller_worker

CONF = cfg.CONF
args = json.loads(sys.argv[1])
CONF([], project='octavia', default_config_files=[])
for name, value in {'client_cert': args['client_cert'], 'server_ca': args['server_ca'],
                    'bind_port': args['port'], 'failover_connection_max_retries': 2,
                    'failover_connection_retry_interval': 1}.items():
    CONF.set_override(name, value, group='haproxy_amphora')

amphorae = [dm.Amphora(id=a['id'], lb_network_ip=a['lb_network_ip'], status=constants.AMPHORA_ALLOCATED)
            for a in args['amphorae']]
lb = dm.LoadBalancer(id='lb', topology=constants.TOPOLOGY_ACTIVE_STANDBY,
                     vip=dm.Vip(ip_address=args['vip']), amphorae=amphorae)
started = time.monotonic()
order = controller_worker.ControllerWorker._get_amphorae_for_failover(lb)
print(json.dumps({'failover_first': [a[constants.ID] for a in reversed(order)],
                  'seconds': round(time.monotonic() - started, 2)}))
