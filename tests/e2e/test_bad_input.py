"""No input escapes: every bad number, name, file, path or header an operator can give is
one ``error:`` line and a non-zero exit (2 when refused before anything was sent),
never a traceback, a hang or gigabytes of memory.

Through the command line (``msoctl.cli.run`` in-process), each test checks the exit
code and the one error line. Most need no device: the refusal comes before any. The
ones about a device (probe ports, lost light, the scrape-timeout header) run against
one emulated lab shared by the module and reset after each test.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from drivers.yamlfile import MAX_FILE_BYTES
from emulators.faults import Fault
from emulators.lab import Lab
from msoctl.exporter.probe import MAX_SCRAPE_TIMEOUT_SECONDS, TIMEOUT_HEADER, Prober
from tests.support import Msoctl, Result, in_process, journal_actions, remove_journal
from tests.support.exporter import exporter_process, fetch, serve_exporter, value

INVENTORY = """\
journal: journal.sqlite
devices:
  - name: ocs-a
    kind: ocs
    transport: visa
    address: TCPIP::127.0.0.1::9::SOCKET
  - name: amp-1
    kind: amp
    transport: i2c-bridge
    address: socket://127.0.0.1:9
  - name: sw-a
    kind: switch
    transport: netconf
    address: 127.0.0.1:9
    username: msoctl
    password: env:MSOCTL_TEST_PASSWORD
  - name: laser-1
    kind: laser
    transport: visa
    address: TCPIP::127.0.0.1::9::SOCKET
  - name: pm-1
    kind: meter
    transport: visa
    address: TCPIP::127.0.0.1::9::SOCKET
    channels: 8
"""
"""Devices at a port where nothing listens (9, discard): a command that got as far as
opening one would fail with exit 1, so an exit 2 shows the refusal came first."""


def one_error_line(result: Result, code: int = 2) -> str:
    assert result.code == code, result
    assert "Traceback" not in result.err and "Traceback" not in result.out
    assert result.err.startswith("error: "), result.err
    assert result.err.count("\n") == 1 and result.err.endswith("\n"), result.err
    assert "internal error" not in result.err, result.err
    return result.err.strip()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with INVENTORY selected by MSOCTL_INVENTORY."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY)
    monkeypatch.setenv("MSOCTL_INVENTORY", str(path))
    return tmp_path


@pytest.fixture
def msoctl(site: Path, capsys: pytest.CaptureFixture[str]) -> Msoctl:
    return in_process(capsys)


# ---- numbers on the command line --------------------------------------------------------

CHARACTERIZE = ["ocs", "characterize", "ocs-a", "--laser", "laser-1", "--meter", "pm-1",
                "--out", "run"]
NUMERIC_OPTIONS = [
    (["telemetry", "cpc", "sw-a"], "--interval"),
    (["telemetry", "cpo", "sw-a"], "--budget"),
    (["path", "show"], "--tolerance"),
    (["path", "show"], "--dark-below"),
    (["lab", "fault", "reboot", "ocs-a"], "--seconds"),
    (["protect", "run"], "--hold-off-ms"),
    (["protect", "run"], "--threshold-dbm"),
    (["protect", "run"], "--verify-timeout-ms"),
    (["amp", "set", "amp-1"], "--gain"),
    (["amp", "set", "amp-1"], "--slew"),
    (["amp", "als", "amp-1"], "--los-soak"),
    (["switch", "headroom", "--distance", "30km", "--speed", "400G"], "--small-packets"),
    (["switch", "headroom", "--distance", "30km", "--speed", "400G"],
     "--peer-response-quanta"),
    (CHARACTERIZE, "--laser-power"),
    (CHARACTERIZE, "--max-il"),
    (CHARACTERIZE, "--log-window"),
    (["exporter"], "--timeout-offset"),
]


@pytest.mark.parametrize("number", ["nan", "NaN", "inf", "-inf", "1e999", "-Infinity"])
@pytest.mark.parametrize("command, option", NUMERIC_OPTIONS,
                         ids=[f"{' '.join(c[:2])} {o}" for c, o in NUMERIC_OPTIONS])
def test_nan_and_infinities_are_refused_by_every_numeric_option(
        msoctl: Msoctl, site: Path, command: list[str], option: str, number: str) -> None:
    """IEEE 754 §6.2 and §6.1: NaN compares false with everything (so a plain range check
    lets it through) and an infinity is larger than any range; both are refused before
    anything is opened, sent or journaled."""
    message = one_error_line(msoctl(*command, option, number))
    assert f"'{option}'" in message and "is not a finite number" in message
    assert not (site / "journal.sqlite").exists()
    assert not (site / "run").exists()


@pytest.mark.parametrize("args, option", [
    (["history", "-n", "1" + "0" * 30], "'-n'"),
    (["switch", "headroom", "--distance", "30km", "--speed", "400G", "--pipeline-latency",
      "9" * 40], "'--pipeline-latency'"),
    (["switch", "cc", "apply", "sw-a", "--file", "want.yaml", "--confirm-timeout",
      "1" + "0" * 20], "'--confirm-timeout'"),
    (["lab", "fault", "latency", "ocs-a", "--count", "1" + "0" * 20], "'--count'"),
    (["lab", "fault", "congestion", "sw-a", "--port", "Ethernet1", "--queue", "8"],
     "'--queue'"),
])
def test_integers_have_an_upper_bound(msoctl: Msoctl, args: list[str], option: str) -> None:
    """Every integer option has a range with an upper bound, so no number reaches
    arithmetic (a float conversion), SQLite's 64-bit integers or a device unchecked."""
    assert option in one_error_line(msoctl(*args))


