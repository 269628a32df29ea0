"""Octavia's own health daemon building its heartbeat (bench/heartbeat).

Usage: heartbeat_octavia.py BASE_PATH AMPHORA_ID KEY ROUNDS
Prints JSON: median build+encode milliseconds, datagram bytes, member count.
"""
import json
import statistics
import sys
import time

from oslo_config import cfg

from octavia.common import config as octavia_config  # registers the options
from octavia.amphorae.backends.health_daemon import health_daemon
from octavia.amphorae.backends.health_daemon import status_message

base, amp, key, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cfg.CONF([], project='octavia', default_config_files=[])
cfg.CONF.set_override('base_path', base, group='haproxy_amphora')
cfg.CONF.set_override('amphora_id', amp, group='amphora_agent')
cfg.CONF.set_override('heartbeat_key', key, group='health_manager')
times, size, members = [], 0, 0
for _ in range(rounds):
    start = time.perf_counter()
    msg = health_daemon.build_stats_message()
    envelope = status_message.wrap_envelope(msg, key)
    times.append((time.perf_counter() - start) * 1000)
    size = len(envelope)
    members = sum(len(p.get('members', {})) for p in msg['pools'].values())
print(json.dumps({'ms': statistics.median(times), 'bytes': size, 'members': members}))
