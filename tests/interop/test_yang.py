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

import pytest

import yang
from tests.support.netconfd import yuma_kept_out_of_home
from tests.support.peers import require_executable
from tests.support.yang import (
    CASES,
    INVALID_APP_TAGS,
    MODULE,
    MODULE_NAME,
    NETCONF_BASE,
    VALID,
    Case,
    Libyang,
    document,
    switch_element,
    unprefixed,
)


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
