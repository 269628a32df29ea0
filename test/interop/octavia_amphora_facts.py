"""What Octavia's own amphora agent reports for this machine in GET /1.0/details.

Prints one JSON line: cpu_count as Octavia's agent computes it and /proc/meminfo
as its AmphoraInfo parses it (kB). Only test code: it calls Octavia, it copies
nothing from it.
"""
import json
import os

from octavia.amphorae.backends.agent.api_server import amphora_info

info = amphora_info.AmphoraInfo(None)
print(json.dumps({'cpu_count': os.cpu_count(), 'meminfo': info._get_meminfo()}))
