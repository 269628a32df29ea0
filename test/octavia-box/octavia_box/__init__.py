"""Octavia in a box: Nova and Neutron replaced by one "cloud" process.

The compute and network drivers here are thin translators from Octavia's
driver API onto the JSON-lines protocol of PROTOCOL.md (one directory up).
They keep no state: Octavia's API, worker, health manager and housekeeping
each load their own copy, and all of them must see the same ports and
servers, so everything lives in the cloud process (AAT_CLOUD_SOCKET).
"""
