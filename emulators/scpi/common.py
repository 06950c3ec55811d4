"""The handlers of the IEEE 488.2 common commands and SCPI-99's required commands, bound
to one device and one client's status; every SCPI emulator of the project starts
its handler table from :func:`common_handlers` (the commands are in
:mod:`drivers.scpi.common`).

What each does, by the standard: ``*CLS`` clears the client's error queue, event
registers and a pending ``*OPC`` (IEEE 488.2 §10.3); ``*ESE``/``*SRE`` take 0..255,
``*SRE`` ignoring bit 6 (§10.10, §10.34); ``*ESR?`` reads and clears (§10.12);
``*OPC`` sets ESR bit 0 once the device's pending operations are done, ``*OPC?``
answers ``1`` then, ``*WAI`` holds the rest of the input until then (§10.18, §10.19,
§10.39); ``*RST`` is the device's reset and forgets a pending ``*OPC`` (§10.32);
``*STB?`` reads the status byte with MSS in bit 6 (§10.36); ``*TST?`` runs the
device's self-test (§10.38). ``:SYST:ERR[:NEXT]?`` takes the oldest error
(SCPI-99 vol. 2 §21.8), ``:SYST:VERS?`` answers ``1999.0`` (§21.21), and the
``:STAT`` register sets take 0..65535 with bit 15 dropped (vol. 2 ch. 20).

The optional error-queue queries of SCPI-99 vol. 2 §21.8 (``:SYST:ERR:ALL?``,
``:COUN?``, ``:CODE[:NEXT]?``, ``:CODE:ALL?``) are answered too, unless the device is
built without them (:attr:`ScpiDevice.error_extras` false, as a unit that has only
``:SYST:ERR[:NEXT]?``): each is then an undefined header, -113.
"""

from __future__ import annotations

from collections.abc import Callable

from drivers.scpi.common import REGISTER_MASK, SCPI_ERROR_EXTRAS, SCPI_VERSION
from emulators.scpi.device import ScpiDevice
from emulators.scpi.parser import Handler, Param, ScpiError, format_error
from emulators.scpi.status import ClientStatus, RegisterSet

_MSS = 1 << 6


def _integer(param: Param, high: int, what: str) -> int:
    """A register value: a number rounded to an integer, 0..``high``, else -222."""
    if not isinstance(param, int | float):
        raise ScpiError(-104, f"{what} takes a number")
    value = round(param)
    if not 0 <= value <= high:
        raise ScpiError(-222, f"{what} takes 0..{high}")
    return value


def _register_handlers(key: str, node: str, registers: RegisterSet) -> dict[str, Handler]:
    def setter(attribute: str, what: str) -> Handler:
        def handler(params: list[Param]) -> None:
            setattr(registers, attribute, _integer(params[0], 65535, what) & REGISTER_MASK)

        return handler

    return {
        f"{key}_event": lambda _: str(registers.read_event()),
        f"{key}_condition": lambda _: str(registers.condition()),
        f"{key}_enable_set": setter("enable", f":STAT:{node}:ENAB"),
        f"{key}_enable": lambda _: str(registers.enable),
        f"{key}_ptransition_set": setter("positive", f":STAT:{node}:PTR"),
        f"{key}_ptransition": lambda _: str(registers.positive),
        f"{key}_ntransition_set": setter("negative", f":STAT:{node}:NTR"),
        f"{key}_ntransition": lambda _: str(registers.negative),
    }


def _error_extras(device: ScpiDevice, status: ClientStatus) -> dict[str, Handler]:
    """Handlers of ``SCPI_ERROR_EXTRAS``: each an undefined header on a device without
    them."""

    def errors_all() -> str:
        return ",".join(format_error(code, text) for code, text in status.errors.drain())

    def codes_all() -> str:
        return ",".join(str(code) for code, _ in status.errors.drain())

    answers: dict[str, Callable[[], str]] = {
        "errors_all": errors_all,
        "error_count": lambda: str(len(status.errors)),
        "error_code": lambda: str(status.errors.pop()[0]),
        "error_code_all": codes_all,
    }

    def guarded(key: str, answer: Callable[[], str]) -> Handler:
        def handler(_: list[Param]) -> str:
            if not device.error_extras:
                raise ScpiError(-113, f"{SCPI_ERROR_EXTRAS[key].header} (this unit has only "
                                      ":SYST:ERR[:NEXT]?)")
            return answer()

        return handler

    return {key: guarded(key, answer) for key, answer in answers.items()}


def common_handlers(device: ScpiDevice, status: ClientStatus) -> dict[str, Handler]:
    """Handlers for every key of ``IEEE488_COMMON``, ``SCPI_REQUIRED`` and
    ``SCPI_ERROR_EXTRAS``."""

    async def until_done() -> None:
        await device.clock.sleep(device.pending_until() - device.clock.now())

    async def operation_complete(_: list[Param]) -> str:
        await until_done()
        return "1"

    async def wait(_: list[Param]) -> None:
        await until_done()

    def event_status_enable_set(params: list[Param]) -> None:
        status.event_status_enable = _integer(params[0], 255, "*ESE")

    def service_request_enable_set(params: list[Param]) -> None:
        status.service_request_enable = _integer(params[0], 255, "*SRE") & ~_MSS

    def reset(_: list[Param]) -> None:
        status.cancel_operation_complete()
        device.reset()

    def preset(_: list[Param]) -> None:
        status.operation.preset()
        status.questionable.preset()

    return {
        "clear_status": lambda _: status.clear(),
        "event_status_enable_set": event_status_enable_set,
        "event_status_enable": lambda _: str(status.event_status_enable),
        "event_status": lambda _: str(status.read_event_status()),
        "identify": lambda _: device.identity(),
        "operation_complete_set": lambda _: status.arm_operation_complete(device.pending_until()),
        "operation_complete": operation_complete,
        "reset": reset,
        "service_request_enable_set": service_request_enable_set,
        "service_request_enable": lambda _: str(status.service_request_enable),
        "status_byte": lambda _: str(status.status_byte()),
        "self_test": lambda _: str(device.self_test()),
        "wait": wait,
        "error": lambda _: format_error(*status.errors.pop()),
        "version": lambda _: SCPI_VERSION,
        **_register_handlers("operation", "OPER", status.operation),
        **_register_handlers("questionable", "QUES", status.questionable),
        "status_preset": preset,
        **_error_extras(device, status),
    }
