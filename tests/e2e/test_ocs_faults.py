"""Faults on the wire and on the device: typed errors within the timeout, then recovery."""

from __future__ import annotations

import time

import pytest

from drivers.errors import DeviceError, DeviceTimeout, DeviceUnreachable, ProtocolError
from drivers.ocs import BootMode, OcsDriver
from emulators.faults import Fault
from emulators.lab import Lab

TIMEOUT = 2.0  # the `ocs` fixture's driver timeout


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


def _received(lab: Lab) -> int:
    """Program messages ocs-a has received so far."""
    return lab.ocs["ocs-a"].requests.received


def _bounded(error: DeviceError, lab: Lab, received: int) -> None:
    """What ended the request was the fault itself or the driver's own timeout, once: a
    timeout names the driver's 2 s, and at most the one request reached the device (no
    resend). Not a clock, which a loaded machine stretches; a hang would end in pytest's
    per-test timeout."""
    if isinstance(error, DeviceTimeout):
        assert str(error).endswith(f" within {TIMEOUT:g} s"), str(error)
    assert _received(lab) - received <= 1


def test_connection_reset_mid_command(ocs: OcsDriver, lab: Lab, transport: str) -> None:
    ocs.port_map()
    lab.inject("ocs-a", Fault("reset", count=1))
    received = _received(lab)
    # TCP: the peer resets the connection. A serial console cannot be reset: the
    # request is lost and the reply never comes.
    expected = DeviceTimeout if transport != "visa-tcp" else (DeviceUnreachable, DeviceTimeout)
    with pytest.raises(expected) as raised:
        ocs.port_map()
    _bounded(raised.value, lab, received)
    assert dict(ocs.connect({1: 65})) == {1: 65}  # the next request reconnects and works


def test_garbage_reply(ocs: OcsDriver, lab: Lab) -> None:
    lab.inject("ocs-a", Fault("garbage", count=1))
    received = _received(lab)
    with pytest.raises(ProtocolError) as raised:
        ocs.identity()
    _bounded(raised.value, lab, received)
    assert ocs.size == 64
    assert ocs.identity().serial == lab.ocs["ocs-a"].serial


def test_reply_slower_than_the_timeout_does_not_desynchronise(ocs: OcsDriver, lab: Lab) -> None:
    ocs.size  # noqa: B018 - cache the size so the next request is the slow one
    lab.inject("ocs-a", Fault("latency", seconds=TIMEOUT + 1.0, count=1))
    received = _received(lab)
    with pytest.raises(DeviceTimeout) as raised:
        ocs.identity()
    _bounded(raised.value, lab, received)
    # The late *IDN? reply must not be taken as the answer to the next query.
    time.sleep(1.2)
    assert dict(ocs.port_map()) == {}
    assert ocs.identity().manufacturer == "MegaScaleOut"


def test_truncated_reply(ocs: OcsDriver, lab: Lab) -> None:
    lab.inject("ocs-a", Fault("truncate", count=1))
    received = _received(lab)
    with pytest.raises(DeviceTimeout) as raised:
        ocs.identity()
    _bounded(raised.value, lab, received)
    assert ocs.identity().model.startswith("LCOCS")


def test_frozen_device_times_out(ocs: OcsDriver, lab: Lab) -> None:
    lab.inject("ocs-a", Fault("freeze"))
    received = _received(lab)
    with pytest.raises(DeviceTimeout) as raised:
        ocs.port_map()
    _bounded(raised.value, lab, received)
    lab.clear("ocs-a", "freeze")
    assert dict(ocs.port_map()) == {}


def _wait_up(ocs: OcsDriver, lab: Lab) -> None:
    deadline = time.monotonic() + 10
    while not lab.ocs["ocs-a"].is_up():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.1)  # the TCP listener reopens on the lab's loop


def test_power_loss_reboot_restores_the_map(ocs: OcsDriver, lab: Lab) -> None:
    ocs.connect({1: 121, 2: 66})
    lab.inject("ocs-a", Fault("reboot", power_loss=True, seconds=1.0))
    received = _received(lab)
    with pytest.raises((DeviceUnreachable, DeviceTimeout)) as raised:
        ocs.port_map()
    _bounded(raised.value, lab, received)
    _wait_up(ocs, lab)
    assert dict(ocs.port_map()) == {1: 121, 2: 66}
    ocs.session.fence()  # the restored hologram finishes switching
    readings = ocs.power([121])
    assert (readings[121] or -99) > -5


def test_power_loss_reboot_in_dark_mode(ocs: OcsDriver, lab: Lab) -> None:
    ocs.connect({1: 121})
    ocs.set_boot_mode(BootMode.DARK)
    lab.inject("ocs-a", Fault("reboot", power_loss=True, seconds=0.5))
    _wait_up(ocs, lab)
    for _ in range(3):  # the first request may meet the dropped connection
        try:
            assert dict(ocs.port_map()) == {}
            break
        except DeviceError:
            continue
    else:
        pytest.fail("device did not come back")
    assert ocs.boot_mode() is BootMode.DARK


def test_unreachable_device() -> None:
    from drivers.ocs.connect import open_ocs

    # refused at once, each by what refused it (waiting out the 1 s timeout would be a
    # DeviceTimeout, "no connection ... within 1 s"): told by the reason, not by a clock
    with pytest.raises(DeviceUnreachable, match="connection refused") as refused:
        open_ocs("nowhere", "visa", "TCPIP::127.0.0.1::1::SOCKET", timeout_seconds=1.0)
    assert "Connection refused" in (refused.value.detail or ""), refused.value.detail
    with pytest.raises(DeviceUnreachable, match="No such file or directory"):
        open_ocs("nowhere", "serial", "/dev/does-not-exist", timeout_seconds=1.0)
