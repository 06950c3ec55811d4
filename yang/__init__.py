"""YANG modules, the single source of truth for the switch's NETCONF data.

Shipped as package data so that an installed wheel finds them:
``importlib.resources.files("yang")``.
"""

from importlib.resources import files
from importlib.resources.abc import Traversable


def directory() -> Traversable:
    return files(__name__)
