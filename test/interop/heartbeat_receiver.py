"""Octavia's own heartbeat receiver (UDPStatusGetter) for the interop tests.

Usage: heartbeat_receiver.py PORT KEY
Binds 127.0.0.1:PORT the way the health manager does and prints one JSON line
per datagram: {"ok": true, "message": {...}} when Octavia's code accepts it,
{"ok": false, "error": "..."} when it rejects it.
"""
import json
import sys

from oslo_config import cfg

from octavia.common import config as octavia_config  # registers the options
from octavia.amphorae.drivers.health import heartbeat_udp

port, key = int(sys.argv[1]), sys.argv[2]
cfg.CONF([], project='octavia', default_config_files=[])
cfg.CONF.set_override('bind_ip', '127.0.0.1', group='health_manager')
cfg.CONF.set_override('bind_port', port, group='health_manager')
cfg.CONF.set_override('heartbeat_key', key, group='health_manager')
getter = heartbeat_udp.UDPStatusGetter()
print(json.dumps({'ready': True}), flush=True)
while True:
    try:
        obj, _src = getter.dorecv()
        obj.pop('recv_time', None)
        print(json.dumps({'ok': True, 'message': obj}), flush=True)
    except TimeoutError:
        continue
    except Exception as e:  # the receiver's own verdict on this datagram
        if 'timed out' in str(e):
            continue
        print(json.dumps({'ok': False, 'error': '%s: %s' % (type(e).__name__, e)}), flush=True)