@pytest.mark.parametrize("args, expected", [
    ([*CHARACTERIZE, "--ports", "1-999999"], "--ports: '1-999999': ports are 1..1024"),
    ([*CHARACTERIZE, "--ports", "\u00b2-8"], "is not a port or a range like 1-8"),
    ([*CHARACTERIZE, "--wavelengths", "nan"], "--wavelengths: nan nm is outside"),
    (["exporter", "--listen", ":\u00b2"], "--listen ':\u00b2': write ADDR:PORT"),
    (["exporter", "--listen", ":" + "9" * 5000], "write ADDR:PORT"),
], ids=["port-range", "superscript", "wavelength", "listen-superscript", "listen-digits"])
def test_numbers_inside_text_options(msoctl: Msoctl, site: Path, args: list[str],
                                     expected: str) -> None:
    """Numbers written inside text (port lists, wavelengths, ADDR:PORT) are ASCII digits
    of a bounded length: '²' is a digit to str.isdigit() but not to int(), more than 4300
    digits make int() raise, and a range of a billion ports would never be listed."""
    assert expected in one_error_line(msoctl(*args))
    assert not (site / "run").exists()


def test_a_distance_needs_its_unit(msoctl: Msoctl) -> None:
    """The headroom formula takes metres; a bare 30 could be 30 m or 30 km, a thousandfold
    difference in xoff, so it is refused with both spellings offered."""
    message = one_error_line(msoctl("switch", "headroom", "--distance", "30", "--speed",
                                    "400G"))
    assert message == "error: distance '30' has no unit: write 30m or 30km"
    assert msoctl("switch", "headroom", "--distance", "30km", "--speed", "400G").code == 0
    plan = msoctl("switch", "plan", "--port", "Ethernet1=30@400G")
    assert "write 30m or 30km" in one_error_line(plan)
    assert "at most 20000 km" in one_error_line(
        msoctl("switch", "headroom", "--distance", "9" * 400 + "km", "--speed", "400G"))
    assert "at most" in one_error_line(
        msoctl("switch", "plan", "--port", "Ethernet1=30km@400G", "--lossless-pool",
               "9" * 400 + "GB"))


# ---- numbers in files -----------------------------------------------------------------------


@pytest.mark.parametrize("written", [".nan", ".inf", "-.inf", "1.0e+999", "'nan'", "inf"])
def test_nan_and_infinities_are_refused_in_the_inventory(msoctl: Msoctl, site: Path,
                                                         written: str) -> None:
    """YAML 1.1's float type (yaml.org/type/float) spells NaN and the infinities .nan and
    .inf; written as text ('nan', inf) they are not numbers at all. Each is refused with
    its line."""
    (site / "inventory.yaml").write_text(INVENTORY.replace(
        "    channels: 8\n", f"    channels: 8\n    timeout_seconds: {written}\n"))
    message = one_error_line(msoctl("inventory", "check"))
    assert f"inventory.yaml:{INVENTORY.count(chr(10)) + 1}: device 'pm-1': field " \
           "'timeout_seconds': must be " in message
    assert ("a finite number" if written[0] in ".-1" else "a number, got") in message


def _intent(site: Path, body: str) -> Path:
    path = site / "intent.yaml"
    path.write_text(body)
    return path


@pytest.mark.parametrize("args, body, expected", [
    (["fabric", "plan", "intent.yaml"], "amplifiers:\n  amp-1: {gain_db: .nan}\n",
     "intent.yaml:2: amplifier 'amp-1': field 'gain_db': must be a finite number, got nan"),
    (["fabric", "plan", "intent.yaml"],
     "links: {}\namplifiers:\n  amp-1: {gain_db: 10.0}\nverify: {timeout_seconds: .inf}\n",
     "intent.yaml:4: verify: field 'timeout_seconds': must be a finite number, got inf"),
    (["switch", "cc", "plan", "sw-a", "--file", "intent.yaml"],
     "switch:\n  fast-cnp:\n    cnp-priority: .nan\n",
     "intent.yaml:3: /switch/fast-cnp/cnp-priority: nan is not an unsigned integer"),
    (["ocs", "apply", "ocs-a", "intent.yaml"],
     "connections:\n  - {ingress: .nan, egress: 65}\n",
     "intent.yaml:2: connection: field 'ingress': must be an integer, got nan"),
    (["lab", "up", "--topology", "intent.yaml", "--state-dir", "lab"],
     "ocs:\n  - {name: ocs-x, size: 4}\npatches:\n  - {from: ocs-x:5, to: ocs-x:1, "
     "length_km: .nan}\n",
     "intent.yaml:4: patch: field 'length_km': must be a finite number, got nan"),
    (["lab", "up", "--topology", "intent.yaml", "--state-dir", "lab"],
     "ocs:\n  - {name: ocs-x, size: 4, boot_seconds: 1.0e+999}\n",
     "intent.yaml:2: ocs 'ocs-x': field 'boot_seconds': must be a finite number, got inf"),
], ids=["intent-amplifier", "intent-verify", "want", "map", "topology-fiber",
        "topology-boot"])
