"""The switch's YANG module in tests: instance documents that each break one ``must`` rule
(or none), and a libyang context that keeps libyang's own error items.

The same documents go to netconfd, libyang and the emulator's validators, so that the
three can be held to one outcome.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.paths import YANG
from tests.support.peers import require_module

MODULE_NAME = "msoctl-congestion"
NAMESPACE = "urn:megascaleout:yang:msoctl-congestion"
YANG_DIRECTORY = YANG
MODULE = YANG_DIRECTORY / f"{MODULE_NAME}.yang"
NETCONF_BASE = "urn:ietf:params:xml:ns:netconf:base:1.0"
PORT = "Ethernet1"
PORT_PATH = f"/switch/ports/port[name='{PORT}']"
QUEUE_PATH = f"{PORT_PATH}/queues/queue[queue-id='3']"


# --- instance documents ------------------------------------------------------------


@dataclass(frozen=True)
class SwitchConfig:
    """One port, one queue: every leaf a ``must`` rule looks at. ``None`` leaves it out."""

    fast_cnp_enabled: bool | None = True
    cnp_priority: int | None = 6
    lossless_priorities: tuple[int, ...] = (3,)
    xoff_bytes: int | None = 24_000_000
    xon_bytes: int | None = 20_000
    min_threshold: int | None = 1_000_000
    max_threshold: int | None = 30_000_000
    enable_ecn: bool | None = True
    queue_fast_cnp_enabled: bool | None = True


def _leaf(parent: ET.Element, name: str, value: object) -> None:
    if value is None:
        return
    text = str(value).lower() if isinstance(value, bool) else str(value)
    ET.SubElement(parent, name).text = text


def switch_element(config: SwitchConfig, *, counters: bool = False) -> ET.Element:
    """``<switch>`` of the module; with ``counters``, operational state as well."""
    switch = ET.Element("switch", xmlns=NAMESPACE)
    fast_cnp = ET.SubElement(switch, "fast-cnp")
    _leaf(fast_cnp, "enabled", config.fast_cnp_enabled)
    _leaf(fast_cnp, "cnp-dscp", 48)
    _leaf(fast_cnp, "cnp-priority", config.cnp_priority)
    _leaf(fast_cnp, "min-interval-microseconds", 50)
    _leaf(fast_cnp, "flow-table-size", 16384)
    _leaf(fast_cnp, "flow-aging-seconds", 10)
    if counters:
        buffer = ET.SubElement(switch, "buffer")
        _leaf(buffer, "total-bytes", 8 * 1024**3)
        _leaf(buffer, "lossless-pool-bytes", 6 * 1024**3)
    port = ET.SubElement(ET.SubElement(switch, "ports"), "port")
    _leaf(port, "name", PORT)
    _leaf(port, "speed", "400G")
    _leaf(port, "cable-length-meters", 30_000)
    for priority in config.lossless_priorities:
        _leaf(port, "lossless-priorities", priority)
    pfc = ET.SubElement(port, "pfc")
    _leaf(pfc, "xoff-bytes", config.xoff_bytes)
    _leaf(pfc, "xon-bytes", config.xon_bytes)
    watchdog = ET.SubElement(pfc, "watchdog")
    _leaf(watchdog, "enabled", True)
    _leaf(watchdog, "detection-time-ms", 200)
    _leaf(watchdog, "restoration-time-ms", 400)
    _leaf(watchdog, "action", "drop")
    queue = ET.SubElement(ET.SubElement(port, "queues"), "queue")
    _leaf(queue, "queue-id", 3)
    wred = ET.SubElement(queue, "wred")
    _leaf(wred, "min-threshold", config.min_threshold)
    _leaf(wred, "max-threshold", config.max_threshold)
    _leaf(wred, "max-drop-probability-percent", 20)
    _leaf(wred, "enable-ecn", config.enable_ecn)
    _leaf(ET.SubElement(queue, "fast-cnp"), "enabled", config.queue_fast_cnp_enabled)
    if counters:
        _counters(queue)
        _counters(port)
    return switch


def _counters(parent: ET.Element) -> None:
    counters = ET.SubElement(parent, "counters")
    for name, value in (("ecn-marked-packets", 1200), ("switch-generated-cnps", 340),
                        ("pfc-pause-frames-sent", 7), ("pfc-pause-frames-received", 2),
                        ("dropped-packets", 0), ("buffer-watermark-bytes", 18_000_000)):
        _leaf(counters, name, value)


def document(config: SwitchConfig) -> str:
    return ET.tostring(switch_element(config), encoding="unicode")


@dataclass(frozen=True)
class Case:
    name: str
    config: SwitchConfig
    app_tag: str | None = None  # None: the document is valid
    path: str | None = None  # the offending node, without module prefixes


VALID = SwitchConfig()
CASES = (
    Case("valid", VALID),
    Case("valid-fast-cnp-off", SwitchConfig(fast_cnp_enabled=False, queue_fast_cnp_enabled=False)),
    # With fast CNP off the CNP priority may be lossless: nothing is generated.
    Case("valid-cnp-priority-lossless-fast-cnp-off",
         SwitchConfig(fast_cnp_enabled=False, queue_fast_cnp_enabled=False,
                      lossless_priorities=(3, 6))),
    Case("valid-lossy-port-no-headroom",
         SwitchConfig(lossless_priorities=(), xoff_bytes=None, xon_bytes=None)),
    Case("valid-ecn-off-no-thresholds",
         SwitchConfig(enable_ecn=False, min_threshold=None, max_threshold=None)),
    Case("valid-defaults-only",
         SwitchConfig(fast_cnp_enabled=None, cnp_priority=None, enable_ecn=None,
                      queue_fast_cnp_enabled=None)),
    Case("wred-min-equal-max", SwitchConfig(min_threshold=30_000_000),
         "wred-min-not-below-max", f"{QUEUE_PATH}/wred/min-threshold"),
    Case("wred-min-above-max", SwitchConfig(min_threshold=40_000_000),
         "wred-min-not-below-max", f"{QUEUE_PATH}/wred/min-threshold"),
    Case("pfc-xon-above-xoff", SwitchConfig(xon_bytes=30_000_000),
         "pfc-xon-not-below-xoff", f"{PORT_PATH}/pfc/xon-bytes"),
    Case("queue-fast-cnp-without-global", SwitchConfig(fast_cnp_enabled=False),
         "fast-cnp-disabled-globally", f"{QUEUE_PATH}/fast-cnp/enabled"),
    # The global switch left at its default (false) counts as off.
    Case("queue-fast-cnp-global-default", SwitchConfig(fast_cnp_enabled=None),
         "fast-cnp-disabled-globally", f"{QUEUE_PATH}/fast-cnp/enabled"),
    Case("cnp-priority-lossless", SwitchConfig(lossless_priorities=(3, 6)),
         "cnp-priority-lossless", f"{PORT_PATH}/lossless-priorities[.='6']"),
    # cnp-priority left at its default, 6.
    Case("cnp-priority-default-lossless",
         SwitchConfig(cnp_priority=None, lossless_priorities=(3, 6)),
         "cnp-priority-lossless", f"{PORT_PATH}/lossless-priorities[.='6']"),
    Case("lossless-without-headroom", SwitchConfig(xoff_bytes=None, xon_bytes=None),
         "lossless-without-headroom", PORT_PATH),
    Case("ecn-without-min-threshold", SwitchConfig(min_threshold=None),
         "ecn-without-thresholds", f"{QUEUE_PATH}/wred/enable-ecn"),
)
INVALID_APP_TAGS = {case.app_tag for case in CASES if case.app_tag is not None}


def unprefixed(path: str) -> str:
    """``/msocc:switch/msocc:ports`` and ``/msoctl-congestion:switch/ports`` alike."""
    return re.sub(r"(?<=[/\[])[A-Za-z_][\w.-]*:", "", path)


# --- libyang -------------------------------------------------------------------------


@dataclass(frozen=True)
class YangError:
    message: str
    path: str | None
    app_tag: str | None


def _location(path: str) -> str:
    """libyang 2.1 words its error paths ``Data location "/a/b".``; the path itself."""
    quoted = re.fullmatch(r'(?:Data|Schema) location "(.*)"\.?', path)
    return quoted.group(1) if quoted else path


class Libyang:
    """A libyang context with the module loaded that keeps libyang's own error items."""

    def __init__(self, libyang: Any) -> None:
        from _libyang import ffi, lib  # the C API under the bindings

        # Errors carry the path of the offending node only with this set.
        lib.ly_set_log_clb(ffi.NULL, True)
        self._libyang = libyang
        self._ffi = ffi
        self._lib = lib
        self.context = libyang.Context(str(YANG_DIRECTORY))
        self.context.load_module(MODULE_NAME)
        # The bindings fold libyang's error items into one message and clear them, the
        # app-tag dropped; record them first.
        self._recorded: list[YangError] = []
        fold_errors = self.context.error

        def record_then_fold(message: str, *arguments: object) -> Exception:
            self._recorded = self._error_items()
            return fold_errors(message, *arguments)  # type: ignore[no-any-return]

        self.context.error = record_then_fold

    def _error_items(self) -> list[YangError]:
        ffi, lib = self._ffi, self._lib
        items: list[YangError] = []
        item = lib.ly_err_first(self.context.cdata)
        while item:
            items.append(YangError(
                message=ffi.string(item.msg).decode() if item.msg else "",
                path=_location(ffi.string(item.path).decode()) if item.path else None,
                app_tag=ffi.string(item.apptag).decode() if item.apptag else None,
            ))
            item = item.next
        return items

    def validate(self, document: str, *, state: bool = False) -> list[YangError]:
        """The errors of a data document (config only unless ``state``); [] when valid."""
        try:
            # validate_present: the documents hold this module's data and nothing of
            # ietf-yang-library, whose mandatory state nodes would otherwise be missing.
            tree = self.context.parse_data_mem(document, "xml", strict=True,
                                               no_state=not state, validate_present=True)
        except self._libyang.LibyangError as error:
            errors, self._recorded = self._recorded, []
            assert errors, f"libyang refused the document without an error item: {error}"
            return errors
        if tree is not None:
            tree.free()
        return []


@pytest.fixture(scope="module")
def libyang_context() -> Iterator[Libyang]:
    libyang = require_module(
        "libyang", how_to_install="`make test` run as root installs libyang2-dev and the "
                                  "`yang` extra (libyang==2.8.0)")
    checker = Libyang(libyang)
    try:
        yield checker
    finally:
        checker.context.destroy()


