"""Software models of every msoctl device, with their protocol servers.

Emulators import nothing from :mod:`msoctl` and no driver logic; they may read
the declarative spec tables in :mod:`drivers` (command sets, field tables).
"""

import warnings

# asyncssh (the emulated switches' NETCONF over SSH) names cryptography's DSA key types
# in its annotations when it is imported, and cryptography 51 warns at each: nine lines
# on the stderr of every command that loads the lab, which offers no DSA key. Only that
# warning, only from asyncssh, is silenced.
warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"asyncssh\.")
