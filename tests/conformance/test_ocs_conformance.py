"""The OCS conformance suite: every test runs over every transport (conftest.OCS_TRANSPORTS)
and against three units: the two reply forms of the family (the Polatis form real units
send -- ``:OXC:SWIT:CONN:PORT?`` quoted, ``:PMON:POW?`` parenthesised -- and the bare
form), and a plain unit of the family: the Polatis form and ``*IDN?``, none of the
project's extensions (no LC figures, no boot mode, no alarms) and ``:SYST:ERR?`` as its
only error query (SCPI-99 leaves ``:ALL?`` optional).

The emulator is plugged in at the lowest seam (a real socket or pty), so the
driver's formatting and parsing and the emulator's SCPI parser all run. One lab
serves the whole module; before each test ocs-a is reset to as delivered, set to
the test's unit, and the reset is checked over SCPI (conftest.reset_ocs).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from drivers.errors import DeviceRejected, Unsupported, ValidationError
from drivers.ocs import BootMode, OcsDriver, PortState
from drivers.ocs.connect import open_ocs
from emulators.faults import Fault
from emulators.lab import Lab
from emulators.ocs.model import POLATIS_MANUFACTURER, polatis_model
from tests.support import ocs_endpoint, reset_ocs

UNITS = ("polatis", "bare", "plain")


@pytest.fixture
def lab(module_lab: Lab) -> Lab:
    return module_lab


@pytest.fixture(params=UNITS)
def unit(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def plain(unit: str) -> bool:
    return unit == "plain"


@pytest.fixture
def ocs(lab: Lab, transport: str, unit: str) -> Iterator[OcsDriver]:
    """A driver for ocs-a (reset, answering as ``unit``) over ``transport``, 2 s timeout."""
    reset_ocs(lab, "ocs-a", reply_form="bare" if unit == "bare" else "polatis")
    device = lab.ocs["ocs-a"]
    delivered = (device.manufacturer, device.model_name)
    if plain(unit):
        device.extensions = device.alarms_supported = device.error_extras = False
        device.manufacturer, device.model_name = POLATIS_MANUFACTURER, polatis_model(64)
    kind, address = ocs_endpoint(lab, "ocs-a", transport)
    driver = open_ocs("ocs-a", kind, address, timeout_seconds=2.0)
    try:
        yield driver
    finally:
        driver.close()
        device.faults.clear()
        device.extensions = device.alarms_supported = device.error_extras = True
        device.manufacturer, device.model_name = delivered


def _other_client(lab: Lab) -> socket.socket:
    """Another client of ocs-a: a raw connection to its network port."""
    return socket.create_connection(("127.0.0.1", lab.tcp["ocs-a"].port), timeout=2.0)


def test_identity_and_size(ocs: OcsDriver, lab: Lab, unit: str) -> None:
    identity = ocs.identity()
    assert identity.manufacturer == ("Polatis" if plain(unit) else "MegaScaleOut")
    assert identity.model == ("N-VST-64x64-HU1-DMHNV" if plain(unit) else "LCOCS-64x64")
    assert identity.serial == lab.ocs["ocs-a"].serial
    assert ocs.size == 64


def test_bulk_connect_and_read_back(ocs: OcsDriver, lab: Lab, unit: str) -> None:
    assert dict(ocs.port_map()) == {}
    result = ocs.connect({1: 121, 2: 66, 3: 67})
    assert dict(result) == {1: 121, 2: 66, 3: 67}
    assert lab.ocs["ocs-a"].connection_map() == {1: 121, 2: 66, 3: 67}
    connections = ocs.connections()
    assert [(c.ingress, c.egress) for c in connections] == [(1, 121), (2, 66), (3, 67)]
    for c in connections:
        if plain(unit):  # no factory table to ask
            assert c.insertion_loss_db is None
            continue
        assert c.insertion_loss_db == pytest.approx(
            lab.ocs["ocs-a"].factory_loss_db(c.ingress, c.egress), abs=0.001)
        assert c.insertion_loss_db is not None and 1.5 <= c.insertion_loss_db <= 2.0
    assert ocs.connected_port(2) == 66
    assert ocs.connected_port(66) == 2
    assert ocs.connected_port(10) is None


def test_connect_onto_a_port_in_use_is_rejected_by_the_device(ocs: OcsDriver) -> None:
    ocs.connect({1: 65})
    with pytest.raises(DeviceRejected) as caught:
        ocs.connect({2: 65})
    assert "202" in str(caught.value)
    assert dict(ocs.port_map()) == {1: 65}


def test_disconnect_by_ingress_or_egress(ocs: OcsDriver) -> None:
    ocs.connect({1: 65, 2: 66, 3: 67})
    assert dict(ocs.disconnect([2])) == {1: 65, 3: 67}
    assert dict(ocs.disconnect([67])) == {1: 65}


def test_replace_map_keeps_unchanged_paths(ocs: OcsDriver, lab: Lab) -> None:
    ocs.connect({1: 65, 2: 66})
    before = lab.ocs["ocs-a"]._paths[1].lit_at
    result = ocs.replace_map({1: 65, 2: 70, 5: 66})
    assert dict(result) == {1: 65, 2: 70, 5: 66}
    assert lab.ocs["ocs-a"]._paths[1].lit_at == before  # not re-switched


def test_a_replace_sent_now_is_finished_in_another_thread(ocs: OcsDriver, lab: Lab) -> None:
    """The two-step replace (the protection controller sends one to every OCS of a change
    from one thread, a worker per OCS waits for it): the session answers nothing else
    until the change is finished, in whichever thread finishes it."""
    ocs.connect({1: 65})
    pending = ocs.start_replace_map({1: 66, 2: 65})
    asked: list[dict[int, int]] = []
    other = threading.Thread(target=lambda: asked.append(dict(ocs.port_map())))
    other.start()
    other.join(0.3)
    assert other.is_alive() and not asked  # the session is the change's until finished
    finished: list[dict[int, int]] = []
    worker = threading.Thread(target=lambda: finished.append(dict(pending.finish())))
    worker.start()
    worker.join(5)
    other.join(5)
    assert finished == [{1: 66, 2: 65}] and asked == [{1: 66, 2: 65}]
    assert lab.ocs["ocs-a"].connection_map() == {1: 66, 2: 65}
    assert dict(ocs.start_port_map().finish()) == {1: 66, 2: 65}


def test_a_change_sent_now_is_refused_when_finished(ocs: OcsDriver, lab: Lab) -> None:
    lab.inject("ocs-a", Fault("port", target="5"))
    pending = ocs.start_replace_map({5: 70})
    with pytest.raises(DeviceRejected) as caught:
        pending.finish()
    assert "201" in str(caught.value)
    assert dict(ocs.port_map()) == {}  # the exchange ended in step


def test_a_power_query_sent_now_is_read_when_finished(ocs: OcsDriver) -> None:
    ocs.connect({1: 65})
    pending = ocs.start_power([1, 65, 70])
    readings = pending.finish()
    assert set(readings) == {1, 65, 70}
    assert (readings[65] or -99) > -5 and (readings[70] or 0) < -55
    with pytest.raises(ValidationError):
        ocs.start_power([1] * 257)  # two queries' worth: power() asks them in turn
    with pytest.raises(ValidationError):
        ocs.start_power([0])
    assert ocs.start_power([]).finish() == {}


def test_an_abandoned_request_leaves_the_session_in_step(ocs: OcsDriver, lab: Lab) -> None:
    """Replies never read (a change given up after it was sent) are not taken for the
    next request's: the session resynchronises first."""
    pending = ocs.start_replace_map({1: 65, 2: 66})
    pending.abandon()
    pending.abandon()  # twice is once
    assert dict(ocs.port_map()) == {1: 65, 2: 66}
    assert ocs.power([1])[1] is not None
    with pytest.raises(RuntimeError):
        pending.finish()


