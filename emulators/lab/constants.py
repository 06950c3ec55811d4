"""The names a running lab and its clients share: what the lab writes in its state
directory and what it calls the targets it serves.

A module of constants only, so that the lab's modules can share them without
importing each other, and so that a client (``msoctl lab status``, ``msoctl lab
fault``) can find a lab without importing the lab itself.
"""

PROTOCOL = "msoctl-lab-control/1"
DEADLINE_HEADER = "X-Msoctl-Deadline"
"""A request's deadline (seconds since the epoch): past it, the lab does nothing with the
request (its client has reported it as timed out)."""
"""The control endpoint's protocol name, in ``lab.json`` and in every answer."""
ENDPOINT_FILE = "lab.json"
"""In the state directory while the lab runs: where its control endpoint listens."""
SECRETS_DIR = "secrets"
"""The state directory's subdirectory (mode 0700) for secrets the lab generates."""
TOKEN_FILE = "lab-control.token"
"""In :data:`SECRETS_DIR`: the control endpoint's bearer token, new at every start."""
INVENTORY_FILE = "inventory.yaml"

JOURNAL_FILE = "journal.sqlite"
"""The journal the lab's inventory names (an SQLite file beside it)."""
"""In the state directory: the inventory of the lab's devices, written once they listen."""
SNMP_FACE = "snmp"
"""``<switch>/snmp`` names a switch's SNMP agent as a fault target."""
