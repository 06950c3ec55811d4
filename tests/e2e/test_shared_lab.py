"""A lab shared by a module's tests (tests/support/reset.py): what one test leaves behind
is named by the check, and the reset puts all of it back, as a new lab has it.

Everything is changed the way tests change it: through msoctl (an OCS map, an amplifier's
gain and ALS mode, a switch's configuration committed over NETCONF, the journal), through
the lab's fault interface (a fiber cut, a pump failure, a failed OCS port, a laser
source fault on a switch), and on the devices themselves (port states, boot mode, a
transmitter's launch power, the OCS's reply form).
"""

from __future__ import annotations

import pytest

from emulators.faults import Fault
from emulators.lab import JOURNAL_FILE, Lab
from tests.support import Msoctl, in_process, wait_until
from tests.support.netconf import lab_session
from tests.support.reset import LabNotReset, reset_lab, what_is_left

FAST_CNP = """<config xmlns="urn:ietf:params:xml:ns:netconf:base:1.0">
<switch xmlns="urn:megascaleout:yang:msoctl-congestion">
<fast-cnp><enabled>true</enabled><cnp-priority>6</cnp-priority></fast-cnp></switch></config>"""


@pytest.fixture
def lab(module_lab: Lab) -> Lab:
    """The module's lab itself: the tests below reset it by hand."""
    return module_lab


@pytest.fixture
def cli(lab: Lab, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> Msoctl:
    monkeypatch.setenv("MSOCTL_INVENTORY", str(lab.state_dir / "inventory.yaml"))
    monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
    return in_process(capsys)


def _leave_everything_changed(lab: Lab, cli: Msoctl) -> None:
    assert cli("ocs", "connect", "ocs-a", "1:65").code == 0
    lab.ocs["ocs-b"].set_enabled([7], False)
    lab.ocs["ocs-b"].set_boot_mode("dark")
    lab.ocs["ocs-b"].reply_form = "bare"
    lab.inject("ocs-a", Fault("port", target="9"))
    assert cli("amp", "set", "amp-1", "--gain", "18", "--slew", "200").code == 0
    lab.inject("amp-2", Fault("pump", target="1"))
    lab.inject("span-1", Fault("fiber_cut"))
    lab.inject("sw-b", Fault("els", target="1/1"))
    lab.override_launch_power("sw-a", 2, 20.0)
    with lab_session(lab, "sw-a") as session:
        session.edit_config(target="candidate", config=FAST_CNP)
        session.commit()


def test_the_check_names_what_a_test_left_and_the_reset_puts_it_back(
        lab: Lab, cli: Msoctl) -> None:
    assert what_is_left(lab) == [], "a new lab must pass the check"
    _leave_everything_changed(lab, cli)
    left = "\n".join(what_is_left(lab))
    for expected in ("span-1/1: cut", "span-1/2: cut", "ocs-a: faults",
                     "ocs-a: connections {1: 65}", "ocs-b: port states", "ocs-b: boot mode",
                     "amp-1: controls",
                     "amp-2: faults", "sw-b: telemetry faults",
                     "sw-a: running configuration is not the factory one",
                     "launch powers overridden: [('sw-a', 2)]", f"{JOURNAL_FILE}: still there"):
        assert expected in left, f"{expected!r} not in:\n{left}"

    reset_lab(lab)
    assert what_is_left(lab) == []
    assert lab.ocs["ocs-b"].reply_form == "polatis"
    assert lab.amps["amp-2"].faults.active() == []
    # the devices answer as a new lab's do: msoctl reads the factory state back
    status = cli("ocs", "status", "ocs-a", "-o", "json")
    assert status.code == 0 and '"connections": []' in status.out.replace("\n", "")
    with lab_session(lab, "sw-a") as session:
        assert "fast-cnp" not in session.get_config(source="running").data_xml
        assert "fast-cnp" not in session.get_config(source="candidate").data_xml


def test_a_reset_that_cannot_put_something_back_is_an_error_naming_it(lab: Lab) -> None:
    """An OCS whose own reset leaves a connection behind (a broken emulator): the reset
    raises, naming the device and the connection, and the next reset, once the device
    is mended, passes."""
    device = lab.ocs["ocs-a"]
    original = device.factory_reset

    def leaves_the_map() -> None:
        original()
        device.add((2,), (66,))

    device.factory_reset = leaves_the_map  # type: ignore[method-assign]
    try:
        with pytest.raises(LabNotReset, match=r"ocs-a: connections \{2: 66\}"):
            reset_lab(lab)
    finally:
        device.factory_reset = original  # type: ignore[method-assign]
    wait_until(lambda: device.pending_until() <= device.clock.now(), "ocs-a's switch settles")
    reset_lab(lab)
    assert what_is_left(lab) == []