def test_disconnect_all(ocs: OcsDriver) -> None:
    ocs.connect({1: 65, 2: 66})
    ocs.disconnect_all()
    assert len(ocs.port_map()) == 0


def test_bad_input_is_refused_before_sending(ocs: OcsDriver, lab: Lab) -> None:
    device = lab.ocs["ocs-a"]
    commands_before = dict(device.connection_map())
    errors_before = device.errors_reported
    with pytest.raises(ValidationError):
        ocs.connect({65: 1})  # reversed
    with pytest.raises(ValidationError):
        ocs.connect({1: 200})
    with pytest.raises(ValidationError):
        ocs.replace_map({1: 70, 2: 70})
    with pytest.raises(ValidationError):
        ocs.power([0, 129])
    assert device.errors_reported == errors_before  # nothing wrong reached the device
    assert device.connection_map() == commands_before


def test_power_monitors_follow_the_light(ocs: OcsDriver, lab: Lab) -> None:
    dark = ocs.power([10, 100])
    assert all(v is not None and v < -55 for v in dark.values())
    lit = ocs.power([1])[1]
    assert lit is not None and lit == pytest.approx(1.0 - 0.3 - 0.002, abs=1.0)
    ocs.connect({1: 121})
    readings = ocs.power([1, 121, 120, 122])
    loss = lab.ocs["ocs-a"].factory_loss_db(1, 121)
    assert readings[121] == pytest.approx(readings[1] - loss, abs=1.5)  # type: ignore[operator]
    # crosstalk into the neighbours, around -50 dB below the beam
    for neighbour in (120, 122):
        value = readings[neighbour]
        assert value is not None and -58 < value < -45


