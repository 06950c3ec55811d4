"""The instruments' SCPI command sets bound to their models (drivers/instruments/commands.py).

Each ``make_*_interpreter`` call makes the interpreter of one client, with its own
status (error queue and registers) over the one instrument; servers call it once
per connection. The common commands come from :mod:`emulators.scpi.common`.

A plainer unit lacks what its model says it lacks, read at each query (so it can be
switched on a running emulator): a header it does not have is an undefined header,
-113, and a range query's ``MIN``/``MAX`` on a laser without them a parameter not
allowed, -108; either way no reply, as a real unit answers. Every program message and
every command (by key, known to the unit or not) is counted on the device's
``requests`` (:class:`~emulators.scpi.requests.RequestLog`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from drivers.instruments.commands import (
    LASER_COMMANDS,
    METER_COMMANDS,
    NOT_A_NUMBER,
    POWER_UNITS,
)
from drivers.scpi.codes import SCPI_ERRORS
from emulators.instruments.laser import (
    POWER_MAX_DBM,
    POWER_MIN_DBM,
    WAVELENGTH_MAX_NM,
    WAVELENGTH_MIN_NM,
    TunableLaser,
)
from emulators.instruments.meter import PowerMeter
from emulators.scpi.common import common_handlers
from emulators.scpi.parser import (
    CommandTree,
    Handler,
    Param,
    ScpiError,
    ScpiInterpreter,
    SuffixedHandler,
    Suffixes,
)
from emulators.scpi.requests import counting_interpreter
from emulators.scpi.status import ClientStatus

_LASER_TREE = CommandTree(LASER_COMMANDS)
_METER_TREE = CommandTree(METER_COMMANDS)
_NAN = f"{NOT_A_NUMBER:.2E}"
LOGGING_KEYS = frozenset({"logging_set", "logging", "function_set", "function_state",
                          "function_result"})
"""The meter's commands a unit without logging (``PowerMeter.logging_supported``) lacks."""


def _undefined_unless(present: Callable[[], bool], header: str, lacking: str,
                      handler: Any) -> Any:
    """``handler`` (plain or suffixed) while ``present()``; an undefined header, -113,
    otherwise."""

    def guarded(*args: Any) -> Any:
        if not present():
            raise ScpiError(-113, f"{header} (this unit has no {lacking})")
        return handler(*args)

    return guarded


def _number(param: Param) -> float:
    if not isinstance(param, int | float):
        raise ScpiError(-104, "expected a number")
    return float(param)


def _unit(param: Param) -> int:
    """``0``/``DBM`` or ``1``/``W``."""
    if isinstance(param, str) and param.upper() in POWER_UNITS:
        return POWER_UNITS[param.upper()]
    if param in (0, 1) and isinstance(param, int):
        return param
    raise ScpiError(-224, f"power unit {param}; use DBM (0) or W (1)")


def _limit(params: list[Param], laser: TunableLaser, header: str) -> str | None:
    """``MIN``/``MAX`` (``MINimum``/``MAXimum``) of a range query, or ``None``; a laser
    without range queries takes no parameter (-108)."""
    if not params:
        return None
    if not laser.range_queries:
        raise ScpiError(-108, f"{header} takes no parameter on this unit")
    word = str(params[0]).upper()
    for short, long_form in (("MIN", "MINIMUM"), ("MAX", "MAXIMUM")):
        if word in (short, long_form):
            return short
    raise ScpiError(-224, f"{params[0]}; use MIN or MAX")


def _watts(dbm: float) -> float:
    return float(10.0 ** (dbm / 10.0) / 1000.0)


def _format_power(watts: float | None, unit: int) -> str:
    if watts is None or math.isnan(watts) or watts <= 0.0:
        return _NAN
    if unit == POWER_UNITS["W"]:
        return f"{watts:+.6E}"
    return f"{10.0 * math.log10(watts * 1000.0):+.4f}"


def _check_slot(suffixes: Suffixes, node: str) -> None:
    slot = suffixes.get(node, 1)
    if slot != 1:
        raise ScpiError(-222, f"no module in slot {slot}")


def make_laser_interpreter(laser: TunableLaser,
                           status: ClientStatus | None = None) -> ScpiInterpreter:
    """The interpreter of one client of ``laser`` (a new client status unless given)."""
    status = status or laser.new_client_status()

    def wavelength_set(params: list[Param], suffixes: Suffixes) -> None:
        _check_slot(suffixes, "SOURCE")
        laser.set_wavelength_nm(_number(params[0]) * 1e9)

    def wavelength(params: list[Param], suffixes: Suffixes) -> str:
        _check_slot(suffixes, "SOURCE")
        limit = _limit(params, laser, LASER_COMMANDS["wavelength"].header)
        nm = {"MIN": WAVELENGTH_MIN_NM, "MAX": WAVELENGTH_MAX_NM}.get(limit or "",
                                                                    laser.wavelength_nm)
        return f"{nm * 1e-9:+.11E}"

    def power_unit_set(params: list[Param], suffixes: Suffixes) -> None:
        _check_slot(suffixes, "SOURCE")
        laser.power_unit = _unit(params[0])

    def power_unit_query(_: list[Param], suffixes: Suffixes) -> str:
        _check_slot(suffixes, "SOURCE")
        return str(laser.power_unit)

    def power_set(params: list[Param], suffixes: Suffixes) -> None:
        _check_slot(suffixes, "SOURCE")
        value = _number(params[0])
        if laser.power_unit == POWER_UNITS["W"]:
            if value <= 0:
                raise ScpiError(-222, "power must be above 0 W")
            value = 10.0 * math.log10(value * 1000.0)
        laser.set_power_dbm(value)

    def power(params: list[Param], suffixes: Suffixes) -> str:
        _check_slot(suffixes, "SOURCE")
        limit = _limit(params, laser, LASER_COMMANDS["power"].header)
        dbm = {"MIN": POWER_MIN_DBM, "MAX": POWER_MAX_DBM}.get(limit or "", laser.power_dbm)
        return _format_power(_watts(dbm), laser.power_unit)

    def output_set(params: list[Param], suffixes: Suffixes) -> None:
        _check_slot(suffixes, "OUTPUT")
        word = str(params[0]).upper()
        laser.set_output(word in ("1", "ON"))

    def output(_: list[Param], suffixes: Suffixes) -> str:
        _check_slot(suffixes, "OUTPUT")
        return "1" if laser.output_on else "0"

    handlers = common_handlers(laser, status)
    suffixed: dict[str, SuffixedHandler] = {
        "wavelength_set": wavelength_set,
        "wavelength": wavelength,
        "power_unit_set": power_unit_set,
        "power_unit": power_unit_query,
        "power_set": power_set,
        "power": power,
        "output_set": output_set,
        "output": output,
    }
    return counting_interpreter(laser.requests, laser.clock, _LASER_TREE, handlers, status,
                                messages=SCPI_ERRORS, suffixed=suffixed)


