"""What Octavia's own amphora agent reports for this machine in GET /1.0/details.

Prints one JSON line: cpu_count as Octavia's agent computes it and /proc/meminfo
as its AmphoraInfo parses it (kB); with an argument, that file stands for
/proc/meminfo. Only test code: it calls Octavia, it copies
nothing from it.
"""
import builtins
import json
import os
import sys

from octavia.amphorae.backends.agent.api_server import amphora_info

if len(sys.argv) > 1:
    # An amphora-sized /proc/meminfo (the one the agent under test sees).
    _open = builtins.open

    def _amphora_open(path, *args, **kwargs):
        return _open(sys.argv[1] if path == '/proc/meminfo' else path, *args, **kwargs)

    builtins.open = _amphora_open

info = amphora_info.AmphoraInfo(None)
print(json.dumps({'cpu_count': os.cpu_count(), 'meminfo': info._get_meminfo()}))
