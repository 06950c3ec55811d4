"""Properties of everything msoctl reads from outside (hypothesis).

- Every file loader (inventory, OCS map, fabric intent, WANT, lab topology, test-set
  reference), given random bytes, random YAML trees or a valid file with one value
  replaced by a random one, either loads or raises the project's own error
  (YamlFileError or ValidationError) with a one-line message; what loads holds no
  NaN or infinity.
- Random numbers (NaN, infinities, huge, tiny, negative, integers too long for 64
  bits) to the numeric options of representative commands give exit 0 or 2, one
  error line, never a traceback; a refusal leaves the journal and the device as they
  were.
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drivers.errors import ValidationError
from drivers.yamlfile import YamlFileError
from emulators.lab import load_topology
from msoctl.acceptance.characterize import load_test_set
from msoctl.fabric.intent import load_intent
from msoctl.inventory import load_inventory
from msoctl.ops.ocs import load_map_file
from msoctl.ops.switch import load_want
from tests.support import Msoctl, in_process
from tests.support.properties import CLI, assert_clean, journal_lines, number_texts

FAST = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


INVENTORY = textwrap.dedent("""\
    journal: journal.sqlite
    devices:
      - {name: ocs-a, kind: ocs, transport: visa, address: "TCPIP::127.0.0.1::9::SOCKET",
         timeout_seconds: 1.5, labels: {campus: a}, max_switch_power_dbm: 18.5,
         console: {transport: serial, address: /dev/null}}
      - {name: ocs-b, kind: ocs, transport: serial, address: "socket://127.0.0.1:9"}
      - {name: amp-1, kind: amp, transport: i2c-bridge, address: "socket://127.0.0.1:9",
         i2c_address: 0x50, gain_slew_db_per_second: 5.0, max_gain_step_db: 0.25}
      - name: sw-a
        kind: switch
        transport: netconf
        address: "127.0.0.1:830"
        username: msoctl
        password: env:MSOCTL_PASSWORD
        snmp: {address: 127.0.0.1, user: u, auth_key: env:A, priv_key: env:P,
               timeout_seconds: 2.0, retries: 1}
      - {name: sw-b, kind: switch, transport: netconf, address: "[::1]:830",
         username: msoctl, key_file: id_ed25519}
      - {name: pm-1, kind: meter, transport: visa, address: "TCPIP::h::9::SOCKET",
         channels: 8}
    spans:
      - name: span-1
        length_km: 30
        loss_db_per_km: 0.2
        connector_loss_db: 0.6
        a_to_b: {from: ocs-a:121, to: ocs-b:61, amplifier: amp-1}
        b_to_a: {from: ocs-b:121, to: ocs-a:61}
      - name: span-2
        length_km: 30.5
        a_to_b: {from: ocs-a:122, to: ocs-b:62}
        b_to_a: {from: ocs-b:122, to: ocs-a:62}
    links:
      - name: link-1
        a: {switch: sw-a, port: Ethernet1, tx: ocs-a:1, rx: ocs-a:65}
        b: {switch: sw-b, port: Ethernet1, tx: ocs-b:1, rx: ocs-b:65}
        working: span-1
        protection: span-2
        tx_power_dbm: 1.0
    """)

BASES: dict[str, Any] = {
    "inventory": yaml.safe_load(INVENTORY),
    "map": {"connections": ["1:65", {"ingress": 2, "egress": 66}]},
    "intent": {
        "links": {"link-1": {"span": "working"}},
        "ocs": {"ocs-a": {"connections": ["3:67", "4:68"]}},
        "amplifiers": {"amp-1": {"mode": "gain", "gain_db": 18.0, "tilt_db": 0.0}},
        "switches": {"sw-a": {"want": {"switch": {"fast-cnp": {"enabled": True,
                                                               "cnp-priority": 6}}}}},
        "verify": {"timeout_seconds": 10.0, "tolerance_db": 4.0},
    },
    "want": {"switch": {
        "fast-cnp": {"enabled": True, "cnp-priority": 6},
        "ports": {"port": [{
            "name": "Ethernet1", "speed": "400G", "cable-length-meters": 30_000,
            "lossless-priorities": [3], "pfc": {"xoff-bytes": 24_000_000, "xon-bytes": 20_000},
            "queues": {"queue": [{"queue-id": 3, "wred": {
                "min-threshold": 1_000_000, "max-threshold": 30_000_000,
                "max-drop-probability-percent": 20, "enable-ecn": True}}]}}]}}},
    "topology": {
        "name": "mini",
        "ocs": [{"name": "ocs-x", "size": 4, "campus": "x", "boot_seconds": 1.0},
                {"name": "ocs-y", "size": 4, "campus": "y"}],
        "transceivers": [{"name": "hosts-x", "count": 2, "power_dbm": 0.0}],
        "amplifiers": [{"name": "amp-9", "gain_min_db": 10.0, "gain_max_db": 20.0,
                        "output_power_max_dbm": 17.0}],
        "patches": [{"from": "hosts-x:tx1", "to": "ocs-x:1", "count": 2,
                     "length_km": 0.005}],
        "cables": [{"name": "link", "role": "working", "length_km": 10.0,
                    "loss_db_per_km": 0.25,
                    "fibers": [{"from": "ocs-x:8", "to": "ocs-y:4", "amplifier": "amp-9"},
                               {"from": "ocs-y:8", "to": "ocs-x:4"}]}],
    },
    "reference": {"launch_loss_db": {1: 3.5, 2: 3.6}, "meter_ports": {65: 1, 66: 2},
                  "receive_loss_db": {65: 0.5}},
}


def _loaders(directory: Path) -> dict[str, Callable[[Path], Any]]:
    inventory_path = directory / "inventory.yaml"
    inventory_path.write_text(INVENTORY)
    inventory = load_inventory(inventory_path)
    return {
        "inventory": load_inventory,
        "map": load_map_file,
        "intent": lambda path: load_intent(path, inventory),
        "want": load_want,
        "topology": load_topology,
        "reference": load_test_set,
    }


LOADERS = tuple(BASES)


@pytest.fixture(scope="module")
def loaders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Callable[[Path], Any]]:
    return _loaders(tmp_path_factory.mktemp("loaders"))


def test_every_base_document_loads(loaders: dict[str, Callable[[Path], Any]],
                                   tmp_path: Path) -> None:
    """The documents the properties mutate are valid: a refusal below is the mutation's."""
    for name in LOADERS:
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(BASES[name]))
        assert loaders[name](path) is not None, name


