"""The OCS's SCPI command set bound to the model (see drivers/ocs/commands.py).

:func:`make_interpreter` makes the interpreter of one client: its own status (error
queue and registers; the device's shared one on a unit built with a shared queue)
over the one device. Servers call it once per connection. How a reply is written
(the device's ``reply_form``) and whether the power monitors exist are read at each
query, so they can be switched on a running emulator, and so is whether the unit has
loss-of-light alarms (the :data:`~drivers.ocs.commands.ALARM_COMMANDS`) and the
project's other extensions (:data:`EXTENSION_KEYS`: the LC figures, the insertion-loss
table, the boot mode): a unit without them answers each of those headers -113, as it
would a header it never heard of.

Every program message (line) a client sends is counted on the device
(:class:`~emulators.scpi.requests.RequestLog`), and every command by its key: a real unit
answers a limited rate of them, and a client's rate is checked there.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from drivers.ocs.commands import (
    ALARM_COMMANDS,
    BOOT_MODES,
    COMMANDS,
    DEVICE_ERRORS,
    NOT_A_NUMBER,
)
from drivers.scpi.codes import SCPI_ERRORS
from emulators.ocs.model import OcsDevice
from emulators.scpi.common import common_handlers
from emulators.scpi.parser import (
    ChannelList,
    CommandTree,
    Handler,
    Param,
    ScpiError,
    ScpiInterpreter,
)
from emulators.scpi.requests import counting_interpreter
from emulators.scpi.status import ClientStatus

_TREE = CommandTree({**COMMANDS, **ALARM_COMMANDS})
EXTENSION_KEYS = frozenset({"lc_temperature", "lc_switch_time", "insertion_loss",
                            "boot_mode", "boot_mode_set"})
"""The commands a unit built without extensions (``OcsDevice.extensions``) lacks."""
_MESSAGES = {**SCPI_ERRORS, **DEVICE_ERRORS}


def _channels(param: Param) -> tuple[int, ...]:
    assert isinstance(param, ChannelList)  # check_params has made sure
    return param.channels


def _chanlist(ports: list[int]) -> str:
    return "(@" + ",".join(map(str, ports)) + ")"


def _format_power(reading: float | None) -> str:
    if reading is None or math.isnan(reading):
        return f"{NOT_A_NUMBER:.2E}"
    return f"{reading:.2f}"


def make_interpreter(device: OcsDevice, status: ClientStatus | None = None) -> ScpiInterpreter:
    """The interpreter of one client of ``device`` (a new client status unless given)."""
    status = status or device.new_client_status()
    polatis = "polatis"

    def connect_state(_: list[Param]) -> str:
        mapping = device.connection_map()
        return f"{_chanlist(list(mapping))},{_chanlist(list(mapping.values()))}"

    def connect_port(params: list[Param]) -> str:
        port = params[0]
        assert isinstance(port, int)
        connected = device.connected_to(port)
        if device.reply_form == polatis:
            return f'"{connected}"' if connected else '""'
        return str(connected)

    def subtract(params: list[Param]) -> None:
        device.subtract([p for param in params for p in _channels(param)])

    def port_state(params: list[Param]) -> str:
        ports = _channels(params[0])
        device.check_ports(ports)
        return "(" + ",".join(device.port_state(p) for p in ports) + ")"

    def power(params: list[Param]) -> str:
        if not device.power_monitors:
            raise ScpiError(-113, ":PMONitor:POWer? (this unit has no power monitors)")
        ports = _channels(params[0])
        device.check_ports(ports)
        limit = device.power_query_max_ports
        if device.reply_form == polatis and len(ports) > limit:
            raise ScpiError(-223, f"at most {limit} ports per power query")
        readings = ",".join(_format_power(power) for power in device.monitor_dbms(list(ports)))
        return f"({readings})" if device.reply_form == polatis else readings

    def boot_mode_set(params: list[Param]) -> None:
        word = str(params[0]).upper()
        for short, mode in BOOT_MODES.items():
            long_form = {"REST": "RESTORE"}.get(short, short)
            if word in (short, long_form):
                device.set_boot_mode(mode)
                return
        raise ScpiError(-224, f"boot mode {params[0]}; use DARK or RESTore")

    def boot_mode(_: list[Param]) -> str:
        return next(short for short, mode in BOOT_MODES.items() if mode == device.boot_mode)

    def insertion_loss(params: list[Param]) -> str:
        ingress, egress = _channels(params[0]), _channels(params[1])
        if len(ingress) != len(egress):
            raise ScpiError(-109, "ingress and egress lists differ in length")
        device.check_ports(ingress, want="ingress")
        device.check_ports(egress, want="egress")
        pairs = zip(ingress, egress, strict=True)
        return ",".join(f"{device.factory_loss_db(i, e):.3f}" for i, e in pairs)

    def last_switch(_: list[Param]) -> str:
        seconds = device.last_switch_seconds
        return f"{NOT_A_NUMBER:.2E}" if seconds is None else f"{seconds:.4f}"

    def optional(header: str, present: Callable[[], bool], lacking: str,
                 handler: Handler) -> Handler:
        """``handler`` while ``present()``; an undefined header otherwise."""

        def guarded(params: list[Param]) -> str | None:
            if not present():
                raise ScpiError(-113, f"{header} (this unit has no {lacking})")
            reply = handler(params)
            assert reply is None or isinstance(reply, str)
            return reply

        return guarded

    def alarms(key: str, handler: Handler) -> Handler:
        return optional(ALARM_COMMANDS[key].header, lambda: device.alarms_supported,
                        "loss-of-light alarms", handler)

    def threshold_set(params: list[Param]) -> None:
        value = params[1]
        assert isinstance(value, int | float)
        device.alarms.arm(_channels(params[0]), float(value))

    def threshold(params: list[Param]) -> str:
        ports = _channels(params[0])
        device.check_ports(ports)
        values = [device.alarms.threshold_dbm(p) for p in ports]
        return "(" + ",".join(_format_power(v) for v in values) + ")"

    def hysteresis_set(params: list[Param]) -> None:
        value = params[0]
        assert isinstance(value, int | float)
        device.alarms.set_hysteresis(float(value))

    def enable_set(params: list[Param]) -> None:
        word = str(params[0]).upper()
        device.alarms.set_enabled(word in ("1", "ON"))

    def alarm_state(params: list[Param]) -> str:
        states = device.alarms.states(_channels(params[0]))
        return "(" + ",".join("1" if lost else "0" for lost in states.values()) + ")"

    handlers: dict[str, Handler] = {
        **common_handlers(device, status),
        "size": lambda _: f"{device.size},{device.size}",
        "connect_add": lambda p: device.add(_channels(p[0]), _channels(p[1])),
        "connect_only": lambda p: device.only(_channels(p[0]), _channels(p[1])),
        "connect_subtract": subtract,
        "disconnect_all": lambda _: device.disconnect_all(),
        "connect_state": connect_state,
        "connect_port": connect_port,
        "port_disable": lambda p: device.set_enabled(_channels(p[0]), False),
        "port_enable": lambda p: device.set_enabled(_channels(p[0]), True),
        "port_state": port_state,
        "power": power,
        "boot_mode_set": boot_mode_set,
        "boot_mode": boot_mode,
        "lc_temperature": lambda _: f"{device.cell_temperature_celsius():.2f}",
        "lc_switch_time": last_switch,
        "insertion_loss": insertion_loss,
    }
    alarm_handlers: dict[str, Handler] = {
        "alarm_threshold_set": threshold_set,
        "alarm_threshold": threshold,
        "alarm_disarm": lambda p: device.alarms.disarm(_channels(p[0])),
        "alarm_hysteresis_set": hysteresis_set,
        "alarm_hysteresis": lambda _: f"{device.alarms.hysteresis_db:.2f}",
        "alarm_enable_set": enable_set,
        "alarm_enable": lambda _: "1" if device.alarms.enabled else "0",
        "alarm_state": alarm_state,
        "alarm_port": lambda _: str(device.alarm_port),
    }
    handlers.update({key: optional(COMMANDS[key].header, lambda: device.extensions,
                                   "such extension", handlers[key])
                     for key in EXTENSION_KEYS})
    handlers.update({key: alarms(key, handler) for key, handler in alarm_handlers.items()})
    return counting_interpreter(device.requests, device.clock, _TREE, handlers, status,
                                messages=_MESSAGES)
