"""The command-line contract (README.md, "Exit codes"): exit codes, one-line errors, one JSON
document.

These run ``msoctl.cli.run`` in-process and need no lab: the inventory and the
journal are written by hand.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from msoctl.journal import Journal
from tests.support import Msoctl, Result, dead_pid, in_process

INVENTORY = """\
journal: journal.sqlite
devices:
  - name: ocs-a
    kind: ocs
    transport: visa
    address: TCPIP::127.0.0.1::5025::SOCKET
    labels: {campus: a}
    console:
      transport: serial
      address: /dev/ttyUSB0
  - name: ocs-b
    kind: ocs
    transport: serial
    address: /dev/ttyUSB1
"""

SNAKE_CASE = re.compile(r"^[a-z][a-z0-9_]*$")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty current directory, no inventory or journal from the environment."""
    directory = tmp_path / "work"
    directory.mkdir()
    monkeypatch.chdir(directory)
    monkeypatch.delenv("MSOCTL_INVENTORY", raising=False)
    monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    return directory


@pytest.fixture
def msoctl(workdir: Path, capsys: pytest.CaptureFixture[str]) -> Msoctl:
    return in_process(capsys)


@pytest.fixture
def inventory(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = workdir.parent / "site" / "inventory.yaml"
    path.parent.mkdir()
    path.write_text(INVENTORY, encoding="utf-8")
    monkeypatch.setenv("MSOCTL_INVENTORY", str(path))
    return path


def assert_one_line_error(result: Result, code: int) -> str:
    assert result.code == code, result
    assert "Traceback" not in result.err
    assert result.err.startswith("error: "), result.err
    assert result.err.endswith("\n")
    assert result.err.count("\n") == 1, result.err
    return result.err.strip()


def all_keys(document: Any, *, skip: frozenset[str] = frozenset()) -> Iterator[str]:
    if isinstance(document, dict):
        for key, value in document.items():
            yield key
            if key not in skip:
                yield from all_keys(value, skip=skip)
    elif isinstance(document, list):
        for item in document:
            yield from all_keys(item, skip=skip)


# ---- usage ---------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["history", "--help"],
                                  ["inventory", "show", "--help"]])
def test_help_exits_0(msoctl: Msoctl, args: list[str]) -> None:
    result = msoctl(*args)
    assert result.code == 0
    assert result.out.startswith("Usage: msoctl")
    assert result.err == ""


def test_the_root_help_lists_every_command_with_its_own_help(msoctl: Msoctl) -> None:
    """``msoctl --help`` prints each command's help from the registry (so that it imports
    no command module); the registry's text is the first paragraph of the command's own
    docstring, and each entry names a command of that name."""
    import click

    from msoctl.cli import COMMANDS, cli

    listed = msoctl("--help").out.split("Commands:\n", 1)[1]
    names = [line.split()[0] for line in listed.splitlines() if line.startswith("  ") and
             not line.startswith("   ")]
    assert names == sorted(COMMANDS)
    for name, entry in COMMANDS.items():
        command = cli.get_command(click.Context(cli), name)
        assert command is not None and command.name == name
        assert command.help is not None
        assert " ".join(command.help.split("\n\n")[0].split()) == entry.help, name
        assert entry.help[:20] in listed


def test_every_commands_help_reads_without_placeholders(msoctl: Msoctl) -> None:
    """Every command and subcommand's ``--help`` exits 0 and shows no Python placeholder
    (an unbounded number's range once read "x<=None")."""
    import click

    from msoctl.cli import COMMANDS, cli

    def walk(command: click.Command, path: list[str]) -> Iterator[list[str]]:
        yield path
        if isinstance(command, click.Group):
            for name in command.list_commands(click.Context(command)):
                sub = command.get_command(click.Context(command), name)
                assert sub is not None
                yield from walk(sub, [*path, name])

    seen = 0
    for name in COMMANDS:
        command = cli.get_command(click.Context(cli), name)
        assert command is not None
        for path in walk(command, [name]):
            result = msoctl(*path, "--help")
            assert result.code == 0, (path, result.err)
            for placeholder in ("None", "<function", "object at 0x"):
                assert placeholder not in result.out, (path, placeholder)
            seen += 1
    assert seen > len(COMMANDS)


def test_version(msoctl: Msoctl) -> None:
    result = msoctl("--version")
    assert result.code == 0
    assert re.fullmatch(r"msoctl, version \d+\.\d+\.\d+\S*\n", result.out)


