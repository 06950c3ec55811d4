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


def _bounded(started: float) -> None:
    """The error came within the timeout (plus scheduling slack), not after a hang."""
    assert time.monotonic() - started < TIMEOUT + 1.5


def test_connection_reset_mid_command(ocs: OcsDriver, lab: Lab, transport: str) -> None:
    ocs.port_map()
    lab.inject("ocs-a", Fault("reset", count=1))
    started = time.monotonic()
    # TCP: the peer resets the connection. A serial console cannot be reset: the
    # request is lost and the reply never comes.
    expected = DeviceTimeout if transport != "visa-tcp" else (DeviceUnreachable, DeviceTimeout)
    with pytest.raises(expected):
        ocs.port_map()
    _bounded(started)
    assert dict(ocs.connect({1: 65})) == {1: 65}  # the next request reconnects and works


def test_garbage_reply(ocs: OcsDriver, lab: Lab) -> None:
    lab.inject("ocs-a", Fault("garbage", count=1))
    started = time.monotonic()
    with pytest.raises(ProtocolError):
        ocs.identity()
    _bounded(started)
    assert ocs.size == 64
    assert ocs.identity().serial == lab.ocs["ocs-a"].serial


def test_reply_slower_than_the_timeout_does_not_desynchronise(ocs: OcsDriver, lab: Lab) -> None:
    ocs.size  # noqa: B018 - cache the size so the next request is the slow one
    lab.inject("ocs-a", Fault("latency", seconds=TIMEOUT + 1.0, count=1))
    started = time.monotonic()
    with pytest.raises(DeviceTimeout):
        ocs.identity()
    _bounded(started)
    # The late *IDN? reply must not be taken as the answer to the next query.
    time.sleep(1.2)
    assert dict(ocs.port_map()) == {}
    assert ocs.identity().manufacturer == "MegaScaleOut"


def test_truncated_reply(ocs: OcsDriver, lab: Lab) -> None:
    lab.inject("ocs-a", Fault("truncate", count=1))
    started = time.monotonic()
    with pytest.raises(DeviceTimeout):
        ocs.identity()
    _bounded(started)
    assert ocs.identity().model.startswith("LCOCS")


def test_frozen_device_times_out(ocs: OcsDriver, lab: Lab) -> None:
    lab.inject("ocs-a", Fault("freeze"))
    started = time.monotonic()
    with pytest.raises(DeviceTimeout):
        ocs.port_map()
    _bounded(started)
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
    started = time.monotonic()
    with pytest.raises((DeviceUnreachable, DeviceTimeout)):
        ocs.port_map()
    _bounded(started)
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

    started = time.monotonic()
    with pytest.raises(DeviceUnreachable):
        open_ocs("nowhere", "visa", "TCPIP::127.0.0.1::1::SOCKET", timeout_seconds=1.0)
    with pytest.raises(DeviceUnreachable):
        open_ocs("nowhere", "serial", "/dev/does-not-exist", timeout_seconds=1.0)
    assert time.monotonic() - started < 5