def test_nan_and_infinities_are_refused_in_every_file(msoctl: Msoctl, site: Path,
                                                      args: list[str], body: str,
                                                      expected: str) -> None:
    """Fabric intent, WANT, map and topology files: YAML 1.1 floats .nan and .inf (and a
    decimal too large for IEEE 754 binary64, which reads as infinity) are refused with
    the file and line, before any device is opened or the lab started."""
    _intent(site, body)
    message = one_error_line(msoctl(*args))
    assert expected in message
    assert not (site / "lab").exists()


# ---- size, depth and aliases ------------------------------------------------------------


def test_a_50_mb_inventory_is_refused_unread(msoctl: Msoctl, site: Path) -> None:
    """A file larger than the loader's limit is refused from its size alone: no parse
    (which took minutes and gigabytes for 50 MB), one line naming the limit."""
    big = site / "big.yaml"
    with big.open("wb") as file:
        file.truncate(50 * 1024 * 1024)  # sparse: 50 MB without writing them
    message = one_error_line(msoctl("-i", str(big), "inventory", "check"))
    assert message == (f"error: {big}: 52,428,800 bytes; a file is read only up to "
                       f"{MAX_FILE_BYTES // 1024 // 1024} MiB")


def test_devices_and_fifos_are_refused_unread(msoctl: Msoctl, site: Path) -> None:
    """POSIX open(2) on a FIFO blocks until a writer comes, and /dev/zero never ends:
    only regular files are read (a FIFO is opened non-blocking, then refused)."""
    fifo = site / "inventory.fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        # refused, by the reason: a blocking open or an endless read would never return,
        # and pytest's per-test timeout would end the test (no clock here)
        message = one_error_line(msoctl("-i", str(path), "inventory", "check"))
        assert message == f"error: {path}: cannot read: not a regular file (a device, FIFO " \
                          "or socket)"


def _nested(inner: str, levels: int = 16) -> str:
    return "[" * levels + inner + "]" * levels


# Each line nests the one before 16 levels deeper, through an alias: 5 x 16 > 64,
# though no line is written deeper than 17.
ALIAS_DEPTH = "a: &a " + _nested("x") + "\n" + "".join(
    f"{k}: &{k} [*{p}, {_nested('*' + p)}]\n" for p, k in zip("abcd", "bcde", strict=True))


@pytest.mark.parametrize("body, expected", [
    ("devices: " + "[" * 5000 + "]" * 5000 + "\n", "inventory.yaml:1: not valid YAML:"),
    ("devices:\n" + "".join("  " * (n + 1) + f"- k{n}:\n" for n in range(70)),
     "not valid YAML: nested deeper than 64 levels"),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
     + "".join(f"{k}: &{k} [{', '.join([f'*{p}'] * 10)}]\n"
               for p, k in zip("abcdefgh", "bcdefghi", strict=True))
     + "devices: []\n",
     "inventory.yaml:9: not valid YAML: aliases expand this document by "),
    ("devices: &d [*d]\n", "inventory.yaml:1: not valid YAML: an alias refers to a node "
                           "that contains it"),
    (ALIAS_DEPTH, "not valid YAML: aliases nest this value deeper than 64 levels"),
], ids=["5000-levels", "70-levels", "billion-laughs", "recursive-alias", "alias-depth"])
def test_deep_nesting_and_alias_bombs_are_one_line(msoctl: Msoctl, site: Path, body: str,
                                                   expected: str) -> None:
    """YAML 1.2 §3.2.2.2 and §7.1: an alias node stands for the whole anchored node, so
    a small text can stand for 10^9 nodes ("billion laughs") or for a node inside itself;
    nesting (written or through aliases) is limited to 64 levels. Each is refused with
    the line, within the limits, instead of a RecursionError or exhausted memory."""
    (site / "inventory.yaml").write_text(body)
    assert expected in one_error_line(msoctl("inventory", "check"))


