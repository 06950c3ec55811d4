"""Golden vectors of the OCS's loss-of-light alarms (tests/vectors/ocs_alarms.txt).

Written from the dialect's description (docs/dialects/ocs.md, "Loss-of-light alarms"),
SCPI-99 and IEEE 488.2, not from the code: they check the alarm command table
(drivers/ocs/commands.py ALARM_COMMANDS), the emulator's parser and alarm logic with
the lines it pushes (emulators/ocs/alarms.py, alarm_server.py), and the driver's
reading of those lines (drivers/ocs/alarms.py) -- each side against the text, never
against the other. The file's format is described at its top.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

import pytest

from drivers.errors import ProtocolError
from drivers.ocs.alarms import (
    Heartbeat,
    MapLine,
    PortLine,
    Snapshot,
    map_digest,
    parse_alarm_line,
)
from drivers.ocs.commands import ALARM_COMMANDS, COMMANDS
from drivers.ocs.types import LosEvent
from emulators.clock import SteppedClock
from emulators.ocs.alarm_server import event_line, map_line
from emulators.ocs.alarms import AlarmEvent
from emulators.ocs.model import OcsDevice
from emulators.ocs.scpi import make_interpreter
from emulators.optics.model import OpticalModel, Source
from emulators.scpi.parser import CommandTree
from tests.support.paths import VECTORS as VECTOR_DIR
from tests.support.scpi_vectors import HeaderVector, header_vector, vector_lines

VECTORS = VECTOR_DIR / "ocs_alarms.txt"


@dataclass(frozen=True)
class Decode:
    line: int
    text: str
    meaning: str


@dataclass(frozen=True)
class Announce:
    line: int
    pairs: dict[int, int]
    seconds: float
    text: str


@dataclass
class Case:
    line: int
    title: str
    alarms: bool = True
    steps: list[tuple[int, str, str]] = field(default_factory=list)  # (line, kind, text)


def _load() -> tuple[list[HeaderVector], list[Decode], list[Announce], list[Case]]:
    headers: list[HeaderVector] = []
    decodes: list[Decode] = []
    announces: list[Announce] = []
    cases: list[Case] = []
    case: Case | None = None
    for number, line, where in vector_lines(VECTORS):
        if line.startswith("header "):
            headers.append(header_vector(number, line, where))
            case = None
        elif line.startswith("decode "):
            text, sep, meaning = line[7:].partition(" => ")
            assert sep, f"{where}: decode needs LINE => MEANING"
            decodes.append(Decode(number, text.strip(), meaning.strip()))
            case = None
        elif line.startswith("announce "):
            given, sep, text = line[9:].partition(" => ")
            assert sep, f"{where}: announce needs PAIRS SECONDS => LINE"
            listed, seconds = given.split()
            pairs = {} if listed == "-" else {
                int(i): int(e) for i, e in (pair.split(":") for pair in listed.split(","))}
            announces.append(Announce(number, pairs, float(seconds), text.strip()))
            case = None
        elif line.startswith("case "):
            case = Case(number, line[5:].strip())
            cases.append(case)
        elif case is None:
            raise ValueError(f"{where}: a step outside any case: {line!r}")
        elif line.strip() == "no alarms":
            case.alarms = False
        else:
            kind, _, text = line.partition(" ")
            if kind not in (">", "<", "=", "=~", "light", "evaluate", "wait", "errors"):
                raise ValueError(f"{where}: cannot read {line!r}")
            case.steps.append((number, kind, text))
    return headers, decodes, announces, cases


HEADERS, DECODES, ANNOUNCES, CASES = _load()


def test_every_alarm_command_has_a_vector() -> None:
    assert {h.key for h in HEADERS} == set(ALARM_COMMANDS)
    assert len(HEADERS) == len(ALARM_COMMANDS)
    assert not set(ALARM_COMMANDS) & set(COMMANDS), "the extension is a table of its own"
    assert len(DECODES) >= 10 and len(CASES) >= 8


@pytest.mark.parametrize("vector", HEADERS, ids=lambda v: v.key)
def test_alarm_command_table_matches_the_reference(vector: HeaderVector) -> None:
    command = ALARM_COMMANDS[vector.key]
    assert command.header == vector.long, f"vectors line {vector.line}"
    assert command.short() == vector.short, f"vectors line {vector.line}"
    assert tuple(p.rstrip("?") for p in command.params) == vector.params
    tree = CommandTree({**COMMANDS, **ALARM_COMMANDS})
    for spelling in (vector.long, vector.short):
        for written in (spelling, spelling.upper(), spelling.lower()):
            assert tree.resolve(written, [])[0] == vector.key, written


def _meaning(parsed: object) -> str:
    def dbm(value: float | None) -> str:
        return "none" if value is None else repr(value)

    if parsed is None:
        return "skip"
    if isinstance(parsed, Snapshot):
        return f"snapshot {parsed.sequence} {parsed.count}"
    if isinstance(parsed, PortLine):
        return (f"port {parsed.port} {'los' if parsed.lost else 'ok'} {dbm(parsed.power_dbm)} "
                f"{parsed.device_seconds!r}")
    if isinstance(parsed, LosEvent):
        return (f"event {parsed.sequence} {parsed.port} {'set' if parsed.lost else 'clear'} "
                f"{dbm(parsed.power_dbm)} {parsed.device_seconds!r}")
    if isinstance(parsed, MapLine):
        return f"map {parsed.digest:08X} {parsed.count} {parsed.device_seconds!r}"
    assert isinstance(parsed, Heartbeat)
    return f"heartbeat {parsed.sequence} {parsed.device_seconds!r}"


@pytest.mark.parametrize("vector", DECODES, ids=lambda v: f"line{v.line}")
def test_the_driver_reads_the_alarm_lines(vector: Decode) -> None:
    if vector.meaning == "error":
        with pytest.raises(ProtocolError):
            parse_alarm_line(vector.text, "ocs-v")
        return
    assert _meaning(parse_alarm_line(vector.text, "ocs-v")) == vector.meaning


@pytest.mark.parametrize("vector", [d for d in DECODES if d.text.startswith("EVENT")
                                    and d.meaning != "error"], ids=lambda v: f"line{v.line}")
def test_the_emulator_writes_events_as_the_vectors_do(vector: Decode) -> None:
    """The other way round: an event the emulator formats is the golden line."""
    _, sequence, port, state, power, seconds = vector.meaning.split()
    event = AlarmEvent(int(sequence), int(port), state == "set",
                       None if power == "none" else float(power), float(seconds))
    assert event_line(event) == vector.text


@pytest.mark.parametrize("vector", ANNOUNCES, ids=lambda v: f"line{v.line}")
def test_the_unit_announces_its_map_as_the_vectors_do(vector: Announce) -> None:
    """The emulator's ``MAP`` line for a map, and the driver's CRC of the same map."""
    assert map_line(vector.pairs, vector.seconds) == vector.text
    parsed = parse_alarm_line(vector.text, "ocs-v")
    assert isinstance(parsed, MapLine)
    assert (parsed.digest, parsed.count) == (map_digest(vector.pairs), len(vector.pairs))


async def _run(case: Case) -> None:
    clock = SteppedClock()
    optics = OpticalModel(clock)
    device = OcsDevice("ocs-v", optics, size=8, serial="VECTOR-ALARMS", alarms=case.alarms)
    source = Source("light", {"out": -5.0})
    optics.add(source)
    optics.patch("light:out", "ocs-v:1")
    pushed: list[str] = []
    device.alarms.listen(lambda event: pushed.append(event_line(event)))
    interpreter = make_interpreter(device)
    last_reply: tuple[int, str | bytes | None] | None = None
    for number, kind, text in case.steps:
        where = f"{VECTORS.name}:{number}"
        if kind == ">":
            if last_reply is not None and last_reply[1] is not None:
                raise AssertionError(f"{VECTORS.name}:{last_reply[0]} replied "
                                     f"{last_reply[1]!r}, expected no reply")
            last_reply = (number, await interpreter.execute(text))
            continue
        if kind == "<":
            assert last_reply is not None, f"{where}: a reply without a message"
            assert last_reply[1] == text, f"{where}: replied {last_reply[1]!r}"
            last_reply = None
            continue
        if last_reply is not None and last_reply[1] is not None:
            raise AssertionError(f"{VECTORS.name}:{last_reply[0]} replied {last_reply[1]!r}, "
                                 "expected no reply")
        last_reply = None
        if kind == "light":
            if text in ("on", "off"):
                source.set_enabled("out", text == "on")
            else:
                source.set_power("out", float(text))
        elif kind == "evaluate":
            device.alarms.evaluate()
        elif kind == "wait":
            clock.advance(float(text))
        elif kind in ("=", "=~"):
            if text == "none":
                assert pushed == [], f"{where}: pushed {pushed}"
                continue
            assert pushed, f"{where}: nothing pushed"
            line = pushed.pop(0)
            if kind == "=":
                assert line == text, f"{where}: pushed {line!r}"
            else:
                assert re.fullmatch(text, line), f"{where}: pushed {line!r}, expected /{text}/"
        elif kind == "errors":
            codes = [int(c) for c in text.split(",")] if text != "-" else []
            found = [code for code, _ in interpreter.errors.drain() if code != 0]
            assert found == codes, f"{where}: error queue {found}"
    if last_reply is not None and last_reply[1] is not None:
        raise AssertionError(f"{VECTORS.name}:{last_reply[0]} replied {last_reply[1]!r}")


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"line{c.line}")
def test_transcript(case: Case) -> None:
    assert case.steps, f"case at line {case.line} has no steps"
    asyncio.run(_run(case))
