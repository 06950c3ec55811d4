"""The CLI as operators use it: tables within 80 columns (``-o wide`` for every column),
``-o yaml`` beside ``-o json``, states coloured on a terminal, ``--watch``, shell
completion, global options after the subcommand, the user in ``history``, and an error
that names its device once. Against one emulated lab for the module, through the real
protocols (SCPI, CMIS over the I2C bridge, NETCONF, SNMPv3), in this process or as
``python -m msoctl`` in a process of its own (on a pseudo-terminal where a terminal is
what is tested).
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import yaml

from emulators.faults import Fault
from emulators.lab import Lab
from msoctl.cli import COMMANDS, cli, colour_wanted
from msoctl.cli.output import ELLIPSIS, table
from msoctl.journal import Journal
from tests.support.cli import Msoctl, in_process
from tests.support.lab import reset_ocs
from tests.support.paths import ROOT

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
GLOBAL_OPTIONS = {"-i", "--inventory", "--journal", "-v", "--verbose", "--debug", "--color"}


@pytest.fixture
def msoctl(module_lab: Lab, capsys: pytest.CaptureFixture[str],
           monkeypatch: pytest.MonkeyPatch) -> Msoctl:
    """``msoctl ARGS`` in this process against the module's lab."""
    monkeypatch.setenv("MSOCTL_INVENTORY", str(module_lab.state_dir / "inventory.yaml"))
    monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return in_process(capsys)


def environment(lab: Lab, **changes: str | None) -> dict[str, str]:
    """This process's environment for a ``python -m msoctl`` of its own, on ``lab``."""
    env = {k: v for k, v in os.environ.items() if k not in ("MSOCTL_JOURNAL", "NO_COLOR")}
    env["MSOCTL_INVENTORY"] = str(lab.state_dir / "inventory.yaml")
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def on_a_terminal(args: list[str], env: dict[str, str], *, seconds: float = 60.0
                  ) -> tuple[int, str]:
    """``python -m msoctl ARGS`` with stdout and stderr on a pseudo-terminal (80x24):
    its exit code and all it wrote there."""
    controller, terminal = pty.openpty()
    os.set_blocking(controller, False)
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    process = subprocess.Popen([sys.executable, "-m", "msoctl", *args], stdin=subprocess.DEVNULL,
                               stdout=terminal, stderr=terminal, env=env, cwd=ROOT)
    os.close(terminal)
    written = b""
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # EIO: the child closed its end
                    chunk = b""
                if not chunk and process.poll() is not None:
                    break
                written += chunk
            elif process.poll() is not None:
                break
        code = process.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
    return code, written.decode("utf-8", "replace").replace("\r\n", "\n")


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


# ---- tables: 80 columns, -o wide ----------------------------------------------------------

TABLE_COMMANDS = [
    ["inventory", "show"], ["link", "list"], ["lab", "status"], ["ocs", "status", "ocs-a"],
    ["ocs", "ports", "ocs-a"], ["ocs", "power", "ocs-a"], ["amp", "status", "amp-1"],
    ["amp", "thresholds", "amp-1"], ["path", "show"], ["protect", "status"],
    ["switch", "cc", "show", "sw-a"], ["switch", "counters", "sw-a", "--all-queues"],
    ["switch", "headroom", "--distance", "30km", "--speed", "400G"],
    ["telemetry", "cpo", "sw-a"], ["telemetry", "cpc", "sw-b", "--interval", "0.5"],
    ["history"], ["design", "cost", "--gpus", "16k,64k", "--what-if", "aec,lpo"],
]


@pytest.mark.parametrize("args", TABLE_COMMANDS, ids=" ".join)
def test_every_table_command_fits_80_columns(msoctl: Msoctl, args: list[str]) -> None:
    """Each show command's default output, against the lab: no line wider than 80."""
    result = msoctl(*args)
    assert result.code == 0, result.err
    assert result.out.strip()
    too_wide = [line for line in result.out.splitlines() if len(line) > 80]
    assert too_wide == []


WIDE_ONLY = [
    (["ocs", "ports", "ocs-a"], ["DIRECTION"]),
    (["ocs", "power", "ocs-a", "1", "65"], ["DIRECTION"]),
    (["inventory", "show"], ["CONSOLE", "LABELS"]),
    (["path", "show", "link-1"], ["BUDGET"]),
    (["switch", "counters", "sw-a"], ["PFC RECEIVED"]),
    (["switch", "headroom", "--distance", "30km", "--speed", "400G"], ["HOW"]),
    (["lab", "status"], ["MONITOR_DBM"]),
    (["telemetry", "cpo", "sw-a"], ["MODE"]),
]