@pytest.mark.parametrize("pure_python", [False, True], ids=["libyaml", "pure-python"])
@pytest.mark.parametrize("body, expected", [
    ("a: " + "[" * 70 + "]" * 70, "f.yaml:1: not valid YAML: nested deeper than 64 levels"),
    (ALIAS_DEPTH, "f.yaml:4: not valid YAML: aliases nest this value deeper than 64 levels"),
    ("a: &a [*a]", "f.yaml:1: not valid YAML: an alias refers to a node that contains it"),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
     + "".join(f"{k}: &{k} [{', '.join([f'*{p}'] * 10)}]\n"
               for p, k in zip("abcdef", "bcdefg", strict=True)),
     "f.yaml:7: not valid YAML: aliases expand this document by 12,345,660 nodes"),
    ("a: 1" + "0" * 30, "f.yaml:1: not valid YAML: integer too large (at most 64 bits)"),
    ('"a\\x1bb": 1', "f.yaml:1: not valid YAML: the key 'a\\x1bb' contains the control"),
    ("a: 1\n---\nb: 2\n", "f.yaml:2: not valid YAML: expected a single document in the "
                          "stream, but found another document"),
])
def test_both_parsers_keep_the_limits(body: str, expected: str, pure_python: bool) -> None:
    """libyaml's parser is used when PyYAML has it, PyYAML's own otherwise; the limits
    live in the composer and constructors above either, so both refuse the same way."""
    from drivers.yamlfile import YamlFileError, load_text

    with pytest.raises(YamlFileError) as caught:
        load_text(body, "f.yaml", pure_python=pure_python)
    assert str(caught.value).startswith(expected), caught.value
    assert load_text("a: [1, {b: 0x10}]\nc: 1:21\n", "f.yaml", pure_python=pure_python) == \
        {"a": [1, {"b": 16}], "c": "1:21"}


@pytest.mark.parametrize("body, expected", [
    ("devices:\n  - {name: ocs-a, kind: ocs, transport: visa, address: x, "
     "timeout_seconds: 0x" + "f" * 40 + "}\n", "inventory.yaml:2: not valid YAML: integer "
                                               "too large (at most 64 bits)"),
    ("devices:\n  - {name: ocs-a, kind: ocs, transport: visa, address: x, "
     "timeout_seconds: " + "9" * 5000 + "}\n", "integer too large"),
    ("devices: []\nspans: [{name: s, since: 2020-13-45}]\n",
     "inventory.yaml:2: not valid YAML: cannot read this value: month must be in 1..12"),
    ("devices: []\njournal: !!int twelve\n",
     "inventory.yaml:2: not valid YAML: cannot read this value:"),
    (b"devices: []\njournal: caf\xe9\n", "inventory.yaml:2: not UTF-8 text"),
    ("devices: []\njournal: 'a\x01b'\n", "inventory.yaml:2: not valid YAML: unacceptable "
                                         "character U+0001"),
], ids=["hex-int", "5000-digits", "timestamp", "int-tag", "latin-1", "raw-control"])
def test_values_yaml_cannot_construct_are_one_line(msoctl: Msoctl, site: Path,
                                                   body: str | bytes, expected: str) -> None:
    """YAML 1.1 int/timestamp types (yaml.org/type/int, /timestamp) and YAML 1.2 §5.1's
    printable character set and §5.2's UTF-8: what cannot be read is refused with its
    line, not with Python's own ValueError."""
    path = site / "inventory.yaml"
    if isinstance(body, bytes):
        path.write_bytes(body)
    else:
        path.write_text(body)
    assert expected in one_error_line(msoctl("inventory", "check"))


# ---- names and text ---------------------------------------------------------------------


@pytest.mark.parametrize("field, written", [
    ("name", '"ocs\\0a"'), ("name", '"ocs-a\\n"'), ("name", '"ocs-a\\e[31m"'),
    ("name", "ocs a"), ("address", '"TCPIP::h\\0::5025::SOCKET"'),
    ("labels", '{campus: "a\\u202eb"}'), ("password", '"file:pass\\0word"'),
], ids=["nul", "newline", "escape", "space", "address-nul", "bidi-label", "secret-nul"])
def test_names_and_text_with_control_characters_are_refused(
        msoctl: Msoctl, site: Path, field: str, written: str) -> None:
    """YAML 1.2 §5.7 escapes (\\0, \\n, \\e, \\u) put characters in a double-quoted string
    that the reader would refuse written raw; no name, address, label or secret
    reference may hold a control or formatting character (Unicode general categories
    Cc, Cf, Cs). One line with the line number, never Python's 'embedded null byte'."""
    extra = "    transport: netconf\n    address: 127.0.0.1\n    username: u\n"
    head = "devices:\n  - name: sw-x\n    kind: switch\n" + extra
    if field == "name":
        body = f"devices:\n  - name: {written}\n    kind: ocs\n    transport: visa\n" \
               "    address: x\n"
    elif field == "address":
        body = f"devices:\n  - name: ocs-x\n    kind: ocs\n    transport: visa\n" \
               f"    address: {written}\n"
    elif field == "labels":
        body = head + f"    password: env:X\n    labels: {written}\n"
    else:
        body = head + f"    password: {written}\n"
    (site / "inventory.yaml").write_text(body)
    message = one_error_line(msoctl("inventory", "check"))
    assert f"field '{field}'" in message
    assert "\x00" not in message and "\x1b" not in message and "\u202e" not in message


