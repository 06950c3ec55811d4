"""Multiport optical power meter driver: settings, single reads, fast logging.

Ports are numbered 1..``channels``; each is its own sensor (``:SENSe<n>``). A
setting for many ports travels as one program message (``;``-joined units),
and so do the logging starts, so every port starts logging at the same
instant. Readings are taken in watts and converted here, so nothing depends
on a unit left set on the instrument.

Opening changes nothing: it connects and asks, in one write, what the unit has
(:data:`~drivers.instruments.commands.METER_FEATURES`: reading every port at once,
logging). The first request that needs the ports in watts and idle (a reading, a
setting, a logging) sets them so first, in one change: any logging a controller that
died left running stopped (a logging port refuses settings, -221), every port's unit
set to watts. Without the all-ports query the ports are read one by one, their
queries ``;``-joined in one program message (as many as their averaging times fit in
half the timeout); without logging, every logging request is
:class:`~drivers.errors.Unsupported` before anything is sent.
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Iterable, Iterator
from types import TracebackType

from drivers.errors import DeviceRejected, ProtocolError, ValidationError
from drivers.features import Features
from drivers.instruments.commands import (
    LOGGING_COMPLETE,
    LOGGING_IN_PROGRESS,
    MAX_LOGGING_SAMPLES,
    METER_COMMANDS,
    METER_FEATURES,
    POWER_UNITS,
)
from drivers.instruments.features import features_from, probe_queries, unsupported
from drivers.instruments.laser import NM_PER_M, parse_identity, parse_number
from drivers.instruments.types import Identity, PowerTrace
from drivers.scpi.session import ScpiSession

MIN_AVERAGING_SECONDS = 1e-6
MAX_AVERAGING_SECONDS = 10.0
_FLOAT32 = 4


def watts_to_dbm(watts: float | None) -> float | None:
    """``None`` for no reading, or no light at all (zero or negative after offset)."""
    if watts is None or not math.isfinite(watts) or watts <= 0.0:
        return None
    return 10.0 * math.log10(watts * 1000.0)


class MeterDriver:
    """A power meter with ``channels`` ports (the inventory says how many are wired)."""

    def __init__(self, session: ScpiSession, *, channels: int):
        if not 1 <= channels <= 1024:
            raise ValueError("channels must be 1..1024")
        self.session = session
        self.name = session.device
        self.channels = channels
        self._logging: dict[int, tuple[int, float]] = {}  # port -> (samples, interval)
        self._averaging: dict[int, float] = {}  # port -> seconds, as last set or read
        self._ready = False
        self._probes = probe_queries(METER_FEATURES, self._render)

    # ---- lifecycle ----------------------------------------------------------------

    def open(self) -> MeterDriver:
        """Connect and ask what the unit has (once per session); either way the error
        queue is cleared, so that errors left by someone else are not blamed on our
        first change. Nothing is changed (the set-up is done again by the first request
        that needs it: the meter may have been used meanwhile)."""
        self.session.open()
        self._ready = False
        if self.session.probed(self._probes):
            self.session.write(METER_COMMANDS["clear_status"].short())
        else:
            self.features()
        return self

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> MeterDriver:
        return self.open()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # ---- what the unit has --------------------------------------------------------------

    def features(self) -> Features:
        """The optional features the meter has: asked once per session, in one write
        (the session keeps the answers)."""
        return features_from(METER_FEATURES, self.session.probe(self._probes))

    def require(self, key: str, purpose: str = "") -> None:
        """Raise :class:`~drivers.errors.Unsupported`, naming the feature (and
        ``purpose``, what needs it), when the meter lacks ``key``."""
        answers = self.session.probe(self._probes)
        if not features_from(METER_FEATURES, answers).has(key):
            raise unsupported(METER_FEATURES, key, answers, device=self.name, purpose=purpose)

    def _prepare(self) -> None:
        """Before the first request that needs it: every port idle (logging stopped)
        and reading in watts, in one change."""
        if self._ready:
            return
        ports = self.ports(None)
        parts = [self._each("unit_set", ports, str(POWER_UNITS["W"]))]
        if self.features().has("logging"):
            # A controller that died mid-measurement leaves the ports logging, and a
            # logging port refuses settings (-221): stopped before the unit is set.
            parts.insert(0, self._each("function_set", ports, "LOGG", "STOP"))
        self.session.change(";".join(parts), "set up the meter (idle, in watts)")
        self._ready = True

    # ---- wire -----------------------------------------------------------------------

    def ports(self, channels: Iterable[int] | None) -> list[int]:
        """The ports named (all when ``None``), checked against the meter's port count."""
        chosen = list(range(1, self.channels + 1)) if channels is None else list(channels)
        for port in chosen:
            if not 1 <= port <= self.channels:
                raise ValidationError(f"power meter port {port} is out of range "
                                      f"1..{self.channels}", device=self.name)
        return chosen

    def _header(self, key: str, port: int) -> str:
        command = METER_COMMANDS[key]
        if "CHANnel" not in command.nodes():  # a query of the whole meter
            return command.short()
        return command.short_with({command.nodes()[0]: port, "CHANnel": 1})

    def _render(self, key: str, argument: str = "") -> str:
        """A probe: ``key`` on port 1."""
        return self._header(key, 1) + (f" {argument}" if argument else "")

    def _each(self, key: str, ports: list[int], *args: str) -> str:
        tail = " " + ",".join(args) if args else ""
        return ";".join(self._header(key, port) + tail for port in ports)

    def _change(self, key: str, ports: list[int], *args: str, what: str) -> None:
        if ports:
            self._prepare()
            self.session.change(self._each(key, ports, *args), what)

    def _checked(self, command: str, what: str) -> str:
        """The reply to ``command`` (queries ``;``-joined), the error queue asked in the
        same write: a query refused on the way answers at once, not by a timeout."""
        reply, entries = self.session.query_checked(command)
        if entries:
            text = "; ".join(f"{code} {message}" for code, message in entries)
            raise DeviceRejected(f"{what} refused: {text}", device=self.name,
                                 errors=tuple(f"{code},{message}" for code, message in entries))
        if reply is None:
            raise ProtocolError(f"{what}: no reply and no error", device=self.name)
        return reply

    def _values(self, reply: str, count: int, what: str) -> list[float | None]:
        parts = reply.split(",")
        if len(parts) < count:
            raise ProtocolError(f"{what}: {len(parts)} values for {count} ports",
                                device=self.name)
        return [parse_number(part, what, device=self.name) for part in parts[:count]]

    # ---- identity and settings ----------------------------------------------------------

    def identity(self) -> Identity:
        return parse_identity(self.session.query(METER_COMMANDS["identify"].short()),
                              device=self.name)

    def set_wavelength_nm(self, wavelength_nm: float,
                          channels: Iterable[int] | None = None) -> None:
        """Calibration wavelength of the ports (every port when ``None``)."""
        if not 400.0 <= wavelength_nm <= 1800.0:
            raise ValidationError(f"wavelength {wavelength_nm:g} nm is outside 400..1800 nm",
                                  device=self.name)
        self._change("wavelength_set", self.ports(channels), f"{wavelength_nm / NM_PER_M:.6E}",
                     what="set wavelength")

    def wavelength_nm(self, channel: int) -> float | None:
        [port] = self.ports([channel])
        value = parse_number(self.session.query(self._header("wavelength", port)),
                             "wavelength", device=self.name)
        return None if value is None else round(value * NM_PER_M, 4)

    def set_averaging_seconds(self, seconds: float,
                              channels: Iterable[int] | None = None) -> None:
        """Averaging time of a single reading, 1 µs..10 s."""
        if not MIN_AVERAGING_SECONDS <= seconds <= MAX_AVERAGING_SECONDS:
            raise ValidationError(f"averaging time {seconds:g} s is outside "
                                  f"{MIN_AVERAGING_SECONDS:g}..{MAX_AVERAGING_SECONDS:g} s",
                                  device=self.name)
        ports = self.ports(channels)
        self._change("averaging_set", ports, f"{seconds:.6E}", what="set averaging time")
        self._averaging.update(dict.fromkeys(ports, seconds))

    def averaging_seconds(self, channel: int) -> float | None:
        [port] = self.ports([channel])
        value = parse_number(self.session.query(self._header("averaging", port)),
                             "averaging time", device=self.name)
        if value is not None:
            self._averaging[port] = value
        return value

    # ---- single readings ------------------------------------------------------------------

    def read_dbm(self, channel: int) -> float | None:
        """One new reading of one port (takes its averaging time); ``None`` for no light."""
        [port] = self.ports([channel])
        self._prepare()
        watts = parse_number(self.session.query(self._header("read", port)), "reading",
                             device=self.name)
        return watts_to_dbm(watts)

    def read_all_dbm(self, channels: Iterable[int] | None = None) -> dict[int, float | None]:
        """One new reading of the ports (every port when ``None``): all at once where
        the meter reads every port at once (the longest averaging time), else port by
        port (the sum of theirs)."""
        ports = self.ports(channels)
        self._prepare()
        if self.features().has("all_ports"):
            reply = self.session.query(METER_COMMANDS["read_all"].short())
            return self._pick(reply, ports)
        readings: dict[int, float | None] = {}
        for chunk in self._within_timeout(ports):
            readings.update(self._each_port("read", chunk))
        return readings

    def fetch_all_dbm(self, channels: Iterable[int] | None = None) -> dict[int, float | None]:
        """The last reading of the ports (every port when ``None``), without measuring
        again: one query either way."""
        ports = self.ports(channels)
        self._prepare()
        if self.features().has("all_ports"):
            return self._pick(self.session.query(METER_COMMANDS["fetch_all"].short()), ports)
        return self._each_port("fetch", ports)

    def _pick(self, reply: str, ports: list[int]) -> dict[int, float | None]:
        """``ports``' readings from an all-ports reply (port 1 first)."""
        watts = self._values(reply, self.channels, "readings")
        return {port: watts_to_dbm(watts[port - 1]) for port in ports}

    def _each_port(self, key: str, ports: list[int]) -> dict[int, float | None]:
        """One query per port (``read`` or ``fetch``), all in one program message."""
        if not ports:
            return {}
        values = self._checked(self._each(key, ports), "readings").split(";")
        if len(values) != len(ports):
            raise ProtocolError(f"readings: {len(values)} values for {len(ports)} ports",
                                device=self.name)
        return {port: watts_to_dbm(parse_number(value, "reading", device=self.name))
                for port, value in zip(ports, values, strict=True)}

    def _within_timeout(self, ports: list[int]) -> Iterator[list[int]]:
        """``ports`` in runs whose readings, one after another, take at most half the
        session's timeout by their averaging times (a port alone when its own takes
        longer); the averaging times not known yet are asked first, in one message."""
        unknown = [port for port in ports if port not in self._averaging]
        if unknown:
            reply = self._checked(self._each("averaging", unknown), "averaging times")
            values = reply.split(";")
            if len(values) != len(unknown):
                raise ProtocolError(f"averaging times: {len(values)} values for "
                                    f"{len(unknown)} ports", device=self.name)
            for port, value in zip(unknown, values, strict=True):
                self._averaging[port] = parse_number(value, "averaging time",
                                                     device=self.name) or 0.0
        budget = self.session.timeout_seconds / 2
        run: list[int] = []
        spent = 0.0
        for port in ports:
            seconds = self._averaging[port]
            if run and spent + seconds > budget:
                yield run
                run, spent = [], 0.0
            run.append(port)
            spent += seconds
        if run:
            yield run

    # ---- logging --------------------------------------------------------------------------

    def configure_logging(self, samples: int, interval_seconds: float,
                          channels: Iterable[int] | None = None) -> None:
        """Set the ports to log ``samples`` samples, one every ``interval_seconds``.

        The whole logging must fit in the session's timeout, which
        :meth:`wait_logging` waits at most. :class:`~drivers.errors.Unsupported` on a
        meter without logging.
        """
        self.require("logging")
        ports = self.ports(channels)
        if not 1 <= samples <= MAX_LOGGING_SAMPLES:
            raise ValidationError(f"logging takes 1..{MAX_LOGGING_SAMPLES} samples, "
                                  f"not {samples}", device=self.name)
        if not MIN_AVERAGING_SECONDS <= interval_seconds <= MAX_AVERAGING_SECONDS:
            raise ValidationError(f"logging interval {interval_seconds:g} s is outside "
                                  f"{MIN_AVERAGING_SECONDS:g}..{MAX_AVERAGING_SECONDS:g} s",
                                  device=self.name)
        duration = samples * interval_seconds
        if duration >= self.session.timeout_seconds * 0.8:
            raise ValidationError(f"a logging of {duration:g} s would outlast the meter's "
                                  f"{self.session.timeout_seconds:g} s timeout",
                                  device=self.name)
        self._change("logging_set", ports, str(samples), f"{interval_seconds:.6E}",
                     what="configure logging")
        for port in ports:
            self._logging[port] = (samples, interval_seconds)

    def start_logging(self, channels: Iterable[int] | None = None) -> None:
        """Start the configured logging on the ports, all in one program message."""
        self.require("logging")
        ports = self.ports(channels)
        missing = [p for p in ports if p not in self._logging]
        if missing:
            raise ValidationError(f"logging is not configured on ports {missing}",
                                  device=self.name)
        if not ports:
            return
        # No *OPC? here: it would wait for the logging to end.
        self.session.change(self._each("function_set", ports, "LOGG", "STAR"), "start logging",
                            wait=False)

    def stop_logging(self, channels: Iterable[int] | None = None) -> None:
        """Stop any logging on the ports; their samples are discarded. Nothing to do on
        a meter without logging, nor on the first request (setting the meter up stops
        every port)."""
        ports = self.ports(channels)
        if not self.features().has("logging"):
            return
        if not self._ready:
            self._prepare()
            return
        self._change("function_set", ports, "LOGG", "STOP", what="stop logging")

    def wait_logging(self, channels: Iterable[int] | None = None) -> None:
        """Wait until the logging on the ports has completed.

        ``*OPC?`` waits for it on units that treat logging as an overlapped
        operation; the state query catches the others, polled until the
        logging should have ended plus the session's timeout.
        """
        self.require("logging")
        ports = self.ports(channels)
        self.session.fence()
        deadline: float | None = None
        while True:
            reply = self.session.query(self._each("function_state", ports))
            states = [state.strip().upper() for state in reply.split(";")]
            if len(states) != len(ports):
                raise ProtocolError(f"{len(states)} logging states for {len(ports)} ports",
                                    device=self.name)
            running = [p for p, state in zip(ports, states, strict=True)
                       if state == LOGGING_IN_PROGRESS]
            idle = [p for p, state in zip(ports, states, strict=True)
                    if state not in (LOGGING_IN_PROGRESS, LOGGING_COMPLETE)]
            if idle:
                raise ProtocolError(f"no logging running on ports {idle}", device=self.name)
            if not running:
                return
            longest = max(self._duration(port) for port in running)
            if deadline is None:
                deadline = time.monotonic() + longest + self.session.timeout_seconds
            elif time.monotonic() > deadline:
                raise ProtocolError(f"logging on ports {running} never completed",
                                    device=self.name)
            time.sleep(min(0.05, max(0.001, longest / 10)))

    def _duration(self, port: int) -> float:
        samples, interval = self._logging.get(port, (0, 0.0))
        return samples * interval

    def logging_results(self, channels: Iterable[int] | None = None) -> dict[int, PowerTrace]:
        """The samples of the last completed logging, per port, in one exchange."""
        self.require("logging")
        ports = self.ports(channels)
        if not ports:
            return {}
        payloads = self.session.query_blocks(self._each("function_result", ports), len(ports))
        traces: dict[int, PowerTrace] = {}
        for port, payload in zip(ports, payloads, strict=True):
            if len(payload) % _FLOAT32:
                raise ProtocolError(f"port {port}: {len(payload)} bytes of samples is not a "
                                    "whole number of float32 values", device=self.name)
            values = struct.unpack(f"<{len(payload) // _FLOAT32}f", payload)
            samples, interval = self._logging.get(port, (len(values), 0.0))
            if len(values) != samples:
                raise ProtocolError(f"port {port}: {len(values)} samples, {samples} configured",
                                    device=self.name)
            log10 = math.log10  # 10^5 samples: no function call per sample
            traces[port] = PowerTrace(port, interval, tuple(
                10.0 * log10(v * 1000.0) if 0.0 < v < math.inf else None for v in values))
        return traces
