"""The SCPI session's resynchronisation (drivers/scpi/session.py), against a scripted
unit whose output still holds the replies of a request nobody read: the stream is in
step again only once a probe's marker is the first line after it, so that a stale reply
that happens to be a marker's number is not taken for it."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence

import pytest

from drivers.errors import ProtocolError
from drivers.scpi.session import ScpiSession
from tests.support.scripted import ScriptedTransport

MAP_REPLY = "(@1,2),(@65,66)"


class ScriptedUnit(ScriptedTransport):
    """A transport and the unit behind it, in one: it answers ``*ESE n`` / ``*ESE?`` and
    the map query as a unit does, one program message at a time, after the ``stale``
    lines still in its output (a console keeps them across a reconnect)."""

    def __init__(self, stale: Sequence[str]):
        super().__init__(stale)
        self.enable = 0
        self.probes: list[str] = []

    def write(self, data: bytes) -> None:
        for message in data.decode("ascii").splitlines():
            for unit in message.split(";"):
                header, _, argument = unit.strip().partition(" ")
                if header == "*ESE":
                    self.enable = int(argument)
                    self.probes.append(message)
                elif header == "*ESE?":
                    self.output.append(str(self.enable))
                elif header == ":OXC:SWIT:CONN:STAT?":
                    self.output.append(MAP_REPLY)


class Markers(random.Random):
    """Hands out the markers given, in order (each must be one the session allows)."""

    def __init__(self, markers: Sequence[int]):
        super().__init__(0)
        self.markers = deque(markers)

    def choice(self, seq):  # type: ignore[no-untyped-def, override]
        chosen = self.markers.popleft()
        assert chosen in seq, (chosen, "not a marker the session would pick now")
        return chosen


def session(unit: ScriptedUnit, markers: Sequence[int]) -> ScpiSession:
    made = ScpiSession(unit, device="ocs-scripted")
    made._marker = Markers(markers)
    made._suspect = True  # as an abandoned request leaves it
    return made


def test_stale_replies_are_read_off_and_a_second_probe_confirms() -> None:
    # an abandoned replace-map: its *OPC?, its error queue, its read-back
    unit = ScriptedUnit(["1", '0,"No error"', "(@1),(@65)"])
    made = session(unit, [5, 9])
    assert made.query(":OXC:SWIT:CONN:STAT?") == MAP_REPLY
    assert unit.probes == ["*ESE 5;*ESE?", "*ESE 9;*ESE?", "*ESE 0"]


def test_a_stale_reply_equal_to_the_marker_is_not_taken_for_it() -> None:
    # The first stale line is the very number of the first marker: read as the probe's
    # answer, the next query would take the error queue's reply for its own.
    unit = ScriptedUnit(["7", '0,"No error"', "(@1),(@65)"])
    made = session(unit, [7, 9, 11])
    assert made.query(":OXC:SWIT:CONN:STAT?") == MAP_REPLY
    assert unit.probes == ["*ESE 7;*ESE?", "*ESE 9;*ESE?", "*ESE 11;*ESE?", "*ESE 0"]
    assert not unit.output


def test_a_fresh_connection_is_in_step_after_two_probes() -> None:
    unit = ScriptedUnit([])
    made = session(unit, [200, 3])
    assert made.query(":OXC:SWIT:CONN:STAT?") == MAP_REPLY
    assert unit.opened == 1 and unit.probes == ["*ESE 200;*ESE?", "*ESE 3;*ESE?", "*ESE 0"]


def test_markers_are_never_the_commonest_replies() -> None:
    # *OPC? answers 1 and a boolean 0: the session never probes with either, and never
    # with the marker just used.
    unit = ScriptedUnit(["1"])
    made = ScpiSession(unit, device="ocs-scripted")
    chosen: list[int] = []

    class Spy(random.Random):
        def choice(self, seq):  # type: ignore[no-untyped-def, override]
            assert 0 not in seq and 1 not in seq and (not chosen or chosen[-1] not in seq)
            chosen.append(seq[0])
            return seq[0]

    made._marker = Spy()
    made.resync()
    assert chosen == [2, 3]


def test_a_unit_that_never_answers_the_marker_is_given_up() -> None:
    unit = ScriptedUnit(["1"] * 200)  # a flood of stale lines: more than it will read
    made = session(unit, list(range(2, 100)))
    with pytest.raises(ProtocolError, match="could not resynchronise"):
        made.query(":OXC:SWIT:CONN:STAT?")