@pytest.mark.parametrize("args", [
    ["ocs", "status", "ocs-a\x1b[2J"],
    ["ocs", "connect", "ocs\na", "1:65"],
    ["amp", "status", "amp 1"],
    ["path", "show", "link\t1"],
    ["history", "--device", "ocs-a\u202e"],
    ["switch", "cc", "show", "sw-a/1"],
], ids=["escape", "newline", "space", "tab", "bidi", "slash"])
def test_device_and_link_arguments_must_be_names(msoctl: Msoctl, site: Path,
                                                 args: list[str]) -> None:
    """A device or link named on the command line follows the inventory's name pattern:
    refused before the inventory is even read, so nothing is journaled under a name
    that would garble ``msoctl history``."""
    message = one_error_line(msoctl(*args))
    assert "name" in message or "control" in message
    assert "\x1b" not in message and "\n" not in message.strip()
    assert not (site / "journal.sqlite").exists()


def test_intent_and_topology_names_follow_the_pattern(msoctl: Msoctl, site: Path) -> None:
    """Intent entries and topology elements are names too (keys written by hand)."""
    _intent(site, 'links:\n  "link\\e1": {span: working}\n')
    assert one_error_line(msoctl("fabric", "plan", "intent.yaml")) == (
        f"error: {site / 'intent.yaml'}:2: not valid YAML: the key 'link\\x1b1' contains "
        "the control or formatting character U+001B")
    _intent(site, 'links:\n  "link 1": {span: working}\n')
    assert one_error_line(msoctl("fabric", "plan", "intent.yaml")) == (
        f"error: {site / 'intent.yaml'}:2: fabric intent: links: 'link 1' is not a link name")
    _intent(site, 'ocs:\n  - {name: "ocs-x\\n", size: 4}\n')
    assert "field 'name': must not contain control" in one_error_line(
        msoctl("lab", "up", "--topology", "intent.yaml", "--state-dir", "lab"))
    assert not (site / "lab").exists()


def test_want_leaves_take_plain_digits_and_no_control_characters(msoctl: Msoctl,
                                                                 site: Path) -> None:
    """YANG 1.1 (RFC 7950 §9.2.1) integers are ASCII digits: '²' is a digit to Python's
    str.isdigit but not to int(); XML 1.0 §2.2 cannot carry most C0 controls."""
    (site / "want.yaml").write_text('switch:\n  fast-cnp:\n    cnp-priority: "²"\n')
    assert "is not an unsigned integer" in one_error_line(
        msoctl("switch", "cc", "plan", "sw-a", "--file", "want.yaml"))
    (site / "want.yaml").write_text(
        'switch:\n  ports:\n    port:\n      - {name: "Ethernet1\\0"}\n')
    assert "control or formatting character" in one_error_line(
        msoctl("switch", "cc", "plan", "sw-a", "--file", "want.yaml"))


# ---- the inventory and journal that are named ---------------------------------------------


