"""SMIv2 MIB sources, the single source of truth for msoctl's SNMP OIDs.

Shipped as package data so that an installed wheel finds them:
``importlib.resources.files("mibs")``.
"""

from importlib.resources import files
from importlib.resources.abc import Traversable


def directory() -> Traversable:
    return files(__name__)
