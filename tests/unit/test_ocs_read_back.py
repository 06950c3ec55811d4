"""The read-back of a whole-map replace (drivers/ocs/driver.py): the map query's reply
in the change's own write is the verdict. A reply written as the dialect writes the map
asked for (docs/dialects/ocs.md: ingress ascending, ``(@1,2),(@65,66)``) is that map and
is not parsed again; a reply in any other form is parsed and compared; a reply that
shows another map fails the change. Against a scripted unit that answers the change's
four messages (``*OPC?``, the error queue, the map) with the map it is given."""

from __future__ import annotations

import pytest

from drivers.errors import VerificationFailed
from drivers.ocs.driver import OcsDriver, map_replacement
from drivers.ocs.types import PortMap
from drivers.scpi.session import ScpiSession
from tests.support.scripted import ScriptedTransport

SIZE = 64


class MapUnit(ScriptedTransport):
    """A transport and the 64x64 unit behind it: each map query is answered with
    ``reply`` (the text a unit would write), every ``*OPC?`` with 1, the error queue
    with no error."""

    def __init__(self, reply: str):
        super().__init__()
        self.reply = reply

    def write(self, data: bytes) -> None:
        for message in data.decode("ascii").splitlines():
            header = message.strip().split(" ")[0]
            if header == "*OPC?":
                self.output.append("1")
            elif header.startswith(":SYST:ERR"):
                self.output.append('0,"No error"')
            elif header == ":OXC:SWIT:CONN:STAT?":
                self.output.append(self.reply)


def _driver(unit: MapUnit) -> OcsDriver:
    driver = OcsDriver(ScpiSession(unit, device="ocs-scripted"))
    driver._size = SIZE  # as :OXC:SWIT:SIZE? would have said
    return driver


WANTED = {3: 67, 1: 65, 2: 70}


def test_a_read_back_written_as_the_map_asked_for_is_taken_without_parsing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    prepared = map_replacement(WANTED, SIZE)
    assert prepared.read_back == "(@1,2,3),(@65,70,67)"
    driver = _driver(MapUnit(prepared.read_back))

    def no_parsing(reply: str) -> PortMap:
        raise AssertionError(f"parsed {reply!r}")

    monkeypatch.setattr(driver, "_parse_map", no_parsing)
    assert driver.start_replace_map(prepared).finish() is prepared.target
    assert driver.replace_map(WANTED) == prepared.target


def test_a_read_back_in_another_form_is_parsed_and_compared() -> None:
    """The same map, written with a range and in another order: the map asked for."""
    driver = _driver(MapUnit("(@1:2,3),(@65,70,67)"))
    assert dict(driver.replace_map(WANTED)) == WANTED
    driver = _driver(MapUnit("(@3,1,2),(@67,65,70)"))
    assert dict(driver.start_replace_map(map_replacement(WANTED, SIZE)).finish()) == WANTED


def test_a_read_back_that_shows_another_map_fails_the_change() -> None:
    driver = _driver(MapUnit("(@1,2,3),(@65,70,68)"))
    with pytest.raises(VerificationFailed, match="map after replace differs"):
        driver.start_replace_map(map_replacement(WANTED, SIZE)).finish()
    driver = _driver(MapUnit("(@1,2),(@65,70)"))
    with pytest.raises(VerificationFailed, match="map after replace differs"):
        driver.replace_map(WANTED)