@pytest.mark.parametrize(("args", "wide_only"), WIDE_ONLY,
                         ids=[" ".join(args) for args, _ in WIDE_ONLY])
def test_wide_shows_the_columns_the_table_leaves_out(msoctl: Msoctl, args: list[str],
                                                     wide_only: list[str]) -> None:
    narrow = msoctl(*args)
    wide = msoctl(*args, "-o", "wide")
    assert narrow.code == wide.code == 0, narrow.err + wide.err
    for title in wide_only:
        assert title not in narrow.out
        assert title in wide.out


def test_the_widest_text_column_is_cut_and_numbers_never_are() -> None:
    headers = ["port", "name", "why", "power dBm"]
    rows = [[1, "sw-a:Ethernet1", "x" * 60, -7.25], [65, "sw-b:Ethernet1", "short", 10.5]]
    lines = table(headers, rows, wide=False).splitlines()
    assert max(len(line) for line in lines) == 80
    assert lines[1].split()[2].endswith(ELLIPSIS)  # the widest text column gave way
    assert lines[1].split()[1] == "sw-a:Ethernet1"  # ... and only it, while it could
    assert [line.split()[-1] for line in lines[1:]] == ["-7.25", "10.50"]
    full = table(headers, rows, wide=True).splitlines()
    assert "x" * 60 in full[1] and ELLIPSIS not in "\n".join(full)
    kept = table(headers, rows, wide=False, cut=("name",)).splitlines()
    assert "x" * 60 in kept[1]  # only the columns named may be cut
    assert kept[1].split()[1].endswith(ELLIPSIS) and len(kept[1].split()[1]) == len("NAME") + 2
    numbers = table(["a", "b"], [[10**40, 10**41]], wide=False).splitlines()
    assert numbers[1].split() == [str(10**40), str(10**41)]  # too wide, but whole
    assert table(headers, rows, wide_only=("why",), wide=False).split("\n")[0].split() == [
        "PORT", "NAME", "POWER", "DBM"]


def test_a_column_of_words_that_matter_wraps_under_itself() -> None:
    """A reason or a detail is not cut mid-word at 80 columns: it goes on in lines of its
    own under itself, every word kept, and the table still fits."""
    headers = ["link", "effect", "why"]
    why = ("ocs-a: its working cross-connects are made, but ocs-b does not carry "
           "working, so no light arrives end to end")
    lines = table(headers, [["link-1", "still dark", why], ["link-2", "down", "short"]],
                  wide=False, cut=("why",), wrap=("why",)).splitlines()
    assert max(len(line) for line in lines) <= 80 and ELLIPSIS not in "\n".join(lines)
    column = lines[0].index("WHY")
    first = next(i for i, line in enumerate(lines) if line.startswith("link-1"))
    pieces = [lines[first][column:]] + [line[column:] for line in lines[first + 1:]
                                        if line[:column].strip() == ""]
    assert " ".join(piece.strip() for piece in pieces) == why
    assert lines[-1].startswith("link-2") and lines[-1].endswith("short")
    capped = table(headers, [["link-1", "down", " ".join(["word"] * 60)]], wide=False,
                   cut=("why",), wrap=("why",), wrap_lines=2).splitlines()
    assert len(capped) == 3 and capped[-1].endswith(ELLIPSIS)  # at most the lines asked
    long_word = table(headers, [["link-1", "down", "x" * 200]], wide=False, cut=("why",),
                      wrap=("why",)).splitlines()
    assert len(long_word) == 2 and long_word[1].endswith(ELLIPSIS)  # cut, not broken


# ---- -o yaml: the JSON document ----------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["inventory", "show"], ["link", "list"], ["history", "-n", "5"], ["journal", "info"],
    ["design", "cost", "--gpus", "16k"], ["switch", "cc", "show", "sw-a"],
], ids=" ".join)
def test_yaml_is_the_json_document(msoctl: Msoctl, args: list[str]) -> None:
    as_json = msoctl(*args, "-o", "json")
    as_yaml = msoctl(*args, "-o", "yaml")
    assert as_json.code == as_yaml.code == 0, as_json.err + as_yaml.err
    assert yaml.safe_load(as_yaml.out) == json.loads(as_json.out)
    assert list(yaml.safe_load(as_yaml.out)) == list(json.loads(as_json.out))  # key order