@pytest.mark.parametrize("args", [
    ["frobnicate"],                       # unknown command
    ["inventory", "frobnicate"],          # unknown subcommand
    ["history", "--device"],              # option without its value
    ["history", "-n", "0"],               # value out of range
    ["history", "-n", "many"],            # value of the wrong type
    ["history", "-o", "xml"],             # value not among the choices
    ["history", "--no-such-option"],      # unknown option
    ["ocs", "status"],                    # missing argument
    [],                                   # missing command
    ["inventory"],                        # missing subcommand
])
def test_bad_usage_exits_2_with_one_error_line(msoctl: Msoctl, args: list[str]) -> None:
    result = msoctl(*args)
    assert_one_line_error(result, 2)
    assert result.out == ""


def test_bad_usage_says_what_is_wrong(msoctl: Msoctl) -> None:
    assert "frobnicate" in assert_one_line_error(msoctl("frobnicate"), 2)
    assert "'-n'" in assert_one_line_error(msoctl("history", "-n", "0"), 2)
    assert "xml" in assert_one_line_error(msoctl("history", "-o", "xml"), 2)
    missing = assert_one_line_error(msoctl("inventory"), 2)
    assert "check" in missing and "show" in missing


# ---- the inventory -------------------------------------------------------------------------


def test_no_inventory(msoctl: Msoctl) -> None:
    message = assert_one_line_error(msoctl("inventory", "show"), 2)
    assert message.startswith("error: no inventory")
    assert "--inventory" in message


def test_local_inventory_yaml_is_used(msoctl: Msoctl, workdir: Path) -> None:
    (workdir / "inventory.yaml").write_text(INVENTORY, encoding="utf-8")
    result = msoctl("inventory", "check")
    assert result.code == 0, result
    assert result.out.startswith("inventory.yaml: ok, 2 devices; structure only")


def test_inventory_option_beats_environment(msoctl: Msoctl, inventory: Path,
                                            workdir: Path) -> None:
    other = workdir / "other.yaml"
    other.write_text("devices: []\n", encoding="utf-8")
    result = msoctl("--inventory", str(other), "inventory", "check")
    assert result.code == 0, result
    assert result.out.startswith(f"{other}: ok, 0 devices; ")


def test_missing_inventory_file(msoctl: Msoctl, workdir: Path) -> None:
    missing = workdir / "nope.yaml"
    message = assert_one_line_error(msoctl("-i", str(missing), "inventory", "check"), 2)
    assert message == f"error: {missing}: no such file"


def test_broken_inventory_names_file_and_line(msoctl: Msoctl, workdir: Path) -> None:
    path = workdir / "inventory.yaml"
    path.write_text(INVENTORY.replace("transport: serial\n    address: /dev/ttyUSB1",
                                      "transport: telnet\n    address: /dev/ttyUSB1"))
    message = assert_one_line_error(msoctl("inventory", "check"), 2)
    assert message.startswith("error: inventory.yaml:13: device 'ocs-b': field 'transport'")
    assert msoctl("inventory", "show").err.strip() == message


def test_not_yaml_inventory_names_file_and_line(msoctl: Msoctl, workdir: Path) -> None:
    path = workdir / "bad.yaml"
    path.write_text("devices:\n  - name: [ocs-a\n")
    message = assert_one_line_error(msoctl("-i", str(path), "inventory", "check"), 2)
    assert re.match(rf"error: {re.escape(str(path))}:\d+: not valid YAML", message)


def test_unknown_device_lists_known_devices(msoctl: Msoctl, inventory: Path) -> None:
    message = assert_one_line_error(msoctl("ocs", "status", "ocs-z"), 2)
    assert "'ocs-z'" in message
    assert "ocs-a, ocs-b" in message
    assert str(inventory) in message


def test_inventory_check(msoctl: Msoctl, inventory: Path) -> None:
    result = msoctl("inventory", "check")
    assert result.code == 0, result
    assert result.out == (f"{inventory}: ok, 2 devices; structure only: secrets not "
                          "resolved, no device contacted (--deep resolves and parses them)\n")
    assert result.err == ""


