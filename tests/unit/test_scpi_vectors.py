"""Golden SCPI vectors (tests/vectors/ocs_scpi.txt) against the OCS table and emulator.

The vectors are written from the public sources (the Polatis-family command tree,
IEEE 488.2, SCPI-99), not from our code: they check the declarative command table
of drivers/ocs/commands.py (every spec table is checked against golden vectors)
and run short transcripts through the emulator's real parser and OCS model. The
file format is described at its top.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from drivers.ocs.commands import COMMANDS
from emulators.clock import SteppedClock
from emulators.faults import Fault
from emulators.ocs.model import OcsDevice
from emulators.ocs.scpi import make_interpreter
from emulators.optics.model import OpticalModel
from emulators.scpi.parser import CommandTree, ScpiInterpreter
from tests.support.paths import VECTORS as VECTOR_DIR
from tests.support.scpi_vectors import HeaderVector, header_vector, vector_lines

VECTORS = VECTOR_DIR / "ocs_scpi.txt"

# Commands of this project's own :OXC:LC subtree (documented in commands.py);
# no published manual lists them, so they have no golden vector.
EXTENSIONS = {"lc_temperature", "lc_switch_time", "insertion_loss"}


@dataclass
class Step:
    line: int
    kind: str  # "send", "fault", "wait", "client"
    text: str
    expect: tuple[str, str] | None = None  # (mode, text): "exact" | "prefix" | "regex"


@dataclass
class Case:
    line: int
    title: str
    size: int = 64
    reply_form: str = "polatis"
    power_monitors: bool = True
    plain: bool = False
    error_extras: bool = True
    steps: list[Step] = field(default_factory=list)


def load_vectors(path: Path = VECTORS) -> tuple[list[HeaderVector], list[Case]]:
    headers: list[HeaderVector] = []
    cases: list[Case] = []
    case: Case | None = None
    for number, line, where in vector_lines(path):
        if line.startswith("header "):
            headers.append(header_vector(number, line, where))
            case = None
        elif line.startswith("case "):
            case = Case(number, line[5:].strip())
            cases.append(case)
        elif case is None:
            raise ValueError(f"{where}: a step outside any case: {line!r}")
        elif line.startswith("size "):
            case.size = int(line[5:])
        elif line.startswith("form "):
            case.reply_form = line[5:].strip()
        elif line.strip() == "no monitors":
            case.power_monitors = False
        elif line.strip() == "plain":
            case.plain = True
        elif line.strip() == "no error extras":
            case.error_extras = False
        elif line.startswith("fault "):
            case.steps.append(Step(number, "fault", line[6:].strip()))
        elif line.startswith("wait "):
            case.steps.append(Step(number, "wait", line[5:].strip()))
        elif line.startswith("client "):
            case.steps.append(Step(number, "client", line[7:].strip()))
        elif line.startswith("> "):
            case.steps.append(Step(number, "send", line[2:]))
        elif line.startswith("<~ ") or line.startswith("< "):
            if not case.steps or case.steps[-1].kind != "send" or case.steps[-1].expect:
                raise ValueError(f"{where}: a reply line must follow a '>' line")
            if line.startswith("<~ "):
                expect = ("regex", line[3:])
            elif line.endswith("..."):
                expect = ("prefix", line[2:-3])
            else:
                expect = ("exact", line[2:])
            case.steps[-1].expect = expect
        else:
            raise ValueError(f"{where}: cannot read {line!r}")
    return headers, cases


HEADERS, CASES = load_vectors()
TREE = CommandTree(COMMANDS)


def test_vector_file_is_not_empty() -> None:
    assert len(HEADERS) >= 45
    assert len(CASES) >= 50


def test_every_command_has_a_golden_vector_or_is_a_documented_extension() -> None:
    covered = {vector.key for vector in HEADERS}
    assert len(covered) == len(HEADERS), "a key appears twice in the vectors"
    assert covered - set(COMMANDS) == set(), "vectors name commands the table lacks"
    assert set(COMMANDS) - covered == EXTENSIONS
    for key in EXTENSIONS:
        assert COMMANDS[key].header.startswith(":OXC:LC:")


@pytest.mark.parametrize("vector", HEADERS, ids=lambda v: v.key)
def test_command_table_matches_the_reference(vector: HeaderVector) -> None:
    command = COMMANDS[vector.key]
    assert command.header == vector.long, f"vectors line {vector.line}"
    assert command.short() == vector.short, f"vectors line {vector.line}"
    assert tuple(p.rstrip("?") for p in command.params) == vector.params


def _short(header: str) -> str:
    """The short form of a long-form header: the capitals of each node."""
    if header.startswith("*"):
        return header
    nodes = header.rstrip("?").split(":")[1:]
    return "".join(":" + "".join(ch for ch in node if not ch.islower()) for node in nodes) + (
        "?" if header.endswith("?") else "")


def _spellings(vector: HeaderVector) -> set[str]:
    """Every way to write the header: long and short, any case, each default node
    (in brackets, SCPI-99 vol. 1 ch. 6) written out or left out."""
    written_out = vector.long.replace("[", "").replace("]", "")
    left_out = re.sub(r"\[[^]]*\]", "", vector.long)
    assert _short(left_out) == vector.short, f"vectors line {vector.line}"
    forms = {written_out, left_out, _short(written_out), vector.short}
    return {spelling for form in forms for spelling in (form, form.upper(), form.lower())}


@pytest.mark.parametrize("vector", HEADERS, ids=lambda v: v.key)
def test_every_spelling_of_a_header_resolves_to_its_command(vector: HeaderVector) -> None:
    for spelling in _spellings(vector):
        key, _ = TREE.resolve(spelling, [])
        assert key == vector.key, f"{spelling!r} resolved to {key!r}"


def _check_reply(step: Step, reply: str | None) -> None:
    where = f"{VECTORS.name}:{step.line}: {step.text!r}"
    if step.expect is None:
        assert reply is None, f"{where} replied {reply!r}, expected no reply"
        return
    mode, text = step.expect
    assert reply is not None, f"{where} gave no reply"
    if mode == "exact":
        assert reply == text, f"{where} replied {reply!r}"
    elif mode == "prefix":
        assert reply.startswith(text), f"{where} replied {reply!r}"
    else:
        assert re.fullmatch(text, reply), f"{where} replied {reply!r}, expected /{text}/"


async def _run(case: Case) -> None:
    clock = SteppedClock()
    device = OcsDevice("ocs-v", OpticalModel(clock), size=case.size, serial="VECTOR-0001",
                       reply_form=case.reply_form, power_monitors=case.power_monitors,
                       extensions=not case.plain, alarms=not case.plain,
                       identity_form="polatis" if case.plain else "msoctl",
                       error_extras=case.error_extras)
    clients: dict[str, ScpiInterpreter] = {}
    interpreter = clients.setdefault("A", make_interpreter(device))
    for step in case.steps:
        if step.kind == "fault":
            kind, _, target = step.text.partition(" ")
            device.faults.inject(Fault(kind, target=target or None))
        elif step.kind == "wait":
            clock.advance(float(step.text))
        elif step.kind == "client":
            interpreter = clients.setdefault(step.text, make_interpreter(device))
        else:
            _check_reply(step, await interpreter.execute(step.text))


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"line{c.line}")
def test_transcript(case: Case) -> None:
    assert case.steps, f"case at line {case.line} has no steps"
    asyncio.run(_run(case))


def test_the_reader_rejects_a_reply_without_a_message(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("case orphan\n< 1\n", encoding="ascii")
    with pytest.raises(ValueError, match=r"bad\.txt:2"):
        load_vectors(bad)