# ---- colour -------------------------------------------------------------------------------


def test_colour_only_on_a_terminal_without_no_color_and_not_dumb() -> None:
    """https://no-color.org: NO_COLOR set and not empty turns colour off; --color always
    and never decide alone."""

    class Terminal:
        def isatty(self) -> bool:
            return True

    class Pipe:
        def isatty(self) -> bool:
            return False

    tty, pipe = Terminal(), Pipe()
    assert colour_wanted("auto", environ={"TERM": "xterm"}, stdout=tty)  # type: ignore[arg-type]
    assert colour_wanted("auto", environ={"NO_COLOR": ""}, stdout=tty)  # type: ignore[arg-type]
    assert not colour_wanted("auto", environ={"NO_COLOR": "1"}, stdout=tty)  # type: ignore[arg-type]
    assert not colour_wanted("auto", environ={"TERM": "dumb"}, stdout=tty)  # type: ignore[arg-type]
    assert not colour_wanted("auto", environ={}, stdout=pipe)  # type: ignore[arg-type]
    assert colour_wanted("always", environ={"NO_COLOR": "1"}, stdout=pipe)  # type: ignore[arg-type]
    assert not colour_wanted("never", environ={}, stdout=tty)  # type: ignore[arg-type]


@pytest.mark.parametrize(("changes", "coloured"), [
    ({"TERM": "xterm"}, True),
    ({"TERM": "xterm", "NO_COLOR": "1"}, False),
    ({"TERM": "dumb"}, False),
])
def test_states_are_coloured_on_a_terminal(module_lab: Lab, changes: dict[str, str],
                                           coloured: bool) -> None:
    """``ocs ports`` on a pseudo-terminal: the ports' state (``enabled``) in green
    (SGR 32, ECMA-48 §8.3.117) unless NO_COLOR or TERM=dumb."""
    code, written = on_a_terminal(["ocs", "ports", "ocs-a"], environment(module_lab, **changes))
    assert code == 0, written
    assert ("\x1b[32menabled" in written) is coloured
    assert (ANSI.search(written) is not None) is coloured


def test_colour_pads_by_the_visible_width(msoctl: Msoctl, tmp_path: Path) -> None:
    """With --color always (here stdout is no terminal) the table is the plain one with
    escapes around the states: the columns line up as they do without colour."""
    path = tmp_path / "journal.sqlite"
    journal = Journal(path)
    with journal.change(device="ocs-a", action="ocs.apply", connections=["1:65"]):
        pass
    journal.refuse(device="ocs-b", action="ocs.connect", reason="port 200 out of range",
                   exit_code=2)
    plain = msoctl("--journal", str(path), "history", "--color", "never")
    painted = msoctl("history", "--journal", str(path), "--color", "always")
    assert plain.code == painted.code == 0
    assert "\x1b[31mrefused\x1b[0m" in painted.out and "\x1b[32mok\x1b[0m" in painted.out
    assert ANSI.sub("", painted.out) == plain.out


# ---- --watch ------------------------------------------------------------------------------


def test_watch_repeats_the_table_separated_by_a_blank_line(msoctl: Msoctl) -> None:
    result = msoctl("ocs", "power", "ocs-a", "1", "2", "--watch", "0.2", "--watch-count", "3")
    assert result.code == 0, result.err
    frames = result.out.rstrip("\n").split("\n\n")
    assert len(frames) == 3
    assert all(frame.splitlines()[0].split() == ["PORT", "POWER", "DBM"] for frame in frames)


def test_watch_prints_one_json_document_per_line_and_yaml_documents(msoctl: Msoctl) -> None:
    result = msoctl("ocs", "power", "ocs-a", "1", "--watch", "0.2", "--watch-count", "2",
                    "-o", "json")
    assert result.code == 0, result.err
    documents = [json.loads(line) for line in result.out.splitlines()]
    assert [d["device"] for d in documents] == ["ocs-a", "ocs-a"]
    assert [len(d["ports"]) for d in documents] == [1, 1]
    result = msoctl("amp", "status", "amp-1", "--watch", "0.2", "--watch-count", "2",
                    "-o", "yaml")
    assert result.code == 0, result.err
    assert [d["device"] for d in yaml.safe_load_all(result.out)] == ["amp-1", "amp-1"]


