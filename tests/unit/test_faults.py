"""The one fault-injection interface (emulators/faults.py)."""

from __future__ import annotations

import asyncio

import pytest

from emulators.clock import SteppedClock
from emulators.faults import TRANSPORT_FAULTS, Fault, FaultError, FaultInjector
from emulators.ocs.model import OcsDevice
from emulators.ocs.scpi import make_interpreter
from emulators.optics.model import OpticalModel
from emulators.scpi.server import _Session


class Recorder:
    """A device's handlers for one fault kind: remembers what it was handed."""

    def __init__(self) -> None:
        self.injected: list[Fault] = []
        self.cleared: list[Fault] = []

    def inject(self, fault: Fault) -> None:
        self.injected.append(fault)

    def clear(self, fault: Fault) -> None:
        self.cleared.append(fault)


def test_an_unknown_kind_is_refused_with_the_supported_kinds_listed() -> None:
    injector = FaultInjector("amp-9")
    injector.handle("pump", Recorder().inject)
    with pytest.raises(FaultError) as caught:
        injector.inject(Fault("meteor"))
    message = str(caught.value)
    assert "amp-9" in message and "'meteor'" in message
    for kind in [*TRANSPORT_FAULTS, "pump"]:
        assert kind in message
    assert injector.active() == []


def test_kinds_are_the_transport_faults_and_the_registered_ones() -> None:
    injector = FaultInjector("dev")
    assert injector.kinds() == sorted(TRANSPORT_FAULTS)
    injector.handle("port", Recorder().inject)
    assert injector.kinds() == sorted([*TRANSPORT_FAULTS, "port"])


def test_an_ocs_supports_reboot_and_port_but_not_pump() -> None:
    device = OcsDevice("ocs", OpticalModel(SteppedClock()), size=4)
    assert {"reboot", "port"} <= set(device.faults.kinds())
    with pytest.raises(FaultError, match=r"supported:.*port"):
        device.faults.inject(Fault("pump"))
    with pytest.raises(FaultError):
        device.faults.inject(Fault("fiber_cut"))  # the lab's, not the device's


@pytest.mark.parametrize("seconds", [None, -1.0])
def test_latency_needs_non_negative_seconds(seconds: float | None) -> None:
    injector = FaultInjector("dev")
    with pytest.raises(FaultError, match="seconds"):
        injector.inject(Fault("latency", seconds=seconds))
    assert injector.active() == []
    injector.inject(Fault("latency", seconds=0.0))
    assert injector.is_active("latency")


def test_count_limited_faults_expire() -> None:
    injector = FaultInjector("dev")
    injector.inject(Fault("drop", count=2))
    first = injector.consume("drop")
    assert first is not None and first.count == 2
    second = injector.consume("drop")
    assert second is not None and second.count == 1
    assert injector.is_active("drop") is False
    assert injector.consume("drop") is None


def test_faults_without_a_count_stay_until_cleared() -> None:
    injector = FaultInjector("dev")
    injector.inject(Fault("garbage"))
    for _ in range(5):
        assert injector.consume("garbage") is not None
    assert injector.is_active("garbage")
    injector.clear("garbage")
    assert injector.consume("garbage") is None


def test_consume_takes_only_its_own_kind() -> None:
    injector = FaultInjector("dev")
    injector.inject(Fault("truncate", count=1))
    assert injector.consume("reset") is None
    assert injector.is_active("truncate")


def test_clear_by_kind_and_by_target() -> None:
    injector = FaultInjector("dev")
    ports = Recorder()
    injector.handle("port", ports.inject, ports.clear)
    injector.inject(Fault("port", target="1"))
    injector.inject(Fault("port", target="2"))
    injector.inject(Fault("latency", seconds=1.0))
    injector.clear("port", target="1")
    assert [f.target for f in ports.cleared] == ["1"]
    assert injector.is_active("port", "2") and not injector.is_active("port", "1")
    assert injector.is_active("latency")
    injector.clear("port")
    assert [f.target for f in ports.cleared] == ["1", "2"]
    assert injector.is_active("latency")
    injector.clear()
    assert injector.active() == []


def test_clear_everything_calls_every_clear_handler() -> None:
    injector = FaultInjector("dev")
    ports, pumps = Recorder(), Recorder()
    injector.handle("port", ports.inject, ports.clear)
    injector.handle("pump", pumps.inject, pumps.clear)
    injector.inject(Fault("port", target="3"))
    injector.inject(Fault("pump"))
    injector.clear()
    assert len(ports.cleared) == 1 and len(pumps.cleared) == 1


def test_device_handlers_are_called_with_the_fault() -> None:
    injector = FaultInjector("dev")
    reboots = Recorder()
    injector.handle("reboot", reboots.inject)
    fault = Fault("reboot", seconds=3.0, power_loss=False)
    injector.inject(fault)
    assert reboots.injected == [fault]
    # a reboot is an event, not a state: nothing to clear afterwards
    assert injector.active() == []
    assert not injector.is_active("reboot")


def test_a_clear_handler_is_optional() -> None:
    injector = FaultInjector("dev")
    injector.handle("pump", Recorder().inject)
    injector.inject(Fault("pump"))
    injector.clear("pump")
    assert injector.active() == []


