"""The switch emulator's NETCONF protocol layer: framing, messages, the SSH server.

Datastores, edit-config and YANG validation (emulators/netconf/datastore.py,
edit.py, validation.py, yangdata.py) sit on top of it, as handlers registered
with :meth:`NetconfServer.handle`.
"""

from emulators.netconf.messages import RpcError, RpcErrors
from emulators.netconf.server import NetconfServer
from emulators.netconf.session import NetconfSession

__all__ = ["NetconfServer", "NetconfSession", "RpcError", "RpcErrors"]
