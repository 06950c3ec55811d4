"""Every console example of README.md and docs/ runs against the lab and says what it
prints (tests/support/docs_examples.py reads them from the Markdown, so a new example is
run as soon as it is written).

One test per Markdown file: its examples run in order, in a directory of the file's own
whose ``lab-state`` is the module's lab (so ``lab-state/inventory.yaml`` and the lab's
secrets are where the examples say), with ``MSOCTL_INVENTORY`` set to it. Before each
example the lab is put back as a new lab has it (tests/support/reset.py), unless the
example ``continues`` from the one before; ``lab with link-1 up`` then brings link-1 up
on its working span with ``msoctl fabric apply``.

``msoctl`` runs in this process, except what runs in the foreground until Ctrl-C
(``lab up``, ``protect run``, ``exporter``, ``--watch``): that runs as a process of its
own, as in another shell, until the end of its example (or, in an example that the next
one continues, of the last example continuing it), then gets a SIGINT and must exit 0;
its transcript, if it has one, is compared then. ``lab up`` runs in an empty directory
of its own, so that it starts a second lab rather than meet the first one's lock. While
such a process runs, the commands after it are typed a second apart, as an operator
would, and ``protect run`` counts as started once ``protect status`` shows its
controller running with its protection span lit.

An example that cannot run here carries ``<!-- example: not run (why) -->``; the count
of those run is checked to stay large.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from emulators.lab import Lab
from tests.support.cli import Msoctl
from tests.support.docs_examples import (
    ROOT,
    Command,
    Example,
    ExampleError,
    collapse,
    examples,
    markdown_files,
    matches,
)
from tests.support.reset import reset_lab

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

def _pages() -> list[str]:
    """The Markdown files with an example to run (or that do not parse: their test says
    why)."""
    pages = []
    for path in markdown_files():
        try:
            found = examples(path)
        except ExampleError:
            found = [Example("", 0, "sh", "")]
        if any(example.file is None and not example.not_run for example in found):
            pages.append(path.relative_to(ROOT).as_posix())
    return pages


PAGES = _pages()
MIN_RUN = 40  # examples run, at least: a fall below it means examples were switched off
PAUSE_SECONDS = 1.0  # between commands typed while a foreground process runs
READY_SECONDS = 30.0
INTENT_LINK_UP = "links:\n  link-1: {span: working}\n"


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


def _all_examples() -> list[Example]:
    return [example for path in markdown_files() for example in examples(path)]


def test_every_example_is_labelled_and_most_run() -> None:
    """The Markdown parses (every directive known, every block of commands labelled), and
    the examples not run are few, each with its reason."""
    try:
        found = [example for example in _all_examples() if example.file is None]
    except ExampleError as error:
        pytest.fail(str(error))
    run = [example for example in found if example.not_run is None]
    skipped = [f"{example.where}: {example.not_run}" for example in found if example.not_run]
    commands = sum(len(example.commands) for example in run)
    print(f"{len(run)} examples run ({commands} commands), {len(skipped)} not run:",
          *skipped, sep="\n  ")
    assert len(run) >= MIN_RUN, f"only {len(run)} examples run"
    assert len(skipped) < len(run) / 2, skipped


def test_no_page_points_outside_the_repository() -> None:
    for path in markdown_files():
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)", text):
            if "://" in target or target.startswith("mailto:"):
                continue
            resolved = (path.parent / target).resolve()
            assert resolved.is_relative_to(ROOT), f"{path}: {target} leaves the repository"


@dataclass
class Foreground:
    """An ``msoctl`` running as in a shell of its own."""

    command: Command
    process: subprocess.Popen[bytes]
    output_path: Path
    example: Example

    def output(self) -> str:
        return self.output_path.read_text(encoding="utf-8", errors="replace")


@dataclass
class Page:
    """One Markdown file's examples running: its directory, the processes in the
    foreground, what went wrong."""

    lab: Lab
    msoctl: Msoctl
    directory: Path
    monkeypatch: pytest.MonkeyPatch
    failures: list[str] = field(default_factory=list)
    foreground: list[Foreground] = field(default_factory=list)
    typed: float = 0.0  # when the last command ended

    def shown(self, text: str) -> str:
        """Output with this test's paths as the examples write them."""
        for real, written in ((str(self.lab.state_dir.resolve()), "lab-state"),
                              (str(self.lab.state_dir), "lab-state"),
                              (str(self.directory.resolve()) + "/", ""),
                              (str(self.directory) + "/", "")):
            text = text.replace(real, written)
        return text

    def fail(self, where: str, why: str) -> None:
        self.failures.append(f"{where}: {why}")

    # ---- one example ----------------------------------------------------------------------

    def run(self, example: Example) -> None:
        if not example.continues:
            self.stop_foreground()
            reset_lab(self.lab)
            if example.lab == "link-1 up":
                self.bring_link_up(example)
        last = len(example.commands) - 1
        for index, command in enumerate(example.commands):
            expected_exit = example.exit_code if index == last else 0
            if self.foreground:
                time.sleep(max(0.0, self.typed + PAUSE_SECONDS - time.monotonic()))
            ok = self.one(example, command, expected_exit)
            self.typed = time.monotonic()
            if not ok:
                break

    def bring_link_up(self, example: Example) -> None:
        intent = self.directory / ".link-up.yaml"
        intent.write_text(INTENT_LINK_UP)
        result = self.msoctl("fabric", "apply", str(intent))
        if result.code != 0:
            self.fail(example.where, f"bringing link-1 up failed: {result.err}")

    def one(self, example: Example, command: Command, expected_exit: int) -> bool:
        where = f"{example.path}:{command.line}"
        text = command.text
        if example.language != "console" and text.startswith("export "):
            name, _, value = text.removeprefix("export ").partition("=")
            value = " ".join(shlex.split(value))
            self.monkeypatch.setenv(name, os.path.expandvars(value.replace(
                "$PWD", str(self.directory))))
            return True
        inner = re.fullmatch(r'eval "\$\((msoctl [^)]*)\)"', text)
        if inner:
            text = inner[1]
        words = shlex.split(text)
        if not words or words[0] != "msoctl" or "|" in words:
            self.fail(where, f"cannot run '{command.text}' here: mark the block "
                      "<!-- example: not run (why) -->")
            return False
        args = words[1:]
        if _runs_until_interrupted(args):
            return self.start_foreground(example, command, args)
        target = None
        if ">" in args:
            at = args.index(">")
            args, target = args[:at], args[at + 1]
        result = self.msoctl(*args)
        if target is not None:
            (self.directory / target).write_text(result.out)
        output = self.shown(result.out + result.err)
        if result.code != expected_exit:
            self.fail(where, f"'{command.text}' exited {result.code}, not {expected_exit}:"
                      f"\n{output}")
            return False
        if command.expected and not matches(command.expected, output):
            self.fail(where, f"'{command.text}' printed what the example does not show:\n"
                      f"--- the example\n" + "\n".join(command.expected) +
                      f"\n--- the program\n{output}")
        return True

    # ---- the foreground -------------------------------------------------------------------

    def start_foreground(self, example: Example, command: Command, args: list[str]) -> bool:
        if args[:1] == ["exporter"] and "--listen" not in args:
            # the example's default port (9810) may be another program's on this host: a
            # port the kernel picks, as the test's own exporters do
            args = [*args, "--listen", "127.0.0.1:0"]
        directory = self.directory
        if args[:2] == ["lab", "up"]:
            directory = self.directory / f".shell-{command.line}"
            directory.mkdir()
        output_path = self.directory / f".foreground-{command.line}.out"
        with output_path.open("wb") as sink:
            process = subprocess.Popen(
                [sys.executable, "-m", "msoctl", *args], cwd=directory, stdout=sink,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=dict(os.environ))
        running = Foreground(command, process, output_path, example)
        self.foreground.append(running)
        where = f"{example.path}:{command.line}"
        deadline = time.monotonic() + READY_SECONDS
        while not self.ready(running, args):
            if process.poll() is not None:
                self.fail(where, f"'{command.text}' ended ({process.returncode}) before "
                          f"it was ready:\n{self.shown(running.output())}")
                return False
            if time.monotonic() > deadline:
                self.fail(where, f"'{command.text}' not ready within {READY_SECONDS:g} s:"
                          f"\n{self.shown(running.output())}")
                return False
            time.sleep(0.1)
        return True

    def ready(self, running: Foreground, args: list[str]) -> bool:
        output = running.output()
        if args[:2] == ["protect", "run"]:
            if not output.strip():
                return False
            status = self.msoctl("protect", "status", "-o", "json")
            if status.code != 0:
                return False
            links = json.loads(status.out)["links"]
            return all(link["controller"]["state"] == "running"
                       and link["spans"]["protection"]["light"] == "lit" for link in links)
        if args[:2] == ["lab", "up"]:
            return "stop with Ctrl-C" in output
        return bool(output.strip())

    def stop_foreground(self) -> None:
        while self.foreground:
            running = self.foreground.pop(0)
            where = f"{running.example.path}:{running.command.line}"
            running.process.send_signal(signal.SIGINT)
            try:
                code = running.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                running.process.kill()
                running.process.wait()
                self.fail(where, f"'{running.command.text}' did not stop on SIGINT")
                continue
            output = self.shown(running.output())
            if code != 0:
                self.fail(where, f"'{running.command.text}' exited {code} on SIGINT:\n"
                          f"{output}")
            elif running.command.expected and not matches(running.command.expected, output):
                self.fail(where, f"'{running.command.text}' printed what the example does "
                          "not show:\n--- the example\n" + "\n".join(running.command.expected)
                          + f"\n--- the program\n{output}")


