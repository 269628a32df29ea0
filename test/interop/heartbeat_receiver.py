"""Octavia's own heartbeat receiver (UDPStatusGetter) for the interop tests.

Usage: heartbeat_receiver.py PORT KEY
Binds 127.0.0.1:PORT the way the health manager does and prints one JSON line
per datagram: {"ok": true, "message": {...}} when Octavia's code accepts it,
{"ok": false, "error": "..."} when it rejects it, each with "at", the time it
arrived (ms since the epoch): the reader may be busy when the line comes.
"""
import json
import sys
import time

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
        at = obj.pop('recv_time', time.time())
        print(json.dumps({'ok': True, 'at': round(at * 1000), 'message': obj}), flush=True)
    except TimeoutError:
        continue
    except Exception as e:  # the receiver's own verdict on this datagram
        if 'timed out' in str(e):
            continue
        print(json.dumps({'ok': False, 'at': round(time.time() * 1000),
                          'error': '%s: %s' % (type(e).__name__, e)}), flush=True)