def make_meter_interpreter(meter: PowerMeter,
                           status: ClientStatus | None = None) -> ScpiInterpreter:
    """The interpreter of one client of ``meter`` (a new client status unless given)."""
    status = status or meter.new_client_status()

    def port_of(suffixes: Suffixes, node: str) -> int:
        """The port a header names (``:SENS2``, ``:READ2``); its only channel is 1."""
        if suffixes.get("CHANNEL", 1) != 1:
            raise ScpiError(-222, f"channel {suffixes['CHANNEL']}: each port has channel 1 only")
        number = suffixes.get(node, 1)
        meter.port(number)
        return number

    def sense(action: str) -> SuffixedHandler:
        def handler(params: list[Param], suffixes: Suffixes) -> str | None:
            number = port_of(suffixes, "SENSE")
            port = meter.port(number)
            if action == "wavelength_set":
                meter.set_wavelength_m(number, _number(params[0]))
            elif action == "wavelength":
                return f"{port.wavelength_m:+.11E}"
            elif action == "averaging_set":
                meter.set_averaging_seconds(number, _number(params[0]))
            elif action == "averaging":
                return f"{port.averaging_seconds:+.6E}"
            elif action == "unit_set":
                meter.set_unit(number, _unit(params[0]))
            elif action == "unit":
                return str(port.unit)
            elif action == "logging_set":
                samples = params[0]
                if not isinstance(samples, int):
                    raise ScpiError(-104, "the sample count is a whole number")
                meter.set_logging(number, samples, _number(params[1]))
            elif action == "logging":
                return f"{port.log_samples},{port.log_interval:+.6E}"
            elif action == "function_state":
                return meter.logging_state(number)
            return None

        return handler

    def function_set(params: list[Param], suffixes: Suffixes) -> None:
        number = port_of(suffixes, "SENSE")
        function, action = (str(p).upper() for p in params)
        if function not in ("LOGG", "LOGGING"):
            raise ScpiError(-224, f"function {params[0]}; this meter logs (LOGGing) only")
        if action in ("STAR", "START"):
            meter.start_logging(number)
        elif action == "STOP":
            meter.stop_logging(number)
        else:
            raise ScpiError(-224, f"{params[1]}; use STARt or STOP")

    async def function_result(_: list[Param], suffixes: Suffixes) -> bytes:
        data = await meter.logging_result(port_of(suffixes, "SENSE"))
        count = str(len(data))
        return f"#{len(count)}{count}".encode("ascii") + data

    async def read(_: list[Param], suffixes: Suffixes) -> str:
        number = port_of(suffixes, "READ")
        [watts] = await meter.read([number])
        return _format_power(watts, meter.port(number).unit)

    def fetch(_: list[Param], suffixes: Suffixes) -> str:
        number = port_of(suffixes, "FETCH")
        port = meter.port(number)
        return _format_power(port.last_w, port.unit)

    async def read_all(_: list[Param]) -> str:
        numbers = list(range(1, meter.channels + 1))
        readings = await meter.read(numbers)
        return ",".join(_format_power(w, meter.port(n).unit)
                        for n, w in zip(numbers, readings, strict=True))

    def fetch_all(_: list[Param]) -> str:
        return ",".join(_format_power(port.last_w, port.unit) for port in meter.ports)

    handlers: dict[str, Handler] = {
        **common_handlers(meter, status),
        **{key: _undefined_unless(lambda: meter.all_ports, METER_COMMANDS[key].header,
                                  "all-ports reading", handler)
           for key, handler in (("read_all", read_all), ("fetch_all", fetch_all))}}
    suffixed: dict[str, SuffixedHandler] = {
        key: sense(key) for key in ("wavelength_set", "wavelength", "averaging_set", "averaging",
                                    "unit_set", "unit", "logging_set", "logging",
                                    "function_state")
    }
    suffixed.update({"function_set": function_set, "function_result": function_result,
                     "read": read, "fetch": fetch})
    suffixed.update({key: _undefined_unless(lambda: meter.logging_supported,
                                            METER_COMMANDS[key].header, "logging",
                                            suffixed[key])
                     for key in LOGGING_KEYS})
    return counting_interpreter(meter.requests, meter.clock, _METER_TREE, handlers, status,
                                messages=SCPI_ERRORS, suffixed=suffixed)