def _no_nonfinite(value: Any, seen: set[int] | None = None) -> None:
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, float):
        assert math.isfinite(value), value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            _no_nonfinite(getattr(value, item.name), seen)
    elif isinstance(value, dict):
        for key, item in value.items():
            _no_nonfinite(key, seen)
            _no_nonfinite(item, seen)
    elif isinstance(value, list | tuple | set):
        for item in value:
            _no_nonfinite(item, seen)


def check_loader(load: Callable[[Path], Any], path: Path) -> None:
    """Loads, or raises the project's own error in one line."""
    try:
        loaded = load(path)
    except (YamlFileError, ValidationError) as error:
        message = str(error)
        assert "\n" not in message and "\r" not in message, message
        assert message.startswith(str(path)), message
        return
    _no_nonfinite(loaded)


# ---- what goes into files ---------------------------------------------------------------

numbers = st.one_of(
    st.floats(),  # NaN and infinities included
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2**64, 2**63 - 1, 1e308, -1e308, 5e-324, 0.0, -0.0]),
)
texts = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["nan", "inf", "-inf", ".nan", "1e999", "0x" + "f" * 30, "1:21",
                     "ocs-a:999", "ocs\x00a", "a\u202eb", "²", "", " ", "~", "yes"]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
trees = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(texts, children, max_size=4)),
    max_leaves=20,
)


def _dump(tree: Any) -> str:
    return yaml.safe_dump(tree, allow_unicode=False, sort_keys=False)


