"""Tunable laser source driver: wavelength, output power, output on/off.

Every setting is sent as a change: the command, ``*OPC?`` (the laser settles
after a wavelength change or a turn-on before it answers) and the error
queue, in one write. Requests outside the range the laser reports are refused
before anything is sent.
"""

from __future__ import annotations

import math
from types import TracebackType

from drivers.errors import ProtocolError, ValidationError
from drivers.instruments.commands import LASER_COMMANDS, NOT_A_NUMBER, POWER_UNITS
from drivers.instruments.types import Identity, LaserRange, LaserSettings
from drivers.scpi.session import ScpiSession

NM_PER_M = 1e9


def parse_number(text: str, what: str, *, device: str | None = None) -> float | None:
    """A number from an instrument; ``None`` for SCPI's not-a-number (no value)."""
    try:
        value = float(text.strip())
    except ValueError:
        raise ProtocolError(f"{what}: expected a number, got {text!r}", device=device) from None
    if math.isnan(value) or abs(value) >= NOT_A_NUMBER * 0.99:
        return None
    return value


def parse_identity(reply: str, *, device: str) -> Identity:
    fields = [f.strip() for f in reply.split(",")]
    if len(fields) != 4:
        raise ProtocolError(f"*IDN? reply has {len(fields)} fields, expected 4: {reply!r}",
                            device=device)
    return Identity(*fields)


class LaserDriver:
    """One tunable laser source: module ``source`` of the instrument (1 for a benchtop)."""

    def __init__(self, session: ScpiSession, *, source: int = 1):
        if not 1 <= source <= 99:
            raise ValueError("source must be 1..99")
        self.session = session
        self.name = session.device
        self.source = source
        self._range: LaserRange | None = None

    # ---- lifecycle ----------------------------------------------------------------

    def open(self) -> LaserDriver:
        self.session.open()
        # Errors left by someone else must not be blamed on our first change.
        self.session.write(LASER_COMMANDS["clear_status"].short())
        self._change("power_unit_set", str(POWER_UNITS["DBM"]), what="set power unit")
        return self

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> LaserDriver:
        return self.open()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # ---- wire -----------------------------------------------------------------------

    def _header(self, key: str) -> str:
        command = LASER_COMMANDS[key]
        first = command.nodes()[0]
        if first in ("SOURce", "OUTPut"):
            return command.short_with({first: self.source})
        return command.short()

    def _query(self, key: str, *args: str) -> str:
        return self.session.query(self._header(key) + (" " + ",".join(args) if args else ""))

    def _number(self, key: str, *args: str) -> float:
        value = parse_number(self._query(key, *args), key, device=self.name)
        if value is None:
            raise ProtocolError(f"{key}: the laser reports no value", device=self.name)
        return value

    def _change(self, key: str, *args: str, what: str) -> None:
        self.session.change(self._header(key) + " " + ",".join(args), what)

    # ---- identity and range -----------------------------------------------------------

    def identity(self) -> Identity:
        return parse_identity(self.session.query(LASER_COMMANDS["identify"].short()),
                              device=self.name)

    def range(self) -> LaserRange:
        """Tuning range (nm) and output power range (dBm) the laser reports."""
        if self._range is None:
            self._range = LaserRange(
                wavelength_min_nm=self._number("wavelength", "MIN") * NM_PER_M,
                wavelength_max_nm=self._number("wavelength", "MAX") * NM_PER_M,
                power_min_dbm=self._number("power", "MIN"),
                power_max_dbm=self._number("power", "MAX"),
            )
        return self._range

    # ---- settings ---------------------------------------------------------------------

    def set_wavelength_nm(self, wavelength_nm: float) -> None:
        """Tune to ``wavelength_nm``; returns once the laser has settled.

        Raises :class:`ValidationError` outside the laser's tuning range.
        """
        limits = self.range()
        if not limits.wavelength_min_nm <= wavelength_nm <= limits.wavelength_max_nm:
            raise ValidationError(
                f"wavelength {wavelength_nm:g} nm is outside the laser's range "
                f"{limits.wavelength_min_nm:g}..{limits.wavelength_max_nm:g} nm", device=self.name)
        self._change("wavelength_set", f"{wavelength_nm / NM_PER_M:.6E}", what="set wavelength")

    def wavelength_nm(self) -> float:
        return round(self._number("wavelength") * NM_PER_M, 4)

    def set_power_dbm(self, power_dbm: float) -> None:
        """Set the output power; raises :class:`ValidationError` outside the laser's range."""
        limits = self.range()
        if not limits.power_min_dbm <= power_dbm <= limits.power_max_dbm:
            raise ValidationError(
                f"power {power_dbm:g} dBm is outside the laser's range "
                f"{limits.power_min_dbm:g}..{limits.power_max_dbm:g} dBm", device=self.name)
        self._change("power_set", f"{power_dbm:.3f}", what="set power")

    def power_dbm(self) -> float:
        return self._number("power")

    def set_output(self, on: bool) -> None:
        """Turn the output on (returns once it is lit and settled) or off."""
        self._change("output_set", "1" if on else "0",
                     what="turn output on" if on else "turn output off")

    def output_on(self) -> bool:
        reply = self._query("output").strip()
        if reply not in ("0", "1", "+0", "+1"):
            raise ProtocolError(f"bad output state {reply!r}", device=self.name)
        return reply.lstrip("+") == "1"

    def settings(self) -> LaserSettings:
        return LaserSettings(self.wavelength_nm(), self.power_dbm(), self.output_on())
