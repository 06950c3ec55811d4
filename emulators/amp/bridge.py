"""The USB-serial I2C bridge board, device side: msoctl's own line protocol.

The board sits between a host's serial port and a two-wire bus with the
amplifier module on it. It is served on a pty (``path``, a serial port at
115200 8N1) and on TCP loopback (``port``; a host opens it with pyserial as
``socket://127.0.0.1:PORT``).

Protocol, version 1:

- ASCII lines; the host ends lines with LF (CR LF accepted); the bridge
  answers every line with exactly one line ending in LF, in order (a blank
  line too: ``ERR SYNTAX empty line``). Fields are separated by spaces.
  Command letters and hex digits may be upper or lower case; replies use
  upper case.
- ``V`` -> ``OK MSO-I2C-BRIDGE 1 400`` (protocol version 1, bus speed in kHz)
- ``R AA OO NN`` (hex: 7-bit device address, start offset, byte count
  01-80) -> ``OK <2*NN hex digits>``: one combined transaction (offset
  write, repeated START, read).
- ``W AA OO DDDD…`` (hex data, 1..128 bytes) -> ``OK``: one write
  transaction.
- errors: ``NACK`` (the device did not acknowledge), ``ERR BUS`` (bus hung),
  ``ERR SYNTAX <text>`` (unknown command, empty line, wrong number of
  fields, a field that is not hex, an odd number of data digits, a line over
  1024 characters), ``ERR RANGE <text>`` (offset+count past 255, count 0 or over
  128, an address that is not a 7-bit address, a field over two digits).
- A transaction to an address with no device gives ``NACK``.

Timing: each reply is held for the transaction's bus time at the bus speed
(see :mod:`emulators.amp.i2c`; a 128-byte read takes about 3 ms), waited on
the clock, so timing is physical in real time and jumps a stepped clock. A
hung bus is reported after the bridge's 25 ms bus timeout (the SMBus
figure). Transport faults (latency, drop, garbage, truncate, freeze) are
carried out by the line servers of :mod:`emulators.scpi.server`; the
``reset`` fault of an amplifier resets the module, not the connection.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable

from emulators.amp.i2c import MAX_TRANSFER, I2cBusHang, I2cNack, I2cSlave
from emulators.clock import Clock
from emulators.faults import TRANSPORT_FAULTS, FaultInjector
from emulators.scpi.server import ScpiPtyServer, ScpiTcpServer, split_lf_lines

PROTOCOL_VERSION = 1
IDENT = "MSO-I2C-BRIDGE"
MAX_LINE_CHARS = 1024
BUS_TIMEOUT_SECONDS = 0.025
BAUD = 115200
BRIDGE_FAULTS = TRANSPORT_FAULTS - {"reset"}
_HEX = frozenset(string.hexdigits)


class _Refused(Exception):
    def __init__(self, reply: str):
        super().__init__(reply)
        self.reply = reply


def _hex_field(text: str, name: str) -> int:
    if not text or not set(text) <= _HEX:
        raise _Refused(f"ERR SYNTAX {name} {text!r} is not hex")
    if len(text) > 2:
        raise _Refused(f"ERR RANGE {name} {text} is more than two hex digits")
    return int(text, 16)


class BridgeInterpreter:
    """Executes protocol lines against the slaves on one bus."""

    def __init__(self, slaves: Iterable[I2cSlave], *, clock: Clock, bus_hz: int = 400_000):
        self.slaves = {slave.address: slave for slave in slaves}
        self.clock = clock
        self.bus_hz = bus_hz

    def line_too_long(self) -> str | None:
        return "ERR SYNTAX line too long"

    async def execute(self, line: str) -> str | None:
        reply, bus_seconds = self.transact(line)
        await self.clock.sleep(bus_seconds)
        return reply

    def transact(self, line: str) -> tuple[str, float]:
        """The reply to ``line`` and the bus time the transaction took (seconds)."""
        try:
            return self._transact(line)
        except _Refused as refused:
            return refused.reply, 0.0

    def _transact(self, line: str) -> tuple[str, float]:
        text = line.strip()
        if not text:
            raise _Refused("ERR SYNTAX empty line")
        if len(text) > MAX_LINE_CHARS:
            raise _Refused("ERR SYNTAX line too long")
        if not text.isascii() or not text.replace("\t", " ").isprintable():
            raise _Refused("ERR SYNTAX the line is not printable ASCII")
        fields = text.split()
        command = fields[0].upper()
        if command == "V":
            if len(fields) != 1:
                raise _Refused("ERR SYNTAX V takes no arguments")
            return f"OK {IDENT} {PROTOCOL_VERSION} {self.bus_hz // 1000}", 0.0
        if command not in ("R", "W"):
            raise _Refused(f"ERR SYNTAX unknown command {fields[0]!r}")
        usage = "R AA OO NN" if command == "R" else "W AA OO DATA"
        if len(fields) != 4:
            raise _Refused(f"ERR SYNTAX usage: {usage}")
        address = _hex_field(fields[1], "address")
        offset = _hex_field(fields[2], "offset")
        if address > 0x7F:
            raise _Refused(f"ERR RANGE address {address:02X} is not a 7-bit address "
                           f"(the 7-bit form of {address:02X} is {address >> 1:02X})")
        if command == "R":
            count = _hex_field(fields[3], "count")
            return self._read(address, offset, count)
        data_text = fields[3]
        if not set(data_text) <= _HEX:
            raise _Refused("ERR SYNTAX data is not hex")
        if len(data_text) % 2:
            raise _Refused("ERR SYNTAX data has an odd number of hex digits")
        return self._write(address, offset, bytes.fromhex(data_text))

    def _check_span(self, offset: int, count: int) -> None:
        if not 1 <= count <= MAX_TRANSFER:
            raise _Refused(f"ERR RANGE count {count:02X} is not 01..80")
        if offset + count > 256:
            raise _Refused(f"ERR RANGE offset {offset:02X} + count {count:02X} runs past FF")

    def _slave(self, address: int) -> I2cSlave | None:
        return self.slaves.get(address)

    def _bus(self, slave: I2cSlave | None, kind: str, count: int,
             action: Callable[[I2cSlave], str]) -> tuple[str, float]:
        nack_seconds = 11 / self.bus_hz
        if slave is None:
            return "NACK", nack_seconds
        try:
            reply = action(slave)
        except I2cNack:
            return "NACK", nack_seconds
        except I2cBusHang:
            return "ERR BUS", BUS_TIMEOUT_SECONDS
        return reply, slave.transaction_seconds(kind, count)

    def _read(self, address: int, offset: int, count: int) -> tuple[str, float]:
        self._check_span(offset, count)
        return self._bus(self._slave(address), "read", count,
                         lambda s: "OK " + s.read(offset, count).hex().upper())

    def _write(self, address: int, offset: int, data: bytes) -> tuple[str, float]:
        self._check_span(offset, len(data))

        def write(slave: I2cSlave) -> str:
            slave.write(offset, data)
            return "OK"

        return self._bus(self._slave(address), "write", len(data), write)


class BridgeBoard:
    """The board as the line servers see it: always powered (USB), faults of the module."""

    def __init__(self, name: str, clock: Clock, faults: FaultInjector):
        self.name = name
        self.clock = clock
        self.faults = faults
        self.power_listeners: list[Callable[[bool], None]] = []

    def is_up(self) -> bool:
        return True

    def seconds_until_up(self) -> float:
        return 0.0


class I2cBridge:
    """A bridge board on TCP loopback and, with ``serial_console``, on a pty."""

    def __init__(
        self,
        name: str,
        slaves: Iterable[I2cSlave],
        *,
        clock: Clock,
        faults: FaultInjector,
        serial_console: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        slaves = list(slaves)
        bus_hz = slaves[0].bus_hz if slaves else 400_000
        if any(s.bus_hz != bus_hz for s in slaves):
            raise ValueError("every device on one bus runs at the same speed")
        self.board = BridgeBoard(name, clock, faults)
        self.interpreter = BridgeInterpreter(slaves, clock=clock, bus_hz=bus_hz)
        self.tcp = ScpiTcpServer(self.board, self.interpreter, host=host, port=port,
                                 transport_faults=BRIDGE_FAULTS, split=split_lf_lines)
        self.pty: ScpiPtyServer | None = None
        if serial_console:
            self.pty = ScpiPtyServer(self.board, self.interpreter, baud=BAUD, terminator=b"\n",
                                     transport_faults=BRIDGE_FAULTS, split=split_lf_lines)

    @property
    def port(self) -> int:
        return self.tcp.port

    @property
    def path(self) -> str | None:
        return None if self.pty is None else self.pty.path

    async def start(self) -> None:
        await self.tcp.start()
        if self.pty is not None:
            await self.pty.start()

    async def stop(self) -> None:
        await self.tcp.stop()
        if self.pty is not None:
            await self.pty.stop()
