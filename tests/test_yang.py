"""The switch's YANG module, checked by real YANG tools.

- pyang ``--strict`` prints nothing on it;
- Debian's netconfd (yuma123) loads it, and enforces its ``must`` rules on
  instance documents given as a startup configuration;
- libyang (CESNET) enforces the same rules on the same documents, with the same
  error-app-tag and the same path, and takes the operational state.

Each ``must`` rule has one document that breaks it alone; valid documents show
that the rules do not refuse what they should let through.
"""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import yang
from tests.netconfd_peer import yuma_kept_out_of_home
from tests.peers import require_executable, require_module

MODULE_NAME = "msoctl-congestion"
NAMESPACE = "urn:megascaleout:yang:msoctl-congestion"
YANG_DIRECTORY = Path(__file__).resolve().parents[1] / "yang"
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


def test_every_must_rule_has_a_case() -> None:
    text = MODULE.read_text()
    assert set(re.findall(r'error-app-tag "([^"]+)"', text)) == INVALID_APP_TAGS
    assert text.count('must "') == len(INVALID_APP_TAGS)


def test_module_ships_as_package_data() -> None:
    shipped = yang.directory() / f"{MODULE_NAME}.yang"
    assert shipped.is_file()
    assert shipped.read_text() == MODULE.read_text()


# --- pyang ---------------------------------------------------------------------------


def test_pyang_strict_prints_nothing() -> None:
    pyang = Path(sys.executable).with_name("pyang")
    result = subprocess.run([str(pyang), "--strict", str(MODULE)],
                            capture_output=True, text=True, timeout=60, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_pyang_tree_has_the_openconfig_wred_names() -> None:
    pyang = Path(sys.executable).with_name("pyang")
    result = subprocess.run([str(pyang), "-f", "tree", str(MODULE)],
                            capture_output=True, text=True, timeout=60, check=True)
    for leaf in ("min-threshold", "max-threshold", "max-drop-probability-percent",
                 "enable-ecn"):
        assert re.search(rf"\+--rw {leaf}\?", result.stdout), leaf


# --- netconfd ------------------------------------------------------------------------


@dataclass(frozen=True)
class NetconfdRun:
    returncode: int
    output: str

    def errors(self) -> list[str]:
        return [line for line in self.output.splitlines() if line.startswith("Error")]

    def warnings(self) -> list[str]:
        return [line for line in self.output.splitlines() if line.startswith("Warning")]


Netconfd = Callable[..., NetconfdRun]


@pytest.fixture(scope="module")
def netconfd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Netconfd]:
    """Run netconfd in its validation mode: load the module (and a startup file), then exit."""
    program = require_executable("netconfd", debian_package="netconfd")
    home = tmp_path_factory.mktemp("netconfd-home")

    def run(*arguments: str) -> NetconfdRun:
        # A private HOME keeps its ~/.yuma files out of the user's; debug logging is what
        # prints a startup configuration's rpc-error with its app-tag and path.
        result = subprocess.run(
            [str(program), f"--module={MODULE}", "--validate-config-only",
             "--log-level=debug", *arguments],
            capture_output=True, text=True, timeout=60, check=False,
            env={"HOME": str(home), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            cwd=home,
        )
        return NetconfdRun(result.returncode, result.stdout + result.stderr)

    with yuma_kept_out_of_home(home):  # its transaction-id file in home, not in ~/.yuma
        yield run


def test_netconfd_loads_the_module(netconfd: Netconfd) -> None:
    run = netconfd("--no-startup")
    assert run.returncode == 0, run.output
    assert run.errors() == [], run.output
    # The one warning: no SIL (server instrumentation library) for the module, which a
    # server that keeps the data in its own datastores does not need.
    assert run.warnings() == [f"Warning: SIL code for module '{MODULE}' not found"], \
        run.output


def test_netconfd_refuses_a_broken_module(netconfd: Netconfd, tmp_path: Path) -> None:
    """The check above can fail: a module with an unknown type does not load."""
    broken = tmp_path / f"{MODULE_NAME}.yang"
    broken.write_text(MODULE.read_text().replace("type uint64;", "type uint64-typo;", 1))
    run = netconfd(f"--module={broken}", "--no-startup")
    assert run.returncode != 0
    assert any("could not be loaded" in line for line in run.errors()), run.output


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_netconfd_enforces_must_rules(netconfd: Netconfd, tmp_path: Path, case: Case) -> None:
    config = ET.Element("config", xmlns=NETCONF_BASE)
    config.append(switch_element(case.config))
    startup = tmp_path / "startup.xml"
    startup.write_text(ET.tostring(config, encoding="unicode"))
    run = netconfd(f"--startup={startup}")
    if case.app_tag is None:
        assert run.returncode == 0, run.output
        assert "rpc-error" not in run.output, run.output
        return
    assert run.returncode != 0, run.output
    app_tags = re.findall(r"app-tag:(\S+)", run.output)
    paths = re.findall(r"^\s*path:(\S+)", run.output, flags=re.MULTILINE)
    assert app_tags == [case.app_tag], run.output
    # netconfd reports a startup document as the config of a load-config rpc.
    assert [unprefixed(path).removeprefix("/rpc/load-config/config") for path in paths] \
        == [case.path], run.output


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


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_libyang_enforces_must_rules(libyang_context: Libyang, case: Case) -> None:
    errors = libyang_context.validate(document(case.config))
    if case.app_tag is None:
        assert errors == []
        return
    assert [(error.app_tag, unprefixed(error.path or "")) for error in errors] \
        == [(case.app_tag, case.path)], errors


def test_libyang_takes_operational_state(libyang_context: Libyang) -> None:
    state = ET.tostring(switch_element(VALID, counters=True), encoding="unicode")
    assert libyang_context.validate(state, state=True) == []
    # ... and refuses it in a configuration.
    refused = libyang_context.validate(state)
    assert refused, "counters accepted as configuration"


@pytest.mark.parametrize(("leaf", "value"), [
    ("cnp-priority", "8"),
    ("speed", "300G"),
    ("max-drop-probability-percent", "101"),
    ("queue-id", "8"),
])
def test_libyang_refuses_values_out_of_range(libyang_context: Libyang, leaf: str,
                                             value: str) -> None:
    switch = switch_element(VALID)
    element = switch.find(f".//{leaf}")
    assert element is not None
    element.text = value
    errors = libyang_context.validate(ET.tostring(switch, encoding="unicode"))
    assert errors, f"{leaf}={value} accepted"
