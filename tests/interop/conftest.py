"""Interop: the project against third-party peers (netconfd, net-snmp, smilint, pyang, libyang,
promtool and Prometheus, PostgreSQL).

Every test collected under this folder is marked ``interop``."""

from __future__ import annotations

import pytest


def pytest_itemcollected(item: pytest.Item) -> None:
    item.add_marker("interop")
