"""Conformance: one suite that every implementation of an interface passes (OCS and I2C
transports, the NETCONF emulator and netconfd, the journal's stores, the collectors), and the
drivers against their emulators at the protocol seam.

Every test collected under this folder is marked ``conformance``."""

from __future__ import annotations

import pytest


def pytest_itemcollected(item: pytest.Item) -> None:
    item.add_marker("conformance")
