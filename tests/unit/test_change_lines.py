"""How a plan prints its changes (msoctl/cli/changes.py): grouped under their list entry
within 80 columns, a device model's long path broken at a ``/`` outside list keys."""

from __future__ import annotations

from drivers.switch.tree import Change
from msoctl.cli.changes import change_lines

OC_QUEUE = ("/openconfig-qos:qos/interfaces/interface[interface-id=Ethernet1]/output/queues"
            "/queue[name=queue3]")


def test_changes_are_grouped_under_their_entry() -> None:
    lines = change_lines([
        Change("/switch/ports/port[name='Ethernet1']/speed", None, "400G"),
        Change("/switch/ports/port[name='Ethernet1']/pfc/xoff-bytes", 1, 2),
        Change("/switch/fast-cnp/enabled", True, None)])
    assert lines == ["  /switch/ports/port[name='Ethernet1']:", "    + speed = 400G",
                     "    ~ pfc/xoff-bytes: 1 -> 2", "  /switch/fast-cnp:",
                     "    - enabled (was true)"]


def test_a_long_heading_breaks_at_a_slash_outside_the_keys() -> None:
    key = "[name=a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w/x/y/z]"
    lines = change_lines([
        Change(f"{OC_QUEUE}/config/name", None, "queue3"),
        Change(f"/sonic-db:CONFIG_DB/localhost/WRED_PROFILE{key}/ecn", None, "ecn_all")])
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[:3] == [
        "  /openconfig-qos:qos/interfaces/interface[interface-id=Ethernet1]/output/queues",
        "    /queue[name=queue3]:", "    + config/name = queue3"]
    assert any(line.strip().startswith(f"/WRED_PROFILE{key}") for line in lines), lines
    assert "".join(line.strip() for line in lines[3:-1]) == \
        f"/sonic-db:CONFIG_DB/localhost/WRED_PROFILE{key}:"
    wide = change_lines([Change(f"{OC_QUEUE}/config/name", None, "q")], wide=True)
    assert wide == [f"  + {OC_QUEUE}/config/name = q"]