def test_inventory_show_table(msoctl: Msoctl, inventory: Path) -> None:
    result = msoctl("inventory", "show")
    assert result.code == 0, result
    out = result.out.splitlines()
    assert out[0] == f"inventory: {inventory}"
    assert out[1].split() == ["NAME", "KIND", "TRANSPORT", "ADDRESS"]
    assert out[2].split() == ["ocs-a", "ocs", "visa", "TCPIP::127.0.0.1::5025::SOCKET"]
    assert out[3].split() == ["ocs-b", "ocs", "serial", "/dev/ttyUSB1"]
    wide = msoctl("inventory", "show", "-o", "wide").out.splitlines()
    assert wide[1].split() == ["NAME", "KIND", "TRANSPORT", "ADDRESS", "CONSOLE", "LABELS"]
    assert wide[2].split() == ["ocs-a", "ocs", "visa", "TCPIP::127.0.0.1::5025::SOCKET",
                               "/dev/ttyUSB0", "campus=a"]
    assert wide[3].split() == ["ocs-b", "ocs", "serial", "/dev/ttyUSB1", "-"]


def test_inventory_show_json_is_one_document_with_snake_case_keys(msoctl: Msoctl,
                                                                  inventory: Path) -> None:
    result = msoctl("inventory", "show", "-o", "json")
    assert result.code == 0, result
    assert result.err == ""
    document = json.loads(result.out)  # raises if there is anything besides one document
    assert document["inventory"] == str(inventory)
    assert [d["name"] for d in document["devices"]] == ["ocs-a", "ocs-b"]
    a, b = document["devices"]
    assert a["console"] == "/dev/ttyUSB0"
    assert a["labels"] == {"campus": "a"}
    assert b["console"] is None  # null, not "-" or ""
    keys = set(all_keys(document, skip=frozenset({"labels"})))
    assert {"inventory", "devices", "name", "kind", "transport", "address"} <= keys
    assert all(SNAKE_CASE.match(key) for key in keys), keys


# ---- history -------------------------------------------------------------------------------


def fill_journal(path: Path) -> Journal:
    """ok and failed on ocs-a, refused on ocs-b, and an ocs-a intent whose process is gone."""
    journal = Journal(path)
    with journal.change(device="ocs-a", action="ocs.connect", ports=[1, 65]) as change:
        change.outcome["connected"] = 1
    with pytest.raises(RuntimeError), journal.change(device="ocs-a", action="ocs.disconnect"):
        raise RuntimeError("device went away")
    journal.refuse(device="ocs-b", action="ocs.connect", reason="port 200 out of range",
                   exit_code=2)
    journal.append({"op": "crashed0001", "event": "intent", "device": "ocs-a",
                    "action": "ocs.port.disable", "user": "someone", "pid": dead_pid(),
                    "host": socket.gethostname(), "ports": [3]})
    return journal




def test_history_of_an_empty_journal(msoctl: Msoctl, workdir: Path) -> None:
    path = workdir / "journal.sqlite"
    result = msoctl("--journal", str(path), "history")
    assert result.code == 0, result
    assert result.out == f"no changes in {path}\n"
    result = msoctl("--journal", str(path), "history", "-o", "json")
    assert result.code == 0, result
    assert json.loads(result.out) == {"journal": str(path), "operations": []}


def test_history_without_inventory_uses_the_default_journal(msoctl: Msoctl,
                                                            tmp_path: Path) -> None:
    result = msoctl("history")
    assert result.code == 0, result
    assert result.out == f"no changes in {tmp_path / 'xdg-state' / 'msoctl' / 'journal.sqlite'}\n"


def test_history_table_shows_every_status(msoctl: Msoctl, workdir: Path) -> None:
    path = workdir / "journal.sqlite"
    fill_journal(path)
    result = msoctl("--journal", str(path), "history")
    assert result.code == 0, result
    rows = result.out.splitlines()
    assert rows[0].split() == ["TIME", "DEVICE", "ACTION", "STATUS", "USER", "DETAIL"]
    body = [row for row in rows[1:] if not row.startswith(" ")]  # a detail wraps under
    assert len(body) == 4                                          # itself, not cut
    assert "port 200 out of" in " ".join(rows) and "range" in rows[rows.index(body[2]) + 1]
    statuses = [row.split()[4] for row in body]  # time is two words: date and clock
    assert statuses == ["ok", "failed", "refused", "interrupted"]
    assert body[3].split()[5] == "someone"
    assert max(len(row) for row in rows) <= 80
    wide = msoctl("--journal", str(path), "history", "-o", "wide").out.splitlines()
    assert wide[0].split() == ["TIME", "DEVICE", "ACTION", "STATUS", "USER", "HOST", "PID",
                               "CHANGE", "OUTCOME"]
    assert "RuntimeError: device went away" in wide[2]
    assert "port 200 out of range" in wide[3]
    assert "ports 3" in wide[4]


