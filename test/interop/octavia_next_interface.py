"""The name Octavia's own agent gives the next member port it plugs
(Plug._netns_get_next_interface, 16 and later), run inside the amphora
namespace (`ip netns exec`): pyroute2's NetNS for the amphora namespace is
replaced with IPRoute in the namespace this runs in, since the release's root
filesystem has no /run/netns. Prints the name.
Only test code: it imports Octavia, it copies nothing from it.
"""
import pyroute2

from octavia.amphorae.backends.agent.api_server import plug

plug.pyroute2 = type('InThisNamespace', (), {'NetNS': staticmethod(lambda *a, **kw: pyroute2.IPRoute())})
print(plug.Plug(None)._netns_get_next_interface())