def test_all_ports_power_and_state(ocs: OcsDriver) -> None:
    readings = ocs.power()
    assert sorted(readings) == list(range(1, 129))
    states = ocs.port_states()
    assert len(states) == 128
    assert set(states.values()) == {PortState.ENABLED}


def test_port_disable_blocks_light(ocs: OcsDriver) -> None:
    ocs.connect({1: 65})
    assert (ocs.power([65])[65] or -99) > -5
    states = ocs.set_ports_enabled([65], False)
    assert states == {65: PortState.DISABLED}
    assert (ocs.power([65])[65] or 0) < -55
    ocs.set_ports_enabled([65], True)
    assert (ocs.power([65])[65] or -99) > -5


def test_failed_port(ocs: OcsDriver, lab: Lab) -> None:
    lab.inject("ocs-a", Fault("port", target="5"))
    assert ocs.port_states([5]) == {5: PortState.FAILED}
    assert ocs.power([5]) == {5: None}
    with pytest.raises(DeviceRejected) as caught:
        ocs.connect({5: 70})
    assert "201" in str(caught.value)
    lab.clear("ocs-a", "port")
    assert ocs.port_states([5]) == {5: PortState.ENABLED}


def test_boot_mode(ocs: OcsDriver, lab: Lab, unit: str) -> None:
    if plain(unit):  # refused before anything is sent
        sent = lab.ocs["ocs-a"].requests.commands["boot_mode_set"]
        for attempt in (ocs.boot_mode, lambda: ocs.set_boot_mode(BootMode.DARK)):
            with pytest.raises(Unsupported, match="boot mode not supported by this unit"):
                attempt()
        assert lab.ocs["ocs-a"].requests.commands["boot_mode_set"] == sent
        assert lab.ocs["ocs-a"].boot_mode == "restore"
        return
    assert ocs.boot_mode() is BootMode.RESTORE
    ocs.set_boot_mode(BootMode.DARK)
    assert ocs.boot_mode() is BootMode.DARK
    ocs.set_boot_mode(BootMode.RESTORE)
    assert ocs.boot_mode() is BootMode.RESTORE