def _leaves(tree: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``tree`` (containers too: a whole section may be replaced)."""
    found = [path]
    if isinstance(tree, dict):
        for key, value in tree.items():
            found.extend(_leaves(value, (*path, key)))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            found.extend(_leaves(value, (*path, index)))
    return found


def _replaced(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {k: (_replaced(v, rest, value) if k == head else v) for k, v in tree.items()}
    return [(_replaced(v, rest, value) if i == head else v) for i, v in enumerate(tree)]


@pytest.mark.parametrize("name", LOADERS)
@FAST
@given(data=st.binary(max_size=600))
def test_random_bytes_load_or_give_one_line(loaders: dict[str, Callable[[Path], Any]],
                                            tmp_path: Path, name: str, data: bytes) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(data)
    check_loader(loaders[name], path)


@pytest.mark.parametrize("name", LOADERS)
@FAST
@given(tree=trees)
def test_random_yaml_trees_load_or_give_one_line(loaders: dict[str, Callable[[Path], Any]],
                                                 tmp_path: Path, name: str,
                                                 tree: Any) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_text(_dump(tree))
    check_loader(loaders[name], path)


@pytest.mark.parametrize("name", LOADERS)
@FAST
@given(data=st.data())
def test_valid_files_with_one_random_value(loaders: dict[str, Callable[[Path], Any]],
                                           tmp_path: Path, name: str,
                                           data: st.DataObject) -> None:
    """The sharpest of the three: the structure is right, so the random value reaches
    the field checks (a NaN gain, a 2^70 port, a control character in a name...)."""
    base = BASES[name]
    where = data.draw(st.sampled_from(_leaves(base)[1:]), label="path")
    tree = _replaced(base, where, data.draw(trees, label="value"))
    path = tmp_path / f"{name}.yaml"
    path.write_text(_dump(tree))
    check_loader(loaders[name], path)


# ---- numbers on the command line -----------------------------------------------------------

@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str]) -> Iterator[tuple[Msoctl, Path]]:
    """The command line against INVENTORY without its links (nothing to protect) and
    devices nobody answers for."""
    path = tmp_path / "inventory.yaml"
    document = yaml.safe_load(INVENTORY)
    document.pop("links")
    path.write_text(yaml.safe_dump(document))
    monkeypatch.setenv("MSOCTL_INVENTORY", str(path))
    monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
    monkeypatch.chdir(tmp_path)
    yield in_process(capsys), tmp_path


HEADROOM_OPTIONS = ("--mtu", "--cell-size", "--small-packets", "--pipeline-latency",
                    "--phy-delay", "--peer-response-quanta")
PROTECT_OPTIONS = ("--hold-off-ms", "--wait-to-restore-s", "--poll-ms", "--threshold-dbm",
                   "--hysteresis-db", "--verify-timeout-ms")


@CLI
@given(option=st.sampled_from(HEADROOM_OPTIONS), number=number_texts,
       distance=number_texts, unit=st.sampled_from(["km", "m", ""]))
def test_headroom_numbers(offline: tuple[Msoctl, Path], option: str, number: str,
                          distance: str, unit: str) -> None:
    msoctl, _ = offline
    assert_clean(msoctl("switch", "headroom", "--distance", distance + unit, "--speed",
                         "400G", option, number))


@CLI
@given(distance=number_texts, pool=number_texts, priority=number_texts)
def test_switch_plan_numbers(offline: tuple[Msoctl, Path], distance: str, pool: str,
                             priority: str) -> None:
    msoctl, _ = offline
    assert_clean(msoctl("switch", "plan", "--port", f"Ethernet1={distance}km@400G",
                         "--lossless-pool", f"{pool}MB", "--cnp-priority", priority))


@CLI
@given(option=st.sampled_from(PROTECT_OPTIONS), number=number_texts)
def test_protect_numbers_refused_before_anything(offline: tuple[Msoctl, Path], option: str,
                                                 number: str) -> None:
    """The inventory protects no link, so a number that passes is refused next: either
    way exit 2 and the journal as it was (the controller never started)."""
    msoctl, directory = offline
    before = journal_lines(directory)
    result = msoctl("protect", "run", option, number)
    assert_clean(result)
    assert result.code == 2
    assert journal_lines(directory) == before


@CLI
@given(interval=number_texts, budget=number_texts)
def test_telemetry_numbers(offline: tuple[Msoctl, Path], interval: str, budget: str) -> None:
    """sw-b has no snmp section: valid numbers end in that refusal, exit 2 too."""
    msoctl, _ = offline
    result = msoctl("telemetry", "cpc", "sw-b", "--interval", interval, "--budget", budget)
    assert_clean(result)
    assert result.code == 2


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan"])
def test_a_reference_loss_that_is_no_finite_number_is_refused(tmp_path: Path,
                                                              value: str) -> None:
    """Found by test_valid_files_with_one_random_value: a launch loss of .inf loaded."""
    path = tmp_path / "reference.yaml"
    path.write_text(f"launch_loss_db: {{1: {value}}}\nmeter_ports: {{65: 1}}\n")
    with pytest.raises(ValidationError, match=r"reference.yaml:1: .*port 1: .* is not a "
                                              r"finite number$"):
        load_test_set(path)