def test_a_refused_device_fault_is_not_recorded_as_active() -> None:
    device = OcsDevice("ocs", OpticalModel(SteppedClock()), size=4)
    with pytest.raises(FaultError, match=r"port 1\.\.8"):
        device.faults.inject(Fault("port", target="99"))  # no such port on a 4x4
    with pytest.raises(FaultError):
        device.faults.inject(Fault("port", target="abc"))
    assert device.faults.active() == []


def test_ocs_port_fault_and_clear_through_the_injector() -> None:
    device = OcsDevice("ocs", OpticalModel(SteppedClock()), size=4)
    device.faults.inject(Fault("port", target="6"))
    assert device.port_state(6) == "F"
    device.faults.clear("port", "6")
    assert device.port_state(6) == "E"


# ---- transport faults as a server session carries them out ----------------------------------


class _Console:
    """What a protocol server needs from a device, and the bytes it would have sent."""

    def __init__(self) -> None:
        self.device = OcsDevice("ocs", OpticalModel(SteppedClock()), size=4)
        self.sent: list[bytes] = []
        self.resets = 0
        self.session = _Session(self.device, make_interpreter(self.device), b"\n",
                                self.sent.append, self._reset)

    def _reset(self) -> None:
        self.resets += 1

    def feed(self, data: bytes) -> None:
        asyncio.run(self.session.feed(data))


def test_drop_and_reset_spoil_exactly_count_replies() -> None:
    console = _Console()
    console.device.faults.inject(Fault("drop", count=1))
    console.device.faults.inject(Fault("reset", count=1))
    console.feed(b":OXC:SWIT:SIZE?\n")  # dropped
    assert console.sent == []
    console.feed(b":OXC:SWIT:SIZE?\n")  # reset
    assert console.sent == [] and console.resets == 1
    console.feed(b":OXC:SWIT:SIZE?\n")
    assert console.sent == [b"4,4\n"]


def test_the_replies_to_lines_that_came_together_leave_in_one_write() -> None:
    """A change, its ``*OPC?``, its error query and its read-back in one message: their
    replies in one write."""
    console = _Console()
    console.feed(b"*CLS;:OXC:SWIT:CONN:ONLY (@1),(@5)\n*OPC?\n:SYST:ERR:ALL?\n"
                 b":OXC:SWIT:CONN:STAT?\n")
    assert console.sent == [b'1\n0,"No error"\n(@1),(@5)\n']
    console.sent.clear()
    console.feed(b"*OPC?\n")  # a line alone: its reply alone
    console.feed(b":OXC:SWIT:SIZE?\n*IDN?")  # the second line not whole yet
    assert console.sent == [b"1\n", b"4,4\n"]


def test_what_was_answered_before_a_line_that_waits_leaves_when_it_waits() -> None:
    """``FAST?`` answered, then ``SLOW?`` waits: the first reply leaves as the wait
    begins, the rest together at the end."""

    class Interpreter:
        async def execute(self, line: str) -> str:
            if line == "SLOW?":
                await asyncio.sleep(0.01)
                assert sent == [b"fast\n"]  # out while this line waited
            return line.lower()[:-1]

    console = _Console()
    sent: list[bytes] = []
    session = _Session(console.device, Interpreter(), b"\n",  # type: ignore[arg-type]
                       sent.append, lambda: None)
    asyncio.run(session.feed(b"FAST?\nSLOW?\nFAST?\n"))
    assert sent == [b"fast\n", b"slow\nfast\n"]


def test_truncate_and_garbage_spoil_a_reply() -> None:
    console = _Console()
    console.device.faults.inject(Fault("truncate", count=1))
    console.feed(b":OXC:SWIT:SIZE?\n")
    cut = console.sent[-1]
    assert 0 < len(cut) < len(b"4,4") and b"4,4".startswith(cut)  # cut short, no terminator
    console.device.faults.inject(Fault("garbage", count=1))
    console.feed(b"*IDN?\n")
    assert not console.sent[-1].startswith(b"MegaScaleOut")
    assert b"\n" not in console.sent[-1][:-1]
    console.feed(b":OXC:SWIT:SIZE?\n")
    assert console.sent[-1] == b"4,4\n"


def test_freeze_answers_nothing_until_cleared() -> None:
    console = _Console()
    console.device.faults.inject(Fault("freeze"))
    console.feed(b":OXC:SWIT:SIZE?\n:OXC:SWIT:CONN:ADD (@1),(@5)\n")
    assert console.sent == []
    assert console.device.connection_map() == {}  # not executed either
    console.device.faults.clear("freeze")
    console.feed(b":OXC:SWIT:SIZE?\n")
    assert console.sent == [b"4,4\n"]


def test_protocol_numbers_are_ascii_digits_of_bounded_length() -> None:
    """``str.isdigit`` takes characters ``int`` refuses (``²``): the emulators' parsers check
    with :func:`emulators.text.digits` so a hostile number is refused, not raised on."""
    from emulators.text import digits

    assert digits("65") and digits("0")
    assert not digits("²") and not digits("６５") and not digits("") and not digits("-1")
    assert not digits("9" * 19)
