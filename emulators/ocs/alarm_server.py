"""The alarm connection of an emulated OCS: loss-of-light events pushed over TCP.

SCPI has no unsolicited message: a reply on the command connection answers the query
before it, and a line the unit sent on its own there would be read as the answer to
the next one. Real units push notifications over another interface (NETCONF
notifications, TL1 autonomous messages); this unit, like them, pushes on a
connection of its own, whose port ``:SYSTem:COMMunicate:ALARm:PORT?`` gives. The
lines (docs/dialects/ocs.md, "Loss-of-light alarms"), each ending in LF::

    SNAPSHOT <sequence>,<count>         first, on every connection: the last event's
    PORT <port>,LOS|OK,<dBm>,<seconds>  number, then each armed port's state
    EVENT <sequence>,<port>,SET|CLEAR,<dBm>,<seconds>
    HEARTBEAT <sequence>,<seconds>      every HEARTBEAT_SECONDS, the last number sent
    MAP <crc>,<count>,<seconds>         after the snapshot, and whenever the map changes

``<dBm>`` has two decimals (``9.91E+37`` for a failed port, which has no reading),
``<seconds>`` is device time with six. A ``MAP`` line is not an event (it takes no
number): ``<crc>`` is the CRC-32 of the map's text, eight hex digits, and ``<count>``
its connections (:func:`map_line`). Whatever a client sends is read and ignored.

When the unit looks (no polling): it watches the optical model's change
notifications of every element its ports can receive light from (the elements
joined to it by patches), and reads its armed ports on the server's event loop as
soon as one arrives -- coalesced, one reading for a burst of changes such as a cable
cut -- and again at each moment a beam was announced to settle (then only the ports
not lost: on a lost port a settling beam can only begin the clear hold of
emulators/ocs/alarms.py, and the port is read when that is over). A change of an
element with one output that feeds one of its ports (a span's fiber, an amplifier)
has that port (and the armed egress ports, where its light leaves) read at once;
any other change, every armed port, after the loop's
pending work (so the ports a cable cut darkens are judged on every OCS of the loop
before any OCS is read whole). An event therefore leaves within the loop's
scheduling delay of the change: well under a millisecond on an idle loop, a few
milliseconds on a busy one (bench/lab_scale.py measures it); its ``<seconds>`` is
the device time of the reading.

Faults (on the OCS's injector, named for the alarm connection):

| kind         | effect                                                            |
|--------------|-------------------------------------------------------------------|
| alarm_drop   | alarm connections are reset (RST): the open ones at once, and each |
|              | new one on arrival, until cleared or ``count`` connections dropped |
| alarm_delay  | every line is held back ``seconds`` of real time                   |
| alarm_freeze | nothing is sent (events and heartbeats lost), connections stay open|

A power loss or reboot takes the listener and every connection down with it, like
the SCPI server; it listens again on the same port once the unit is up.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import zlib
from collections.abc import Mapping
from functools import partial

from drivers.ocs.commands import NOT_A_NUMBER
from emulators.faults import Fault, FaultError
from emulators.http import reset_connection
from emulators.ocs.alarms import AlarmEvent, PortAlarm
from emulators.ocs.model import OcsDevice
from emulators.scpi.server import ReopensAfterPowerLoss

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 0.5
"""Real time between two heartbeats: a client that hears nothing for a few of them
knows the connection is dead even when TCP does not tell it."""
WRITE_BUFFER_BYTES = 64 * 1024
"""Above this much unsent, lines wait for the writer task, which waits for the client."""
SETTLE_MARGIN_SECONDS = 0.0005
"""A reading announced for a moment is made this much after it, so that it is past."""
SCAN_SECONDS = 0.002
"""The detectors' scan period for changes announced ahead (beams that settle) and for
holds that end: the ones due within one period are read together at its end. A cable cut's sixteen
switches settle within a few ms of each other, each lighting ports of its own unit and
of the unit at the far end of its spans; read one by one, that was three readings a
unit in each lab process, ahead of the units' replies."""
ARMED_EGRESS = 0
"""Among the ports to read, stands for every armed egress port: the set is looked up on
the serving loop when it reads, never in the changing thread (under a lock of its own)."""
ALARM_FAULTS = ("alarm_drop", "alarm_delay", "alarm_freeze")
DROP_RETRIES = 100
"""Milliseconds an injected drop waits for its fault to be active before it gives up."""