def test_lc_figures(ocs: OcsDriver, lab: Lab, unit: str) -> None:
    asked = lab.ocs["ocs-a"].requests.commands
    before = asked["lc_temperature"] + asked["lc_switch_time"]
    status = ocs.lc_status()
    if plain(unit):  # not available, and not asked again after the session's probe
        ocs.connect({1: 65})
        assert ocs.lc_status() == status
        assert (status.cell_temperature_celsius, status.last_switching_seconds) == (None, None)
        assert asked["lc_temperature"] + asked["lc_switch_time"] == before
        return
    assert status.cell_temperature_celsius == pytest.approx(40.0, abs=0.5)
    assert status.last_switching_seconds is None  # nothing switched yet
    ocs.connect({1: 65})
    switching = ocs.lc_status().last_switching_seconds
    assert switching is not None and 0.02 < switching < 0.05


def test_features_are_asked_once_per_session(ocs: OcsDriver, lab: Lab, unit: str) -> None:
    """The unit's optional features come from the probe opening the driver sent: asking
    again sends nothing; a plain unit has only its monitors."""
    device = lab.ocs["ocs-a"]
    received = device.requests.received
    features = ocs.features()
    assert features.supported == (["power_monitors"] if plain(unit) else
                                  ["power_monitors", "boot_mode", "lc_figures", "alarms"])
    assert ocs.alarm_support() is not plain(unit)
    assert device.requests.received == received
    assert ocs.session.all_errors is not plain(unit)


def test_errors_of_other_clients_are_not_blamed_on_us(ocs: OcsDriver, lab: Lab) -> None:
    """IEEE 488.2 §11.5.1 / SCPI-99 vol. 2 §21.8: each client has its own error queue,
    so another connection's errors never reach ours."""
    with _other_client(lab) as other:
        other.sendall(b":OXC:NOPE\n:OXC:SWIT:CONN:PORT? 999\n")
        assert dict(ocs.connect({1: 65})) == {1: 65}
        other.sendall(b":SYST:ERR?\n:SYST:ERR?\n")
        replies = other.makefile("rb")
        first, second = replies.readline().decode(), replies.readline().decode()
    assert first.startswith('-113,"Undefined header') and "-222" in second  # still its own


def test_errors_we_left_are_not_blamed_on_a_later_change(ocs: OcsDriver) -> None:
    """SCPI-99 vol. 2 §21.8 and IEEE 488.2 §10.3: a change starts with *CLS in its own
    program message, so an error left by an earlier unchecked command is not read as the
    change's."""
    ocs.session.write(":OXC:NOPE")
    assert dict(ocs.connect({1: 65})) == {1: 65}


def test_a_unit_without_power_monitors_gives_no_readings(ocs: OcsDriver, lab: Lab) -> None:
    """SCPI-99 vol. 2 §21.8 (-113 Undefined header): a unit without monitors does not
    know :PMON:POW?; every power is then not available, and nothing else fails."""
    lab.ocs["ocs-a"].power_monitors = False
    assert ocs.power([1, 2, 65]) == {1: None, 2: None, 65: None}
    assert ocs.power() == dict.fromkeys(range(1, 129))
    assert dict(ocs.connect({1: 65})) == {1: 65}


def test_a_replacement_prepared_ahead_is_sent_as_it_was_rendered(ocs: OcsDriver,
                                                                 lab: Lab) -> None:
    """``map_replacement`` checks and renders a whole-map command without the unit (a
    controller prepares a cable cut's sixteen before sending any); prepared for a unit of
    another size, it is checked again against this one's."""
    from drivers.ocs.driver import map_replacement

    prepared = map_replacement({2: 66, 1: 65}, 64)
    assert prepared.command == ":OXC:SWIT:CONN:ONLY (@1,2),(@65,66)"
    assert dict(ocs.start_replace_map(prepared).finish()) == {1: 65, 2: 66}
    assert dict(ocs.replace_map(map_replacement({3: 67}, 64))) == {3: 67}
    assert lab.ocs["ocs-a"].connection_map() == {3: 67}
    with pytest.raises(ValidationError):
        map_replacement({1: 65}, 32)  # egress 65 is out of range on a 32x32 unit
    with pytest.raises(ValidationError):
        ocs.replace_map(map_replacement({1: 200}, 128))  # fits 128x128, not this unit
    assert lab.ocs["ocs-a"].connection_map() == {3: 67}  # nothing was sent
