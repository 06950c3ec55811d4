"""The CMIS module API: identity, status, thresholds, flags, the module state machine.

Everything goes through one :class:`~drivers.cmis.io.CmisIo`. Reads are
grouped (:mod:`.reads`); latched flags are read only by
:meth:`CmisModule.read_and_clear_flags`. Waiting for a state change uses the
duration the module advertises on page 01h, polling the state byte — never
a fixed sleep.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from drivers.cmis import codes
from drivers.cmis.fields import LOWER, Field
from drivers.cmis.io import CmisIo, latched_bytes
from drivers.cmis.pages import STANDARD_FIELDS, lower, page00, page01, page02
from drivers.cmis.reads import plan_reads
from drivers.errors import DeviceError, DeviceTimeout, ProtocolError

STATE_POLL_FRACTION = 0.1
"""Poll the state this often, as a fraction of the advertised duration."""

MIN_POLL_SECONDS = 0.001


@dataclass(frozen=True)
class ModuleIdentity:
    identifier: str | None
    cmis_revision: str | None
    vendor: str | None
    vendor_oui: str | None
    part_number: str | None
    vendor_revision: str | None  # page 00h 164-165, the vendor's revision of the part number
    hardware_revision: str | None
    serial: str | None
    date_code: str | None
    clei: str | None
    firmware: str | None
    power_class: int | None
    max_power_watts: float | None


@dataclass(frozen=True)
class ModuleStatus:
    state: str | None  # CMIS name, e.g. "ModuleReady"
    temperature_celsius: float | None
    vcc_volts: float | None
    interrupt: bool | None
    fault_cause: str | None


@dataclass(frozen=True)
class Threshold:
    high_alarm: float | None
    low_alarm: float | None
    high_warning: float | None
    low_warning: float | None

    def evaluate(self, value: float | None) -> str | None:
        """``"high alarm"``, ..., or ``None`` when ``value`` is within every limit."""
        if value is None:
            return None
        for name, limit, above in (("high alarm", self.high_alarm, True),
                                   ("low alarm", self.low_alarm, False),
                                   ("high warning", self.high_warning, True),
                                   ("low warning", self.low_warning, False)):
            if limit is not None and (value > limit if above else value < limit):
                return name
        return None


@dataclass(frozen=True)
class Durations:
    power_up_seconds: float
    power_down_seconds: float




class CmisModule:
    """One CMIS module behind ``io``.

    ``sleep`` and ``monotonic`` are how the host waits; tests that run the
    module emulator on a stepped clock pass functions that step it.
    """

    def __init__(
        self,
        io: CmisIo,
        *,
        name: str,
        extra_fields: Iterable[Field] = (),
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.io = io
        self.name = name
        self.fields = (*STANDARD_FIELDS, *extra_fields)
        self.latched = latched_bytes(self.fields)
        self.sleep = sleep
        self.monotonic = monotonic
        self._identity: ModuleIdentity | None = None
        self._durations: Durations | None = None

    def close(self) -> None:
        self.io.close()

    # ---- reading ---------------------------------------------------------------------

    def read_fields(self, fields: Iterable[Field]) -> dict[str, Any]:
        """Decoded values of ``fields`` by name, in as few transactions as allowed.

        Latched fields may be named here only by the read-and-clear path.
        """
        values: dict[str, Any] = {}
        for block in plan_reads(fields, self.latched):
            with self._named():
                data = self.io.read(block.page, block.start, block.length)
            if len(data) != block.length:
                raise ProtocolError(f"asked for {block.length} bytes, got {len(data)}",
                                    device=self.name)
            for item in block.fields:
                values[item.name] = item.decode(data, block.start)
        return values

    def read_raw(self, page: int, offset: int, length: int) -> bytes:
        with self._named():
            return self.io.read(page, offset, length)

    def write_raw(self, page: int, offset: int, data: bytes) -> None:
        with self._named():
            self.io.write(page, offset, data)

    @contextmanager
    def _named(self) -> Iterator[None]:
        """Errors from below carry this module's name."""
        try:
            yield
        except DeviceError as error:
            if error.device is None:
                error.device = self.name
            raise

    # ---- identity and status -------------------------------------------------------------

    def identity(self) -> ModuleIdentity:
        if self._identity is None:
            v = self.read_fields([lower.IDENTIFIER, lower.REVISION_MAJOR, lower.REVISION_MINOR,
                                  lower.FIRMWARE_MAJOR, lower.FIRMWARE_MINOR, *page00.FIELDS,
                                  page01.HARDWARE_MAJOR, page01.HARDWARE_MINOR])
            major, minor = v["revision_major"], v["revision_minor"]
            power_class = v["power_class"]
            self._identity = ModuleIdentity(
                identifier=codes.name_of(codes.IDENTIFIERS, v["identifier"]),
                cmis_revision=None if major is None else f"{major}.{minor}",
                vendor=v["vendor_name"] or None,
                vendor_oui=v["vendor_oui"],
                part_number=v["part_number"] or None,
                vendor_revision=v["revision"] or None,
                hardware_revision=f"{v['hardware_major']}.{v['hardware_minor']}",
                serial=v["serial"] or None,
                date_code=v["date_code"] or None,
                clei=v["clei"] or None,
                firmware=f"{v['firmware_major']}.{v['firmware_minor']}",
                power_class=None if power_class is None else int(power_class) + 1,
                max_power_watts=v["max_power"],
            )
        return self._identity

    STATUS_FIELDS = (lower.MODULE_STATE, lower.INTERRUPT_DEASSERTED, lower.TEMPERATURE,
                     lower.VCC)

    def status_from(self, values: dict[str, Any]) -> ModuleStatus:
        state = codes.name_of(codes.MODULE_STATES, values.get("module_state"))
        fault = None
        if state == "ModuleFault":
            cause = self.read_fields([lower.FAULT_CAUSE])["fault_cause"]
            fault = codes.fault_cause_name(cause) if isinstance(cause, int) else None
        deasserted = values.get("interrupt_deasserted")
        return ModuleStatus(
            state=state,
            temperature_celsius=values.get("temperature"),
            vcc_volts=values.get("vcc"),
            interrupt=None if deasserted is None else not deasserted,
            fault_cause=fault,
        )

    def status(self) -> ModuleStatus:
        return self.status_from(self.read_fields(self.STATUS_FIELDS))

    def state(self) -> str | None:
        state: str | None = codes.name_of(codes.MODULE_STATES,
                                          self.read_fields([lower.MODULE_STATE])["module_state"])
        return state

    # ---- thresholds and flags ------------------------------------------------------------

    def thresholds(self) -> dict[str, Threshold]:
        values = self.read_fields(page02.FIELDS)
        return {group: Threshold(*(values[f.name] for f in fields))
                for group, fields in page02.GROUPS.items()}

    def read_and_clear_flags(self, extra: Iterable[tuple[Field, dict[int, str]]] = ()) -> \
            dict[str, bool]:
        """Read the latched flags, which clears them in the module. Names -> set."""
        groups = [(lower.FLAGS_MODULE, lower.MODULE_FLAG_BITS),
                  (lower.FLAGS_TEMP_VCC, lower.TEMP_VCC_FLAG_BITS), *extra]
        values = self.read_fields([f for f, _ in groups])
        flags: dict[str, bool] = {}
        for item, bits in groups:
            raw = values[item.name]
            for bit, flag in bits.items():
                flags[flag] = bool(isinstance(raw, int) and raw >> bit & 1)
        return flags

    # ---- state machine ---------------------------------------------------------------------

    def durations(self) -> Durations:
        if self._durations is None:
            v = self.read_fields([page01.PWR_UP_DURATION, page01.PWR_DN_DURATION])

            def seconds(code: Any) -> float:
                if not isinstance(code, int) or code not in codes.DURATION_SECONDS:
                    return max(codes.DURATION_SECONDS.values())  # 50 min+, or reserved
                return codes.DURATION_SECONDS[code]

            self._durations = Durations(seconds(v["module_pwr_up_duration"]),
                                        seconds(v["module_pwr_dn_duration"]))
        return self._durations

    def set_low_power(self, low: bool) -> str:
        """Request low or high power and wait, as long as the module advertises, for it."""
        control = self.read_fields([lower.MODULE_CONTROL])["module_control"]
        if not isinstance(control, int):
            raise ProtocolError("module control byte unreadable", device=self.name)
        # Never write back a reset bit that a glitch on the bus may have set in our read.
        control &= ~lower.SOFTWARE_RESET
        wanted = control | lower.LOW_POWER_REQUEST_SW if low else \
            control & ~lower.LOW_POWER_REQUEST_SW
        self.write_raw(LOWER, lower.MODULE_CONTROL.offset, bytes((wanted & 0xFF,)))
        durations = self.durations()
        if low:
            return self.wait_for_state({"ModuleLowPwr"}, durations.power_down_seconds)
        return self.wait_for_state({"ModuleReady"}, durations.power_up_seconds)

    def reset(self) -> str:
        """Software reset; wait for the module to come back and reach a steady state."""
        control = self.read_fields([lower.MODULE_CONTROL])["module_control"]
        base = control if isinstance(control, int) else 0
        self.write_raw(LOWER, lower.MODULE_CONTROL.offset,
                       bytes(((base | lower.SOFTWARE_RESET) & 0xFF,)))
        forget = getattr(self.io, "forget_page", None)
        if callable(forget):
            forget()
        self._identity = None
        durations = self.durations()
        return self.wait_for_state({"ModuleReady", "ModuleLowPwr", "ModuleFault"},
                                   durations.power_down_seconds + durations.power_up_seconds,
                                   tolerate_errors=True)

    def wait_for_state(self, wanted: set[str], advertised_seconds: float, *,
                       tolerate_errors: bool = False) -> str:
        """Poll the state until it is in ``wanted``; give up after the advertised time
        (plus a margin for the bus)."""
        deadline = self.monotonic() + advertised_seconds * 1.5 + 0.05
        interval = max(MIN_POLL_SECONDS, advertised_seconds * STATE_POLL_FRACTION)
        last: str | None = None
        while True:
            try:
                last = self.state()
            except DeviceError:
                if not tolerate_errors:
                    raise
            if last in wanted:
                return last
            if last == "ModuleFault":
                raise DeviceTimeout(f"module went to ModuleFault instead of {sorted(wanted)}",
                                    device=self.name)
            if self.monotonic() >= deadline:
                raise DeviceTimeout(
                    f"module still {last or 'unresponsive'} after the advertised "
                    f"{advertised_seconds:g} s; expected {' or '.join(sorted(wanted))}",
                    device=self.name)
            self.sleep(interval)

    def dump(self, page: int) -> bytes:
        """The raw 128 bytes of ``page`` (LOWER for 0-127), latched bytes included."""
        start = 0 if page == LOWER else 128
        return self.read_raw(page, start, 128)