def test_a_device_error_is_shown_in_its_frame_and_the_watch_goes_on(
        msoctl: Msoctl, module_lab: Lab) -> None:
    """The OCS drops the connection instead of its first reply (SCPI over TCP): that run
    shows the error, the next ones the power again; the watch still ends with exit 0."""
    module_lab.inject("ocs-b", Fault("reset", count=1))
    try:
        result = msoctl("ocs", "power", "ocs-b", "1", "--watch", "0.2", "--watch-count", "3")
    finally:
        module_lab.clear("ocs-b")
    assert result.code == 0, result.err
    frames = result.out.rstrip("\n").split("\n\n")
    assert len(frames) == 3
    assert frames[0].startswith("error: ocs-b: ") and len(frames[0].splitlines()) == 1
    assert [frame.split()[:3] for frame in frames[1:]] == [["PORT", "POWER", "DBM"]] * 2
    module_lab.inject("ocs-b", Fault("reset", count=1))
    try:
        as_json = msoctl("ocs", "power", "ocs-b", "1", "--watch", "0.2", "--watch-count", "2",
                         "-o", "json")
    finally:
        module_lab.clear("ocs-b")
    first, second = (json.loads(line) for line in as_json.out.splitlines())
    assert first["error"].startswith("ocs-b: ") and second["device"] == "ocs-b"


@pytest.mark.parametrize(("args", "says"), [
    (["ocs", "power", "nosuch", "--watch", "0.2"], "no device named 'nosuch'"),
    (["ocs", "power", "ocs-a", "--watch", "0.1"], "0.1 is not in the range"),
    (["ocs", "power", "ocs-a", "--watch", "nan"], "not a finite number"),
    (["ocs", "power", "ocs-a", "--watch-count", "2"], "--watch-count needs --watch"),
])
def test_refused_input_ends_a_watch_at_once(msoctl: Msoctl, module_lab: Lab, args: list[str],
                                            says: str) -> None:
    """Refused before the watch began: exit 2, one line, and not one request to an OCS (a
    watch that never ended would never return: pytest's per-test timeout ends it)."""
    received = {name: device.requests.received for name, device in module_lab.ocs.items()}
    result = msoctl(*args)
    assert result.code == 2
    assert says in one_error_line(result.err)
    assert {name: device.requests.received for name, device in module_lab.ocs.items()} == \
        received


