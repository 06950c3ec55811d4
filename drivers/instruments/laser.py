"""Tunable laser source driver: wavelength, output power, output on/off.

Every setting is sent as a change: the command, ``*OPC?`` (the laser settles
after a wavelength change or a turn-on before it answers) and the error
queue, in one write. Requests outside the range the laser reports are refused
before anything is sent.

Opening changes nothing: it connects and asks, in one write, what the unit has
(:data:`~drivers.instruments.commands.LASER_FEATURES`: its range queries, answered
then and kept) and its power unit. A power is always sent with the unit it is
written in (``:SOUR1:POW:UNIT 0;:SOUR1:POW -3.000``) and read with the unit it is
answered in, so nothing depends on a unit left set on the laser. A laser without
range queries gets its settings unchecked: its own range check refuses what it
cannot do (``DeviceRejected``, nothing changed), and :meth:`LaserDriver.range` is
``Unsupported``.
"""

from __future__ import annotations

import math
from types import TracebackType

from drivers.errors import ProtocolError, ValidationError
from drivers.features import Features
from drivers.instruments.commands import (
    LASER_COMMANDS,
    LASER_FEATURES,
    NOT_A_NUMBER,
    POWER_UNITS,
)
from drivers.instruments.features import (
    features_from,
    probe_name,
    probe_queries,
    unsupported,
)
from drivers.instruments.types import Identity, LaserRange, LaserSettings
from drivers.scpi.session import Probed, ScpiSession

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


def to_dbm(reply: str, unit: str, what: str, *, device: str) -> float:
    """A power the laser answered in ``unit`` (its reply to the power unit query: ``0``
    or ``DBM``, ``1`` or ``W``), in dBm."""
    value = parse_number(reply, what, device=device)
    if value is None:
        raise ProtocolError(f"{what}: the laser reports no value", device=device)
    word = unit.strip().lstrip("+").upper()
    if word in ("0", "DBM"):
        return value
    if word in ("1", "W"):
        if value <= 0.0:
            raise ProtocolError(f"{what}: {value:g} W is no power", device=device)
        return 10.0 * math.log10(value * 1000.0)
    raise ProtocolError(f"unknown power unit {unit!r}", device=device)