def _power(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return f"{NOT_A_NUMBER:.2E}"
    return f"{value:.2f}"


def event_line(event: AlarmEvent) -> str:
    state = "SET" if event.lost else "CLEAR"
    return (f"EVENT {event.sequence},{event.port},{state},{_power(event.power_dbm)},"
            f"{event.device_seconds:.6f}")


def map_line(connections: Mapping[int, int], device_seconds: float) -> str:
    """The line that announces the map ``connections`` (ingress -> egress): the CRC-32
    (ISO-HDLC, zlib's) of the text that lists each connection as ``<ingress>:<egress>``
    in ascending order of ingress, joined by commas (an empty map is the empty text)."""
    text = ",".join(f"{ingress}:{connections[ingress]}" for ingress in sorted(connections))
    return (f"MAP {zlib.crc32(text.encode('ascii')):08X},{len(connections)},"
            f"{device_seconds:.6f}")


def snapshot_lines(sequence: int, ports: list[PortAlarm]) -> list[str]:
    return [f"SNAPSHOT {sequence},{len(ports)}",
            *(f"PORT {p.port},{'LOS' if p.lost else 'OK'},{_power(p.power_dbm)},"
              f"{p.device_seconds:.6f}" for p in ports)]


class _Client:
    """One alarm connection: its lines in order, written by a task of its own."""

    def __init__(self, writer: asyncio.StreamWriter):
        self.writer = writer
        self.lines: asyncio.Queue[tuple[float, str]] = asyncio.Queue()
        self.last_sequence = 0
        self.task: asyncio.Task[None] | None = None
        self.busy = False  # the writer task holds a line it has not written yet

    def abort(self) -> None:
        """Close with RST, as a crashed peer's kernel would."""
        reset_connection(self.writer)


class AlarmServer(ReopensAfterPowerLoss):
    """Serves ``device``'s loss-of-light alarms on ``host``:``port`` (0: ephemeral)."""

    device: OcsDevice

    def __init__(self, device: OcsDevice, *, host: str = "127.0.0.1", port: int = 0,
                 heartbeat_seconds: float = HEARTBEAT_SECONDS):
        self.device = device
        self.host = host
        self.port = port
        self.heartbeat_seconds = heartbeat_seconds
        self._server: asyncio.Server | None = None
        self._clients: set[_Client] = set()
        self._watched: frozenset[str] = frozenset()
        self._last_reached: tuple[frozenset[str], frozenset[int]] | None = None
        self._unwatch: list[object] = []
        self._pending = False
        self._pending_all = False
        self._pending_ports: set[int] = set()
        self._pending_lock = threading.Lock()
        self._feeding: dict[str, int] = {}  # element of one output -> the port it feeds
        self._port_names = {f"{device.name}:{port}": port
                            for port in range(1, 2 * device.size + 1)}
        """Each of the unit's ports by its name in the optical model."""
        self._full_pending = False
        self._burst: dict[_Client, list[str]] | None = None
        """While a reading is made on the loop: the event lines for each client."""
        self._timers: dict[tuple[float, bool],
                           tuple[asyncio.TimerHandle, set[int] | None]] = {}
        """The readings due at the end of a scan period: (its end, a hold's) -> the timer
        and the ports to read (``None``: every armed port)."""
        self._heartbeat: asyncio.Task[None] | None = None
        self._loop_thread = 0
        self._map_pending = False
        """A change of the map is to be announced (one line for the changes until then)."""
        for kind in ALARM_FAULTS:
            if kind in device.faults.kinds():
                raise RuntimeError(f"{device.name} already handles fault {kind!r}")
        device.faults.handle("alarm_drop", self._inject_drop)
        device.faults.handle("alarm_delay", self._check_delay)
        device.faults.handle("alarm_freeze", lambda fault: None)
        self._follow_power()

    # ---- serving ---------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        await self._listen()
        optics, name = self.device.optics, self.device.name
        self._watched = optics.connected(name)
        for port in range(1, self.device.size + 1):
            feeder = optics.upstream_of(f"{name}:{port}")
            if feeder is None:
                continue
            element = optics.element(feeder.partition(":")[0])
            if len(list(element.output_ports())) == 1:  # a fiber, an amplifier
                self._feeding[element.name] = port
        self._unwatch.append(optics.watch(self._on_light))
        self._unwatch.append(self.device.alarms.on_hold(self._on_hold))
        self.device.map_listeners.append(self._on_map)
        self._unwatch.append(self._forget_map_listener)
        self._heartbeat = asyncio.ensure_future(self._beat())
        self._evaluate()  # whatever changed before anybody watched

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port,
                                                  reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        self.device.alarm_port = self.port

    async def stop(self) -> None:
        for unwatch in self._unwatch:
            assert callable(unwatch)
            unwatch()
        self._unwatch.clear()
        for task in (self._heartbeat, self._reopen):
            if task is not None:
                task.cancel()
        for timer, _ in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._drop_everything()
        self.device.alarm_port = 0

    def _forget_map_listener(self) -> None:
        if self._on_map in self.device.map_listeners:
            self.device.map_listeners.remove(self._on_map)

    def _drop_everything(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for client in list(self._clients):
            self._forget(client)
            client.abort()

    def _reopened(self) -> None:
        self._evaluate()  # what changed while the unit was down

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client = _Client(writer)
        if not self.device.is_up() or self.device.faults.consume("alarm_drop") is not None:
            client.abort()
            return
        now = asyncio.get_running_loop().time()

        def deliver(event: AlarmEvent) -> None:  # with the device's lock held
            assert self._loop is not None
            if threading.get_ident() == self._loop_thread:
                self._enqueue(client, event)  # judged on the loop: out at once
            else:
                self._loop.call_soon_threadsafe(self._enqueue, client, event)

        sequence, ports = self.device.alarms.listen(deliver)
        client.last_sequence = sequence
        for line in snapshot_lines(sequence, ports):
            client.lines.put_nowait((now, line))
        client.lines.put_nowait((now, self._map_now()))
        self._clients.add(client)
        client.task = asyncio.ensure_future(self._write(client))
        try:
            while await reader.read(4096):
                pass  # the client has nothing to say; what it sends is ignored
        except (ConnectionError, OSError):
            pass
        finally:
            self._forget(client)
            self.device.alarms.unlisten(deliver)
            if not writer.is_closing():
                writer.close()

    def _forget(self, client: _Client) -> None:
        self._clients.discard(client)
        if client.task is not None:
            client.task.cancel()

    def _enqueue(self, client: _Client, event: AlarmEvent) -> None:
        if client in self._clients:
            client.last_sequence = event.sequence
            if self._burst is not None:  # a reading of many ports: out together at its end
                self._burst.setdefault(client, []).append(event_line(event))
            else:
                self._send(client, event_line(event))

    def _send(self, client: _Client, line: str) -> None:
        """Write ``line`` (or several, joined by newlines) now when nothing is ahead of
        it and no fault holds it (the loop may have much to do before the writer task
        runs again), else queue it."""
        assert self._loop is not None
        faults = self.device.faults
        if (not client.busy and client.lines.empty()
                and client.writer.transport.get_write_buffer_size() < WRITE_BUFFER_BYTES
                and not faults.is_active("alarm_delay") and not faults.is_active("alarm_freeze")):
            client.writer.write(line.encode("ascii") + b"\n")
            return
        client.lines.put_nowait((self._loop.time(), line))

    async def _write(self, client: _Client) -> None:
        loop = asyncio.get_running_loop()
        faults = self.device.faults
        try:
            while True:
                client.busy = False
                stamped, line = await client.lines.get()
                client.busy = True
                delay = next((f.seconds or 0.0 for f in faults.active()
                              if f.kind == "alarm_delay"), 0.0)
                wait = stamped + delay - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if faults.is_active("alarm_freeze"):
                    continue  # a hung alarm process: what it had to say is lost
                client.writer.write(line.encode("ascii") + b"\n")
                await client.writer.drain()
        except (ConnectionError, OSError):
            self._forget(client)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_seconds)
            if not self.device.is_up():
                continue
            seconds = self.device.clock.now()
            for client in list(self._clients):
                self._send(client, f"HEARTBEAT {client.last_sequence},{seconds:.6f}")

    # ---- the map ---------------------------------------------------------------------------

    def _map_now(self) -> str:
        with self.device.lock:
            return map_line(self.device.connection_map(), self.device.clock.now())

    def _on_map(self) -> None:
        """The map changed (any thread, the device's lock held): announce it from the loop,
        once for the changes made until then."""
        loop = self._loop
        if loop is None or loop.is_closed() or self._map_pending:
            return
        self._map_pending = True
        if threading.get_ident() == self._loop_thread:
            loop.call_soon(self._announce_map)
        else:
            loop.call_soon_threadsafe(self._announce_map)

    def _announce_map(self) -> None:
        self._map_pending = False
        if not self._clients or not self.device.is_up():
            return
        line = self._map_now()
        for client in list(self._clients):
            self._send(client, line)

    # ---- when to look ----------------------------------------------------------------------

    def _on_light(self, element: str, at: float | None,
                  reached: frozenset[str] | None = None) -> None:
        """An optical model change (any thread, maybe with the model's lock held).

        When the model says which ports the change reaches, only this unit's among them
        are read, and a change that reaches none of them is not looked at; otherwise
        the port a fiber or an amplifier feeds directly is read with the egress ports,
        and any other change has every armed port read."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        ports: set[int] | None
        if reached is not None:  # the ports say it (for changes made together, all theirs)
            ports = self._own_ports(reached)
            if not ports:
                return  # nothing of this unit's light changed
        elif element not in self._watched:
            return
        else:
            feeds = self._feeding.get(element)
            ports = None if feeds is None else {feeds, ARMED_EGRESS}
        # from the loop's own thread (a command it carries out) without waking it
        soon = (loop.call_soon if threading.get_ident() == self._loop_thread
                else loop.call_soon_threadsafe)
        if at is not None:
            soon(self._evaluate_at, at, ports)
            return
        with self._pending_lock:
            if ports is not None:
                self._pending_ports.update(ports)
            else:
                self._pending_all = True
            if self._pending:
                return  # one reading is on its way and will see this change too
            self._pending = True
        soon(self._evaluate_pending)

    def _own_ports(self, reached: frozenset[str]) -> set[int]:
        """This unit's ports in a reached set (the last one's kept: a switch's change
        comes twice with one set, dark now and lit once settled)."""
        last = self._last_reached
        if last is not None and last[0] is reached:
            return set(last[1])
        named = self._port_names
        ports = {named[port] for port in reached & named.keys()}
        self._last_reached = (reached, frozenset(ports))
        return ports

    def _on_hold(self, ports: list[int], due: float) -> None:
        """Lost ports whose light is back are read again once their hold is over (device
        time ``due``; called with the unit's lock held, from any thread)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        soon = (loop.call_soon if threading.get_ident() == self._loop_thread
                else loop.call_soon_threadsafe)
        soon(partial(self._evaluate_at, due, set(ports), hold=True))

    def _evaluate_at(self, at: float, ports: set[int] | None = None, *,
                     hold: bool = False) -> None:
        """Read ``ports`` (every armed port when ``None``) once device time ``at`` has
        come, at the end of its scan period (:data:`SCAN_SECONDS`): the changes due
        within one period are read together, and so are the holds over within one.
        Light announced for ``at`` is read as light that settled then
        (:meth:`LosAlarms.settle`: the ports lost are left to their hold); a hold over
        then has its ports read (:meth:`LosAlarms.recheck`)."""
        key = math.ceil(at / SCAN_SECONDS) * SCAN_SECONDS
        slot = (key, hold)
        if slot in self._timers:
            handle, waiting = self._timers[slot]
            if waiting is not None:
                if ports is None:
                    self._timers[slot] = (handle, None)
                else:
                    waiting.update(ports)
            return
        assert self._loop is not None
        delay = max(0.0, key - self.device.clock.now()) + SETTLE_MARGIN_SECONDS

        def due() -> None:
            _, chosen = self._timers.pop(slot, (None, None))
            self._read(chosen, hold_over=hold, settled_at=None if hold else key)

        self._timers[slot] = (self._loop.call_later(delay, due),
                              None if ports is None else set(ports))

    def _evaluate_pending(self) -> None:
        """The ports a change reached are read at once; a change that may reach any port
        has every port read next, after what the loop already holds, so that the ports a
        cut darkens are judged first on every OCS of the loop before any is read whole."""
        with self._pending_lock:
            every, ports = self._pending_all, self._pending_ports
            self._pending, self._pending_all, self._pending_ports = False, False, set()
        if ports:
            self._read(ports)
        if every and not self._full_pending:
            self._full_pending = True
            assert self._loop is not None
            self._loop.call_soon(self._evaluate)

    def _evaluate(self) -> None:
        self._full_pending = False
        self._read(None)

    def _read(self, ports: set[int] | None, *, hold_over: bool = False,
              settled_at: float | None = None) -> None:
        """Read ``ports`` (every armed one when ``None``; after a hold, or as light that
        settled at ``settled_at``: :meth:`_evaluate_at`); the events of one reading leave
        in one write to each client, as a unit sends what one sweep of its monitors
        found (a cable cut's dozens of events in one segment, not one each)."""
        self._burst = {}
        try:
            self._read_ports(ports, hold_over=hold_over, settled_at=settled_at)
        finally:
            burst, self._burst = self._burst, None
            for client, lines in burst.items():
                if client in self._clients:
                    self._send(client, "\n".join(lines))

    def _read_ports(self, ports: set[int] | None, *, hold_over: bool,
                    settled_at: float | None) -> None:
        alarms = self.device.alarms
        try:
            if ports is not None and ARMED_EGRESS in ports:
                with self.device.lock:
                    egress = {p for p in alarms.thresholds_dbm if p > self.device.size}
                ports = (ports - {ARMED_EGRESS}) | egress
            if hold_over and ports is not None:
                alarms.recheck(ports)
            elif settled_at is not None:
                alarms.settle(ports, settled_at)
            else:
                alarms.evaluate(ports)
        except Exception:  # one bad reading must not stop the alarms
            log.exception("%s: loss-of-light evaluation failed", self.device.name)

    # ---- faults ----------------------------------------------------------------------------

    def _inject_drop(self, fault: Fault) -> None:
        # Called before the fault is active: drop the open connections once it is.
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._drop_clients, DROP_RETRIES)

    def _drop_clients(self, retries: int) -> None:
        if not self.device.faults.is_active("alarm_drop"):
            if retries > 0:  # the injecting thread has not made it active yet
                assert self._loop is not None
                self._loop.call_later(0.001, self._drop_clients, retries - 1)
            return
        for client in list(self._clients):
            if self.device.faults.consume("alarm_drop") is None:
                break
            self._forget(client)
            client.abort()

    @staticmethod
    def _check_delay(fault: Fault) -> None:
        if fault.seconds is None or fault.seconds < 0:
            raise FaultError("an alarm_delay fault needs seconds >= 0")
