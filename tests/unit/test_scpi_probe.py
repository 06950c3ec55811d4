"""``ScpiSession.probe``: what a unit has, learnt in one write without waiting for a reply
that never comes (SCPI-99 vol. 2 section 21.8: a query that errors sends no reply and
queues its error; ``:SYST:ERR[:NEXT]?`` is the one error query every unit has).

The unit here is scripted apart from the emulators: a queue of errors, ``*CLS``, the
queries it knows and the error each other one queues; every write is kept, so a test
counts what was sent.
"""

from __future__ import annotations

import pytest

from drivers.errors import DeviceRejected, DeviceTimeout
from drivers.scpi.session import ScpiSession
from tests.support.scripted import ScriptedTransport


class MinimalUnit(ScriptedTransport):
    """A unit that answers ``known`` queries, refuses ``refused`` ones with their error
    (no reply), and queues -113 for any other header; ``:SYST:ERR:ALL?`` only when
    ``has_all``."""

    def __init__(self, known: dict[str, str], *, has_all: bool,
                 refused: dict[str, tuple[int, str]] | None = None):
        super().__init__()
        self.known = known
        self.refused = refused or {}
        self.has_all = has_all
        self.queue: list[tuple[int, str]] = []
        self.writes: list[list[str]] = []

    def write(self, data: bytes) -> None:
        lines = data.decode("ascii").splitlines()
        self.writes.append(lines)
        for line in lines:
            for unit in line.split(";"):
                self._execute(unit.strip())

    def _execute(self, unit: str) -> None:
        if unit == "*CLS":
            self.queue.clear()
        elif unit == ":SYST:ERR?":
            code, text = self.queue.pop(0) if self.queue else (0, "No error")
            self.output.append(f'{code},"{text}"')
        elif unit == ":SYST:ERR:ALL?" and self.has_all:
            entries = self.queue or [(0, "No error")]
            self.output.append(",".join(f'{code},"{text}"' for code, text in entries))
            self.queue = []
        elif unit in self.known:
            self.output.append(self.known[unit])
        elif unit in self.refused:
            self.queue.append(self.refused[unit])
        elif unit.endswith("?") or unit.startswith(":"):
            self.queue.append((-113, "Undefined header"))


def session(unit: MinimalUnit) -> ScpiSession:
    return ScpiSession(unit, device="unit")


QUERIES = {"size": ":OXC:SWIT:SIZE?", "boot": ":OXC:BOOT:MODE?", "lc": ":OXC:LC:TEMP?",
           "power": ":PMON:POW? (@1)"}


@pytest.mark.parametrize("has_all", [True, False])
def test_every_probe_in_one_write_and_none_waited_for(has_all: bool) -> None:
    unit = MinimalUnit({":OXC:SWIT:SIZE?": "64,64", ":PMON:POW? (@1)": "(-3.10)"},
                       has_all=has_all, refused={":OXC:LC:TEMP?": (-241, "Hardware missing")})
    scpi = session(unit)
    found = scpi.probe(QUERIES)
    assert len(unit.writes) == 1 and unit.writes[0][0] == "*CLS"
    assert {name: p.supported for name, p in found.items()} == {
        "size": True, "boot": False, "lc": True, "power": True}  # -241: the header exists
    assert found["size"].reply == "64,64" and found["power"].reply == "(-3.10)"
    assert found["boot"].error == (-113, "Undefined header") and found["boot"].reply is None
    assert found["lc"].error == (-241, "Hardware missing")
    assert scpi.all_errors is has_all
    assert scpi.error_query == (":SYST:ERR:ALL?" if has_all else ":SYST:ERR?")
    assert not unit.output  # every reply read: the session is in step
    assert scpi.probe(QUERIES) == found and len(unit.writes) == 1  # kept: asked once
    assert scpi.probed(QUERIES) and not scpi.probed({"x": ":SYST:VERS?"})


def test_a_new_query_is_asked_alone_later() -> None:
    unit = MinimalUnit({":OXC:SWIT:SIZE?": "64,64", ":SYST:VERS?": "1999.0"}, has_all=True)
    scpi = session(unit)
    scpi.probe({"size": ":OXC:SWIT:SIZE?"})
    found = scpi.probe({"size": ":OXC:SWIT:SIZE?", "version": ":SYST:VERS?"})
    assert found["version"].reply == "1999.0"
    assert unit.writes[1] == ["*CLS", ":SYST:VERS?", ":SYST:ERR?"]


def test_without_all_a_change_reads_one_error_and_clears_the_rest_next() -> None:
    """A unit with ``:SYST:ERR?`` only: a refused change's error is read by it, and the
    queue is cleared first in the next write, so a later query is not blamed for an
    error left behind."""
    unit = MinimalUnit({"*OPC?": "1", ":OXC:SWIT:SIZE?": "64,64"}, has_all=False,
                       refused={":OXC:SWIT:CONN:ADD (@1),(@65)": (202, "Port in use")})
    scpi = session(unit)
    scpi.probe({"size": ":OXC:SWIT:SIZE?"})
    with pytest.raises(DeviceRejected, match="202"):
        scpi.change(":OXC:SWIT:CONN:ADD (@1),(@65)", "connect")
    unit.queue.append((-350, "Queue overflow"))  # a second error of the change, unread
    reply, errors = scpi.query_checked(":OXC:SWIT:SIZE?")
    assert (reply, errors) == ("64,64", [])
    assert unit.writes[-1][0] == "*CLS"


def test_a_unit_that_never_answers_is_a_timeout_not_a_guess() -> None:
    class Mute(MinimalUnit):
        def write(self, data: bytes) -> None:
            self.writes.append(data.decode("ascii").splitlines())

    unit = Mute({}, has_all=True)
    with pytest.raises(DeviceTimeout):
        session(unit).probe(QUERIES)