class LaserDriver:
    """One tunable laser source: module ``source`` of the instrument (1 for a benchtop)."""

    def __init__(self, session: ScpiSession, *, source: int = 1):
        if not 1 <= source <= 99:
            raise ValueError("source must be 1..99")
        self.session = session
        self.name = session.device
        self.source = source
        self._range: LaserRange | None = None
        self._probes = {**probe_queries(LASER_FEATURES, self._render),
                        _UNIT: self._render("power_unit")}

    # ---- lifecycle ----------------------------------------------------------------

    def open(self) -> LaserDriver:
        """Connect and ask what the unit has (once per session); either way the error
        queue is cleared, so that errors left by someone else are not blamed on our
        first change. Nothing is changed."""
        self.session.open()
        if self.session.probed(self._probes):
            self.session.write(LASER_COMMANDS["clear_status"].short())
        else:
            self.features()
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

    def _render(self, key: str, argument: str = "") -> str:
        return self._header(key) + (f" {argument}" if argument else "")

    def _query(self, key: str) -> str:
        return self.session.query(self._header(key))

    def _number(self, reply: str, what: str) -> float:
        value = parse_number(reply, what, device=self.name)
        if value is None:
            raise ProtocolError(f"{what}: the laser reports no value", device=self.name)
        return value

    def _change(self, command: str, what: str) -> None:
        self.features()  # the error query a change sends is the one the unit has
        self.session.change(command, what)

    # ---- what the unit has --------------------------------------------------------------

    def _answers(self) -> dict[str, Probed]:
        return self.session.probe(self._probes)

    def features(self) -> Features:
        """The optional features the laser has: asked once per session, in one write
        (the session keeps the answers)."""
        return features_from(LASER_FEATURES, self._answers())

    def require(self, key: str, purpose: str = "") -> None:
        """Raise :class:`~drivers.errors.Unsupported`, naming the feature (and
        ``purpose``, what needs it), when the laser lacks ``key``."""
        answers = self._answers()
        if not features_from(LASER_FEATURES, answers).has(key):
            raise unsupported(LASER_FEATURES, key, answers, device=self.name, purpose=purpose)

    # ---- identity and range -----------------------------------------------------------

    def identity(self) -> Identity:
        return parse_identity(self.session.query(LASER_COMMANDS["identify"].short()),
                              device=self.name)

    def range(self) -> LaserRange:
        """Tuning range (nm) and output power range (dBm) the laser reports: its answers
        to the probes; :class:`~drivers.errors.Unsupported` on a laser without range
        queries."""
        if self._range is None:
            self.require("range")
            self._range = self._range_from(self._answers())
        return self._range

    def _range_from(self, answers: dict[str, Probed]) -> LaserRange:
        """The range from the probes' replies (MIN and MAX of the wavelength, then of
        the power, in the unit the laser answered its unit query with)."""
        low_m, high_m, low_power, high_power = (
            answers[probe_name("range", index)].reply or ""
            for index in range(len(LASER_FEATURES["range"].probes)))
        unit = answers[_UNIT].reply
        if unit is None:
            raise ProtocolError("the laser did not answer its power unit query",
                                device=self.name)
        return LaserRange(
            wavelength_min_nm=self._number(low_m, "wavelength range") * NM_PER_M,
            wavelength_max_nm=self._number(high_m, "wavelength range") * NM_PER_M,
            power_min_dbm=to_dbm(low_power, unit, "power range", device=self.name),
            power_max_dbm=to_dbm(high_power, unit, "power range", device=self.name))

    def _known_range(self) -> LaserRange | None:
        """The range, or ``None`` on a laser without range queries."""
        return self.range() if self.features().has("range") else None

    # ---- settings ---------------------------------------------------------------------

    def set_wavelength_nm(self, wavelength_nm: float) -> None:
        """Tune to ``wavelength_nm``; returns once the laser has settled.

        Raises :class:`ValidationError` outside the laser's tuning range (on a laser
        without range queries, its own check refuses: ``DeviceRejected``).
        """
        limits = self._known_range()
        if limits is not None and not (
                limits.wavelength_min_nm <= wavelength_nm <= limits.wavelength_max_nm):
            raise ValidationError(
                f"wavelength {wavelength_nm:g} nm is outside the laser's range "
                f"{limits.wavelength_min_nm:g}..{limits.wavelength_max_nm:g} nm", device=self.name)
        self._change(self._render("wavelength_set", f"{wavelength_nm / NM_PER_M:.6E}"),
                     "set wavelength")

    def wavelength_nm(self) -> float:
        return round(self._number(self._query("wavelength"), "wavelength") * NM_PER_M, 4)

    def set_power_dbm(self, power_dbm: float) -> None:
        """Set the output power, sent in dBm with its unit in the same message; raises
        :class:`ValidationError` outside the laser's range (on a laser without range
        queries, its own check refuses: ``DeviceRejected``)."""
        limits = self._known_range()
        if limits is not None and not limits.power_min_dbm <= power_dbm <= limits.power_max_dbm:
            raise ValidationError(
                f"power {power_dbm:g} dBm is outside the laser's range "
                f"{limits.power_min_dbm:g}..{limits.power_max_dbm:g} dBm", device=self.name)
        unit = self._render("power_unit_set", str(POWER_UNITS["DBM"]))
        self._change(f"{unit};{self._render('power_set', f'{power_dbm:.3f}')}", "set power")

    def power_dbm(self) -> float:
        """The set output power, asked with the unit it is answered in."""
        reply = self.session.query(f"{self._render('power_unit')};{self._render('power')}")
        parts = reply.split(";")
        if len(parts) != 2:
            raise ProtocolError(f"power: expected the unit and the power, got {reply!r}",
                                device=self.name)
        return to_dbm(parts[1], parts[0], "power", device=self.name)

    def set_output(self, on: bool) -> None:
        """Turn the output on (returns once it is lit and settled) or off."""
        self._change(self._render("output_set", "1" if on else "0"),
                     "turn output on" if on else "turn output off")

    def output_on(self) -> bool:
        reply = self._query("output").strip()
        if reply not in ("0", "1", "+0", "+1"):
            raise ProtocolError(f"bad output state {reply!r}", device=self.name)
        return reply.lstrip("+") == "1"

    def settings(self) -> LaserSettings:
        return LaserSettings(self.wavelength_nm(), self.power_dbm(), self.output_on())


_UNIT = "power_unit"
"""The name of the power unit query among the probes."""