def test_an_empty_inventory_or_journal_name_is_an_error(
        msoctl: Msoctl, site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty name is an unset shell variable, not "the default": refused even with an
    ./inventory.yaml at hand, which it would otherwise silently pick."""
    assert (site / "inventory.yaml").exists()
    assert one_error_line(msoctl("-i", "", "inventory", "check")) == \
        "error: --inventory is empty: give the inventory file"
    assert one_error_line(msoctl("-i", "", "history")) == \
        "error: --inventory is empty: give the inventory file"
    monkeypatch.setenv("MSOCTL_INVENTORY", "")
    assert one_error_line(msoctl("inventory", "show")) == \
        "error: MSOCTL_INVENTORY is empty: give the inventory file"
    monkeypatch.delenv("MSOCTL_INVENTORY")
    assert msoctl("inventory", "check").code == 0  # ./inventory.yaml
    assert "--journal" in one_error_line(msoctl("--journal", "", "history"))
    monkeypatch.setenv("MSOCTL_JOURNAL", "")
    assert "MSOCTL_JOURNAL" in one_error_line(msoctl("history"))


# ---- where output goes --------------------------------------------------------------------


@pytest.mark.parametrize("args, expected", [
    (["inventory", "sd", "--out", "missing/targets.json"], "no directory missing to write"),
    (["inventory", "sd", "--out", "."], "is a directory; give a file"),
    (["inventory", "sd", "--out", "inventory.yaml/x.json"], "inventory.yaml is not a "
                                                             "directory"),
    (["inventory", "sd", "--out", ""], "an empty path"),
    (["inventory", "sd", "--out", "/proc/version/x.json"], "/proc/version is not a "
                                                            "directory"),
    (["switch", "plan", "--port", "Ethernet1=30km@400G", "--file", "inventory.yaml/w.yaml"],
     "is not a directory"),
    ([*CHARACTERIZE[:-1], "inventory.yaml/run"], "inventory.yaml is not a directory"),
    (["lab", "up", "--state-dir", "inventory.yaml"], "inventory.yaml is not a directory"),
    (["lab", "up", "--state-dir", "inventory.yaml/lab"], "inventory.yaml is not a directory"),
    (["demo", "--state-dir", "/proc/version/lab"], "/proc/version is not a directory"),
], ids=["missing-parent", "directory", "file-as-parent", "empty", "proc", "switch-plan",
        "characterize", "lab-state-file", "lab-state-under-file", "demo"])
def test_an_unwritable_output_is_one_line_before_anything_starts(
        msoctl: Msoctl, site: Path, args: list[str], expected: str) -> None:
    """POSIX open(2)/mkdir(2) fail with ENOENT, ENOTDIR or EISDIR for these; the path is
    checked when the options are read, so nothing has been started, sent or written."""
    message = one_error_line(msoctl(*args))
    assert expected in message
    assert not (site / "journal.sqlite").exists()


# ---- inventory check --------------------------------------------------------------------------


def test_plain_check_says_what_it_did_not_do(msoctl: Msoctl, site: Path) -> None:
    result = msoctl("inventory", "check")
    assert result.code == 0, result
    assert result.out.endswith("structure only: secrets not resolved, no device contacted "
                               "(--deep resolves and parses them)\n")


def test_deep_check_lists_every_problem_and_prints_no_secret(
        msoctl: Msoctl, site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The deep check resolves each secret reference and parses each address as its
    transport would: VISA resource strings (VPP-4.3 §4.3.1.1: TCPIP::host::port::SOCKET
    needs its port), pyserial URLs (socket://HOST:PORT), local device paths. Every
    problem is one line on stdout; one error line sums them up; the secret that does
    resolve never appears."""
    monkeypatch.setenv("MSOCTL_TEST_PASSWORD", "hunter2-do-not-print")
    (site / "empty.secret").write_text("\n")
    (site / "inventory.yaml").write_text(textwrap.dedent("""\
        devices:
          - {name: ocs-a, kind: ocs, transport: visa, address: "TCPIP::h::SOCKET",
             console: {transport: serial, address: /dev/msoctl-no-such-tty}}
          - {name: ocs-b, kind: ocs, transport: serial, address: "socket://h"}
          - {name: ocs-c, kind: ocs, transport: serial, address: "socket://h:99999"}
          - {name: amp-1, kind: amp, transport: optoe, address: /sys/msoctl/no-eeprom}
          - {name: amp-2, kind: amp, transport: i2c-dev, address: "7777"}
          - name: sw-a
            kind: switch
            transport: netconf
            address: 127.0.0.1:830
            username: msoctl
            password: env:MSOCTL_TEST_PASSWORD
            key_file: no-such-key
            snmp: {address: 127.0.0.1, user: u, auth_key: env:MSOCTL_NO_SUCH_VARIABLE,
                   priv_key: file:empty.secret}
          - name: sw-b
            kind: switch
            transport: netconf
            address: 127.0.0.1:830
            username: msoctl
            password: file:secrets/absent
        """))
    result = msoctl("inventory", "check", "--deep")
    path = site / "inventory.yaml"
    problems = result.out.splitlines()
    assert [line.split(": ", 2)[1] for line in problems] == [
        "device 'ocs-a'", "device 'ocs-a'", "device 'ocs-b'", "device 'ocs-c'",
        "device 'amp-1'", "device 'amp-2'", "device 'sw-a'", "device 'sw-a'",
        "device 'sw-a'", "device 'sw-b'"]
    assert all(line.startswith(f"{path}: ") for line in problems)
    text = result.out
    assert "address 'TCPIP::h::SOCKET': not a VISA resource string" in text
    assert "console address '/dev/msoctl-no-such-tty': no such serial device" in text
    assert "'socket://h': write socket://HOST:PORT" in text
    assert "port 99999 is not 1..65535" in text
    assert "no such optoe file" in text and "no such I2C bus" in text
    assert "snmp auth_key env:MSOCTL_NO_SUCH_VARIABLE: environment variable not set" in text
    assert f"snmp priv_key file:empty.secret: {site / 'empty.secret'} is empty" in text
    assert "key_file" in text and "password file:secrets/absent: no such file" in text
    assert "hunter2" not in result.out + result.err
    assert one_error_line(result).startswith(f"error: {path}: 10 problems listed above")


# ---- against the lab: probes, lost light, the scrape timeout ------------------------------


@pytest.fixture(scope="module")
def shared_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with Lab(tmp_path_factory.mktemp("bad-input") / "lab", serial_consoles=False) as lab:
        yield lab


@pytest.fixture
def lab(shared_lab: Lab) -> Iterator[Lab]:
    """The module's lab, its OCS maps emptied and faults cleared after each test (and the
    reset checked)."""
    yield shared_lab
    for name, device in shared_lab.ocs.items():
        shared_lab.clear(name)
        device.disconnect_all()
        assert device.connection_map() == {}
    remove_journal(shared_lab.state_dir / "journal.sqlite")


@pytest.fixture
def lab_msoctl(lab: Lab, capsys: pytest.CaptureFixture[str],
               monkeypatch: pytest.MonkeyPatch) -> Msoctl:
    monkeypatch.setenv("MSOCTL_INVENTORY", str(lab.state_dir / "inventory.yaml"))
    monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
    return in_process(capsys)


def _journal_actions(lab: Lab) -> list[str]:
    return journal_actions(lab.state_dir / "journal.sqlite")


@pytest.mark.parametrize("probe, expected", [
    ("ocs-a:999", "--probe ocs-a:999: not a port of ocs-a (64x64); a probe is an ingress "
                  "port, 1..64"),
    ("ocs-a:100", "--probe ocs-a:100: an egress port of ocs-a (64x64)"),
    ("ocs-a:0", "--probe ocs-a:0: not a port of ocs-a"),
    ("ocs-a:1", "--probe ocs-a:1: the port carries link link-1"),
    ("sw-a:3", "device 'sw-a' is of kind 'switch', not 'ocs'"),
])
def test_protect_refuses_a_probe_it_could_never_park(lab_msoctl: Msoctl, lab: Lab,
                                                     probe: str, expected: str) -> None:
    """SCPI port numbering of the OCS family (ingress 1..N, egress N+1..2N, N from
    :OXC:SWITch:SIZE?): a probe feeds a standby span's egress port, so it must be a free
    ingress port. Refused with exit 2 before the controller starts (no protection.run in
    the journal), rather than running with the link unprotected."""
    message = one_error_line(lab_msoctl("protect", "run", "--probe", probe))
    assert expected in message
    assert "protection.run" not in _journal_actions(lab)
    assert lab.ocs["ocs-a"].connection_map() == {}


def test_protect_does_not_start_when_the_probe_cannot_be_checked(
        lab_msoctl: Msoctl, lab: Lab) -> None:
    """An OCS that does not answer :OXC:SWITch:SIZE? leaves the probe unchecked: exit 1."""
    lab.inject("ocs-b", Fault("drop"))
    inventory = lab.state_dir / "inventory.yaml"
    original = inventory.read_text()
    inventory.write_text(original.replace("timeout_seconds: 5.0", "timeout_seconds: 0.5"))
    try:
        message = one_error_line(lab_msoctl("protect", "run", "--probe", "ocs-b:7"), 1)
    finally:
        inventory.write_text(original)
    assert message.startswith("error: ocs-b: cannot check --probe: ")
    assert "protection.run" not in _journal_actions(lab)


def test_port_numbers_of_any_length_are_one_line(lab_msoctl: Msoctl, lab: Lab) -> None:
    """A port number longer than any OCS's is refused (and journaled as a refusal, as
    the command journals them) without reaching int()'s own 4300-digit ValueError."""
    for args in (["connect", "ocs-a", "1:" + "9" * 5000], ["disconnect", "ocs-a", "9" * 5000]):
        message = one_error_line(lab_msoctl("ocs", *args))
        assert "is out of range" in message and len(message) < 200
    assert lab.ocs["ocs-a"].connection_map() == {}


def test_ocs_light_exits_1_when_a_path_is_lost(lab_msoctl: Msoctl, lab: Lab) -> None:
    """Light into ingress 2 (lit by sw-a's second transmitter) that does not leave at
    egress 66 (a failed port) is lost: the table is printed, then one error line, exit 1.
    A path whose ingress is dark is not lost (nothing to carry)."""
    ocs = lab.ocs["ocs-a"]
    ocs.add((2, 3), (66, 67))
    lab.inject("ocs-a", Fault("port", target="66"))
    result = lab_msoctl("ocs", "light", "ocs-a")
    message = one_error_line(result, 1)
    assert message == "error: ocs-a: light lost on 1 of 2 paths: 2:66"
    rows = [line.split() for line in result.out.splitlines()[1:]]
    assert [(row[0], row[1], row[-1]) for row in rows] == [("2", "66", "lost"),
                                                           ("3", "67", "ok")]
    lab.clear("ocs-a")
    assert lab_msoctl("ocs", "light", "ocs-a").code == 0


def test_deep_check_of_the_lab_inventory_passes_and_sends_nothing(
        lab_msoctl: Msoctl, lab: Lab) -> None:
    """The lab's own inventory: every secret file resolves, every address parses."""
    lab.inject("ocs-a", Fault("freeze"))  # a check that sent anything would hang on it
    result = lab_msoctl("inventory", "check", "--deep")
    assert result.code == 0, result
    assert result.out.strip().endswith("read; nothing was sent")
    assert "0 secrets" not in result.out


@pytest.mark.parametrize("header", ["1e308", "inf", "nan", "-1", "1e-320", "  2  ", "²",
                                    "9" * 400])
def test_the_scrape_timeout_header_never_raises(lab: Lab, header: str,
                                                capfd: pytest.CaptureFixture[str]) -> None:
    """Prometheus sends X-Prometheus-Scrape-Timeout-Seconds with every scrape
    (prometheus.io/docs, "Writing exporters": respect the scrape timeout). Whatever it
    holds, the probe answers 200 within a budget of at most 600 s less the offset, and
    no traceback is written (1e308 used to give two)."""
    prober = Prober(lab.state_dir / "inventory.yaml")
    budget = prober.budget(header)
    assert 0 < budget <= MAX_SCRAPE_TIMEOUT_SECONDS
    with serve_exporter(lab.state_dir / "inventory.yaml") as server:
        reply = fetch(f"{server.url}/probe?target=ocs-a", scrape_timeout=None,
                      headers={TIMEOUT_HEADER: header})
    assert reply.status == 200, reply.body
    up = value(reply.body, "msoctl_up", device="ocs-a")
    assert up == 1.0 if budget >= 1 else up in (0.0, 1.0)  # 1e-320: a 50 ms budget
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err + captured.out


def test_budget_caps_huge_scrape_timeouts(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text("devices: []\n")
    prober = Prober(path)
    assert prober.budget("1e308") == pytest.approx(MAX_SCRAPE_TIMEOUT_SECONDS - 0.25)
    assert prober.budget("601") == pytest.approx(MAX_SCRAPE_TIMEOUT_SECONDS - 0.25)
    assert prober.budget("30") == pytest.approx(29.75)
    for unreadable in ("inf", "-inf", "nan", "0", "", "thirty"):
        assert prober.budget(unreadable) == pytest.approx(9.75)


def test_a_host_name_dns_does_not_know_is_an_unreachable_device(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Over VISA (pyvisa-py raises a bare Exception for it), over a serial URL and over
    I2C: one line naming the device and why, exit 1 -- not "internal error ... please
    report it". The resolver is made to refuse the name here, as an unknown host's DNS
    answer does, so nothing leaves the machine."""
    real = socket.getaddrinfo

    def resolve(host: object, *args: object, **kwargs: object) -> object:
        if host == "unknown-host.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(textwrap.dedent("""\
        journal: journal.sqlite
        devices:
          - {name: ocs-v, kind: ocs, transport: visa, timeout_seconds: 2,
             address: "TCPIP::unknown-host.invalid::5025::SOCKET"}
          - {name: ocs-s, kind: ocs, transport: serial, timeout_seconds: 2,
             address: "socket://unknown-host.invalid:5025"}
          - {name: amp-s, kind: amp, transport: i2c-bridge,
             address: "socket://unknown-host.invalid:9"}
        """))
    msoctl = in_process(capsys)
    for args in (("ocs", "status", "ocs-v"), ("ocs", "status", "ocs-s"),
                 ("amp", "status", "amp-s")):
        line = one_error_line(msoctl("-i", str(inventory), *args), 1)
        assert "internal error" not in line and "Name or service not known" in line, line
        assert f"{args[2]}:" in line


@pytest.fixture
def silent_peer() -> Iterator[int]:
    """A TCP port whose peer accepts and never says a word (a frozen SSH server)."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        for connection in held:
            connection.close()
        listener.close()


def test_a_frozen_ssh_peer_is_one_error_line_in_the_cli_and_the_exporter_log(
        silent_peer: int, tmp_path: Path) -> None:
    """The SSH library's traceback of a peer that never sends its banner (20 lines)
    reached stderr before the ``error:`` line, and the exporter's log (``--debug`` shows
    the libraries' lines)."""
    (tmp_path / "known_hosts").write_text("")
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(textwrap.dedent(f"""\
        journal: journal.sqlite
        devices:
          - {{name: sw-f, kind: switch, transport: netconf, timeout_seconds: 1,
             address: "127.0.0.1:{silent_peer}", username: u, password: "env:SW_PASSWORD",
             known_hosts: known_hosts}}
        """))
    env = {**os.environ, "MSOCTL_INVENTORY": str(inventory), "SW_PASSWORD": "x"}
    command = subprocess.run([sys.executable, "-m", "msoctl", "switch", "cc", "show", "sw-f"],
                             env=env, capture_output=True, text=True, timeout=60)
    line = one_error_line(Result(command.returncode, command.stdout, command.stderr), 1)
    # the session's own deadline, or the library's banner wait of the same length
    assert "no NETCONF session within 1 s" in line or "SSH protocol banner" in line, line
    log = tmp_path / "exporter.log"
    with exporter_process(env, log) as address:
        assert fetch(f"{address}/probe?target=sw-f", timeout=20).status == 200
    text = log.read_text()
    assert "sw-f" in text and "Traceback" not in text
    assert not [line for line in text.splitlines() if line.startswith(" ")]  # no trace
    assert "Exception (client)" not in text  # the library's own line