def _runs_until_interrupted(args: list[str]) -> bool:
    words = [arg for arg in args if not arg.startswith("-")]
    exporter = args[:1] == ["exporter"] and (len(args) == 1 or args[1].startswith("-"))
    return "--watch" in args or words[:2] in (["lab", "up"], ["protect", "run"]) or exporter


@pytest.mark.parametrize("page", PAGES)
def test_the_examples_of(page: str, lab: Lab, msoctl: Msoctl, tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Each example of ``page`` runs: every command's exit status, and what a transcript
    shows of its output."""
    found = examples(ROOT / page)
    to_run = [example for example in found if example.file is None and not example.not_run]
    directory = tmp_path / "page"
    directory.mkdir()
    (directory / "lab-state").symlink_to(lab.state_dir.resolve(), target_is_directory=True)
    for example in found:
        if example.file is not None:
            (directory / example.file).write_text(example.body)
    monkeypatch.chdir(directory)
    monkeypatch.setenv("MSOCTL_INVENTORY", str(directory / "lab-state" / "inventory.yaml"))
    monkeypatch.setenv("COLUMNS", "80")
    running = Page(lab, msoctl, directory, monkeypatch)
    try:
        for example in to_run:
            running.run(example)
    finally:
        running.stop_foreground()
    assert not running.failures, "\n\n".join(running.failures)


def test_the_comparison_ignores_what_varies() -> None:
    """Numbers, times and wrapping vary; names, words and integers do not."""
    expected = ["link-1  span-2  lit  switch ok 12-06 20:29:06",
                "  light verified: 38.9 ms after detection", "..."]
    assert matches(expected, "link-1 span-2   lit  switch ok 11-30 08:28:52\n light "
                             "verified:\n 45.2 ms after detection\nmore")
    assert not matches(expected, "link-1 span-1 lit switch ok 11-30 08:28:52 light "
                                 "verified: 45.2 ms after detection")
    assert not matches(["1 to remove"], "2 to remove")
    assert matches(["a", "...", "z"], "a\nb\nc\nz")
    assert matches(["switch (...); verified"], "switch (span-1 b->a: x); verified")
    assert not matches(["a"], "a\nb")
    assert collapse(" a \n  b ") == "a b"
