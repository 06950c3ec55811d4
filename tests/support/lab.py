"""The emulated lab in tests: OCS endpoints over every transport, waiting on the lab, the
environment of a process that talks to it, and the ALS restart a host does."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from drivers.ocs import BootMode, PortState
from drivers.ocs.connect import open_ocs
from emulators.lab import Lab

# Every OCS conformance test runs over each of these: the network port through
# pyvisa (pyvisa-py), and the serial console through pyserial and through pyvisa.
OCS_TRANSPORTS = ("visa-tcp", "serial-pty", "visa-asrl")
# ... and against each reply form the emulated OCS can answer in (emulators/ocs/model.py):
# the Polatis family's (quoted PORT?, parenthesised power list) and the bare one.
REPLY_FORMS = ("polatis", "bare")


def ocs_endpoint(lab: Lab, name: str, transport: str) -> tuple[str, str]:
    """The driver kind and address of OCS ``name`` over ``transport`` (OCS_TRANSPORTS)."""
    if transport == "visa-tcp":
        return "visa", f"TCPIP::127.0.0.1::{lab.tcp[name].port}::SOCKET"
    if transport == "serial-pty":
        return "serial", lab.consoles[name].path
    if transport == "visa-asrl":
        return "visa", f"ASRL{lab.consoles[name].path}::INSTR"
    raise ValueError(transport)


def reset_ocs(lab: Lab, name: str, *, reply_form: str = "polatis") -> None:
    """Give the next test OCS ``name`` as delivered, answering in ``reply_form``, and check
    through SCPI (a client of its own) that it is: no connections, every port enabled,
    boot mode RESTore, no switching history, nothing failed."""
    device = lab.ocs[name]
    device.factory_reset()
    device.reply_form = reply_form
    device.power_monitors = True
    kind, address = ocs_endpoint(lab, name, "visa-tcp")
    check = open_ocs(name, kind, address, timeout_seconds=2.0)
    try:
        assert dict(check.port_map()) == {}, "reset left connections"
        assert set(check.port_states().values()) == {PortState.ENABLED}, "reset left ports"
        assert check.boot_mode() is BootMode.RESTORE
        assert check.lc_status().last_switching_seconds is None
        assert check.session.query("*TST?") == "0", "reset left a fault"
    finally:
        check.close()


def dead_pid() -> int:
    """A pid with no process behind it (checked, not guessed)."""
    try:
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    except OSError:
        pid_max = 32768
    for pid in range(pid_max - 1, 300, -1):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            continue
    raise RuntimeError("every pid is in use")


def subprocess_env(lab: Lab) -> dict[str, str]:
    """This process's environment, with the lab's inventory selected and no journal
    override."""
    env = dict(os.environ)
    env["MSOCTL_INVENTORY"] = str(lab.state_dir / "inventory.yaml")
    env.pop("MSOCTL_JOURNAL", None)
    return env


def wait_until(predicate: Callable[[], bool], what: str, seconds: float = 5.0) -> None:
    """Wait (real time: the lab runs on the real clock) until ``predicate`` holds; fail
    naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting: {what}"
        time.sleep(0.01)


def restart_amplifier(lab: Lab, name: str) -> None:
    """Do what a host does after lighting a span: ask the amplifier for an ALS restart.

    The amplifier honours a restart only while ALS holds its output shut, as a real
    one does: a LOS soak still running (the lab has just started, or the light is on
    its way) is waited out first, and an amplifier back to normal needs no restart.
    """
    from drivers.amp import vendor_page
    from emulators.amp.als import LOS_SOAK, SHUTDOWN

    module = lab.amps[name]
    wait_until(lambda: module.als_state != LOS_SOAK, f"{name}'s LOS soak ends")
    if module.als_state != SHUTDOWN:
        return
    module.host_write(127, bytes((vendor_page.PAGE,)))
    module.host_write(vendor_page.ALS_COMMAND.offset, bytes((vendor_page.ALS_RESTART_NOW,)))