def test_history_filters_by_device_and_limits(msoctl: Msoctl, workdir: Path) -> None:
    path = workdir / "journal.sqlite"
    fill_journal(path)

    only_b = msoctl("--journal", str(path), "history", "--device", "ocs-b", "-o", "json")
    assert only_b.code == 0, only_b
    operations = json.loads(only_b.out)["operations"]
    assert [(o["device"], o["status"]) for o in operations] == [("ocs-b", "refused")]

    last_two = msoctl("--journal", str(path), "history", "--device", "ocs-a", "-n", "2",
                      "-o", "json")
    assert [o["status"] for o in json.loads(last_two.out)["operations"]] == [
        "failed", "interrupted"]

    table = msoctl("--journal", str(path), "history", "-n", "1")
    assert len(table.out.splitlines()) == 2
    assert "interrupted" in table.out


def test_history_json_is_one_document(msoctl: Msoctl, workdir: Path) -> None:
    path = workdir / "journal.sqlite"
    fill_journal(path)
    result = msoctl("--journal", str(path), "history", "-o", "json")
    assert result.code == 0, result
    assert result.err == ""
    document = json.loads(result.out)
    assert document["journal"] == str(path)
    operations = document["operations"]
    assert [o["status"] for o in operations] == ["ok", "failed", "refused", "interrupted"]
    ok, failed, refused, interrupted = operations
    assert ok["error"] is None
    assert isinstance(ok["duration_seconds"], float)
    assert failed["error"] == "RuntimeError: device went away"
    assert refused["summary"] == "port 200 out of range"
    assert interrupted["op"] == "crashed0001"
    assert interrupted["duration_seconds"] is None
    assert interrupted["user"] == "someone"
    assert [len(o["records"]) for o in operations] == [2, 2, 1, 1]
    keys = set(all_keys(document, skip=frozenset({"records"})))
    assert all(SNAKE_CASE.match(key) for key in keys), keys


def test_history_reads_the_journal_named_by_the_inventory(msoctl: Msoctl,
                                                          inventory: Path) -> None:
    fill_journal(inventory.parent / "journal.sqlite")
    result = msoctl("history", "-o", "json")
    assert result.code == 0, result
    document = json.loads(result.out)
    assert document["journal"] == str(inventory.parent / "journal.sqlite")
    assert len(document["operations"]) == 4


def test_journal_environment_variable_overrides_the_inventory(
        msoctl: Msoctl, inventory: Path, workdir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fill_journal(inventory.parent / "journal.sqlite")
    other = workdir / "other.sqlite"
    monkeypatch.setenv("MSOCTL_JOURNAL", str(other))
    result = msoctl("history")
    assert result.out == f"no changes in {other}\n"


# ---- the installed console script -----------------------------------------------------------


def test_console_script_prints_no_traceback_on_a_bad_inventory(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "msoctl"
    if not script.exists():
        pytest.skip(f"no msoctl console script beside {sys.executable}")
    bad = tmp_path / "inventory.yaml"
    bad.write_text(textwrap.dedent("""\
        devices:
          - name: ocs-a
            kind: ocs
            transport: visa
            address: TCPIP::h::5025::SOCKET
            timeout_seconds: soon
        """))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MSOCTL_INVENTORY": str(bad)}
    done = subprocess.run([str(script), "inventory", "check"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr == (f"error: {bad}:6: device 'ocs-a': field 'timeout_seconds': "
                           "must be a number, got 'soon'\n")


@pytest.mark.parametrize(("signalled", "code", "said"), [
    (KeyboardInterrupt, 130, "error: interrupted"),
    ("terminated", 143, "error: terminated"),
    (None, 1, "error: internal error: RuntimeError"),
])
def test_a_signal_wrapped_by_an_import_exits_as_the_signal(
        capsys: pytest.CaptureFixture[str], signalled: Any, code: int, said: str) -> None:
    """Ctrl-C (or SIGTERM) landing while a module is imported can surface as another
    exception raised from it (a class body's __set_name__ turns it into RuntimeError): it
    is still an interruption, exit 130 (143), not an internal error."""
    import click

    from msoctl import interrupts
    from msoctl.cli.exits import invoke

    cause = (interrupts.Terminated() if signalled == "terminated"
             else None if signalled is None else signalled())

    @click.group()
    def group() -> None:
        pass

    @group.command()
    def work() -> None:
        try:
            raise cause if cause is not None else ValueError("a bug")
        except BaseException as error:
            raise RuntimeError("Error calling __set_name__ on 'cached_property'") from error

    assert invoke(group, ["work"]) == code
    err = capsys.readouterr().err
    assert err.startswith(said) and err.count("\n") == 1