def test_ctrl_c_ends_a_watch_with_exit_0(module_lab: Lab) -> None:
    """``python -m msoctl ... --watch`` until SIGINT: documents on stdout as they come, then
    exit 0 and nothing on stderr."""
    process = subprocess.Popen(
        [sys.executable, "-m", "msoctl", "ocs", "power", "ocs-a", "1", "--watch", "0.2",
         "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=environment(module_lab), cwd=ROOT)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(2)]
        assert [json.loads(line)["device"] for line in lines] == ["ocs-a", "ocs-a"]
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert err == ""
    assert all(json.loads(line)["device"] == "ocs-a" for line in out.splitlines())


def test_on_a_terminal_a_watch_redraws_in_place(module_lab: Lab) -> None:
    """Each run starts with cursor home and erase display (ECMA-48 CUP, ED 2) and a line
    naming what runs and how often."""
    code, written = on_a_terminal(["ocs", "power", "ocs-a", "1", "--watch", "0.2",
                                   "--watch-count", "2"], environment(module_lab, TERM="xterm"))
    assert code == 0, written
    assert written.count("\x1b[H\x1b[2J") == 2
    frames = written.split("\x1b[H\x1b[2J")[1:]
    for frame in frames:
        heading = frame.splitlines()[0]
        assert heading.startswith("every 0.2 s: msoctl ocs power ocs-a 1 (Ctrl-C stops)")
        assert len(heading) <= 80
        assert "POWER DBM" in frame


# ---- shell completion ----------------------------------------------------------------------


def complete(words: str, env: dict[str, str]) -> list[str]:
    """What bash completion offers after ``words`` (click's ``bash_complete`` protocol)."""
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    done = subprocess.run([sys.executable, "-m", "msoctl"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT,
                          env={**env, "_MSOCTL_COMPLETE": "bash_complete", "COMP_WORDS": words,
                               "COMP_CWORD": str(cword)})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return [line.split(",", 1)[1] for line in done.stdout.splitlines() if line]


@pytest.mark.parametrize(("words", "offered"), [
    ("msoctl o", ["ocs"]),
    ("msoctl ocs st", ["status"]),
    ("msoctl ocs status ", ["ocs-a", "ocs-b", "ocs-lab"]),
    ("msoctl amp status ", ["amp-1", "amp-2"]),
    ("msoctl telemetry cpo ", ["sw-a", "sw-b"]),
    ("msoctl switch cc show sw-", ["sw-a", "sw-b", "sw-c", "sw-d"]),
    ("msoctl path show ", ["link-1"]),
    ("msoctl history --device s", ["sw-a", "sw-b", "sw-c", "sw-d"]),
])
def test_completion_offers_commands_and_the_inventorys_names_of_the_right_kind(
        module_lab: Lab, words: str, offered: list[str]) -> None:
    assert complete(words, environment(module_lab)) == offered


def test_completion_of_fault_targets_and_with_the_inventory_after_the_subcommand(
        module_lab: Lab) -> None:
    targets = complete("msoctl lab fault freeze ", environment(module_lab))
    assert {"ocs-a", "amp-1", "sw-a", "sw-a/snmp", "span-1", "span-2"} <= set(targets)
    inventory = str(module_lab.state_dir / "inventory.yaml")
    env = environment(module_lab, MSOCTL_INVENTORY=None)
    assert complete(f"msoctl ocs status -i {inventory} ocs-", env) == [
        "ocs-a", "ocs-b", "ocs-lab"]
    assert complete("msoctl ocs status ocs-", env) == []  # no inventory here


def test_completion_with_a_missing_or_broken_inventory_offers_nothing_and_says_nothing(
        module_lab: Lab, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("devices: [\n", encoding="utf-8")
    for inventory in (tmp_path / "missing.yaml", broken):
        env = environment(module_lab, MSOCTL_INVENTORY=str(inventory))
        assert complete("msoctl ocs status ", env) == []
        assert complete("msoctl lab fault reset ", env) == []


@pytest.mark.parametrize(("shell", "mark"), [
    ("bash", "_MSOCTL_COMPLETE=bash_complete"),
    ("zsh", "_MSOCTL_COMPLETE=zsh_complete"),
    ("fish", "_MSOCTL_COMPLETE=fish_complete"),
])
def test_completion_prints_the_shells_script(msoctl: Msoctl, shell: str, mark: str) -> None:
    result = msoctl("completion", shell)
    assert result.code == 0, result.err
    assert mark in result.out


def test_completion_of_an_unknown_shell_is_refused(msoctl: Msoctl) -> None:
    result = msoctl("completion", "powershell")
    assert result.code == 2
    assert "'powershell' is not one of 'bash', 'zsh', 'fish'" in one_error_line(result.err)
    missing = msoctl("completion")  # click lists the choices a line each: one line here
    assert missing.code == 2
    assert "Choose from: bash, zsh, fish" in one_error_line(missing.err)


# ---- global options after the subcommand ---------------------------------------------------


def _all_commands() -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(cli)

    def walk(path: str, command: click.Command) -> Iterator[tuple[str, click.Command]]:
        yield path, command
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                yield from walk(f"{path} {name}", sub)

    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None
        yield from walk(name, command)


def test_no_command_uses_a_global_options_name_for_something_else() -> None:
    """Every command, at every level, takes the global options, each name once."""
    for path, command in _all_commands():
        names = [opt for param in command.params for opt in (*param.opts,
                                                             *param.secondary_opts)]
        assert len(names) == len(set(names)), (path, sorted(names))
        assert set(names) >= GLOBAL_OPTIONS, path


def test_inventory_journal_and_colour_after_the_subcommand(
        msoctl: Msoctl, module_lab: Lab, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    inventory = str(module_lab.state_dir / "inventory.yaml")
    monkeypatch.delenv("MSOCTL_INVENTORY")
    result = msoctl("ocs", "status", "ocs-a", "-i", inventory)
    assert result.code == 0, result.err
    assert "LCOCS-64x64" in result.out
    later = msoctl("-i", str(tmp_path / "nothing.yaml"), "ocs", "status", "ocs-a", "-i",
                   inventory)
    assert later.code == 0, later.err  # the last one given counts
    empty = tmp_path / "other.sqlite"
    assert msoctl("history", "--journal", str(empty)).out == f"no changes in {empty}\n"
    assert msoctl("history", "--debug", "--journal", str(empty)).code == 0
    assert msoctl("ocs", "ports", "ocs-a", "-i", inventory, "--color", "never").code == 0


def test_verbose_after_the_subcommand_adds_the_detail(msoctl: Msoctl, module_lab: Lab,
                                                      tmp_path: Path) -> None:
    """An OCS address where nothing listens: -v after the subcommand gives the detail line."""
    text = (module_lab.state_dir / "inventory.yaml").read_text(encoding="utf-8")
    port = module_lab.tcp["ocs-a"].port
    dead = tmp_path / "dead.yaml"
    dead.write_text(text.replace(f"127.0.0.1::{port}::", "127.0.0.1::9::"), encoding="utf-8")
    plain = msoctl("ocs", "status", "ocs-a", "-i", str(dead))
    verbose = msoctl("ocs", "status", "ocs-a", "-i", str(dead), "-v")
    assert plain.code == verbose.code == 1
    assert one_error_line(plain.err).startswith("error: ocs-a: ")
    assert verbose.err.startswith(plain.err) and "\n  detail: " in verbose.err


def test_exporter_takes_verbose_after_the_subcommand(module_lab: Lab) -> None:
    """``msoctl exporter -v`` (as the README shows it) serves, and stops on SIGTERM."""
    process = subprocess.Popen([sys.executable, "-m", "msoctl", "exporter", "-v", "--listen",
                                "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=environment(module_lab), cwd=ROOT)
    try:
        assert process.stderr is not None
        for _ in range(50):  # -v logs at INFO: the line may come after others
            line = process.stderr.readline()
            if not line or "msoctl exporter listening on http://127.0.0.1:" in line:
                break
        assert "msoctl exporter listening on http://127.0.0.1:" in line
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err


# ---- history: the user; the device named once -----------------------------------------------


def test_history_shows_the_user_and_names_a_failed_devices_once(msoctl: Msoctl,
                                                                tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    journal = Journal(path)
    journal.append({"op": "op000000001", "event": "intent", "device": "ocs-a",
                    "action": "ocs.port.disable", "user": "alice", "host": "bench-7",
                    "pid": 4242, "ports": [3]})
    journal.append({"op": "op000000001", "event": "result", "device": "ocs-a",
                    "action": "ocs.port.disable", "status": "failed",
                    "error": "DeviceTimeout: ocs-a: no reply within 5 s"})
    rows = msoctl("--journal", str(path), "history").out.splitlines()
    assert rows[0].split() == ["TIME", "DEVICE", "ACTION", "STATUS", "USER", "DETAIL"]
    assert rows[1].split()[2:6] == ["ocs-a", "ocs.port.disable", "failed", "alice"]
    wide = msoctl("--journal", str(path), "history", "-o", "wide").out.splitlines()
    assert wide[1].split()[2:8] == ["ocs-a", "ocs.port.disable", "failed", "alice", "bench-7",
                                    "4242"]
    assert wide[1].endswith("ports 3  DeviceTimeout: no reply within 5 s")
    (operation,) = json.loads(msoctl("--journal", str(path), "history", "-o", "json").out)[
        "operations"]
    assert (operation["user"], operation["host"], operation["pid"]) == ("alice", "bench-7", 4242)
    assert operation["error"] == "DeviceTimeout: ocs-a: no reply within 5 s"  # as journaled


def test_a_refusal_names_its_device_once(msoctl: Msoctl, module_lab: Lab) -> None:
    """Disabling the OCS port that carries link-1 is refused (exit 3): the error line names
    ocs-a once, though the impact it quotes names it too."""
    module_lab.ocs["ocs-a"].add((1, 61), (121, 65))  # link-1 on its working span
    module_lab.ocs["ocs-b"].add((1, 61), (121, 65))
    try:
        result = msoctl("ocs", "port", "disable", "ocs-a", "1")
    finally:
        reset_ocs(module_lab, "ocs-a")
        reset_ocs(module_lab, "ocs-b")
    assert result.code == 3, result.err
    line = one_error_line(result.err)
    assert "link-1 is in service and would go down" in line
    assert line.count("ocs-a") == 1, line


# ---- packaging: an install prints nothing of the project's own -----------------------------


@pytest.mark.slow
def test_an_editable_install_prints_no_build_backend_warning(tmp_path: Path) -> None:
    """What ``make`` runs to install msoctl (pip install -e, PEP 660), here into a fresh
    venv that borrows this environment's packages: no BuildBackendWarning, no warning at
    all from the project's pyproject.toml (PEP 639 licence, editable layout)."""
    import sysconfig

    venv = tmp_path / "venv"  # without pip (and the old setuptools a venv brings with it)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path"
                           "('purelib'))"], capture_output=True, text=True, check=True).stdout
    Path(site.strip(), "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-build-isolation", "--disable-pip-version-check", "-e",
                           str(ROOT)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "BuildBackendWarning" not in said, said
    assert "warning" not in said.lower(), said
