"""One fault-injection interface for every emulator.

A fault is injected by kind, optionally with a target (a port, a fiber), an
amount (``seconds``) and a ``count`` (how many replies it spoils; ``None``
keeps it until cleared). Transport faults are carried out by the protocol
servers around a model; device faults (reboot, port failure, fiber cut,
pump failure) are handed to the model that registered a handler for them.

| kind      | who acts  | effect                                                          |
|-----------|-----------|-----------------------------------------------------------------|
| latency   | server    | each reply is held back ``seconds`` of real time                |
| drop      | server    | the request is read and silently discarded, no reply            |
| reset     | server    | the connection is closed abruptly instead of answering (TCP RST;|
|           |           | on a serial console, where nothing can be reset, as ``drop``)   |
| garbage   | server    | the reply is replaced by line noise                             |
| truncate  | server    | the reply is cut short and its terminator never sent            |
| freeze    | server    | nothing is answered until the fault is cleared                  |
| reboot    | device    | restart; ``power_loss`` decides whether volatile state survives |
| port      | device    | port ``target`` fails (state F, no light through it)            |
| fiber_cut | optics    | fiber ``target`` carries no light                               |
| pump      | device    | amplifier pump failure (amplifier emulators)                    |
| nack      | device    | the amplifier does not acknowledge I2C transactions             |
| bus_hang  | device    | I2C transactions to the amplifier fail with the bus held low    |
| corrupt   | device    | one bit of an I2C read's data flips                             |
| back_reflection | device | reflection into the amplifier's output rises above its limit |

An amplifier takes ``reset`` as a module reset (CMIS software reset), not as
a connection reset: its bridge keeps the connection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

TRANSPORT_FAULTS = frozenset({"latency", "drop", "reset", "garbage", "truncate", "freeze"})


@dataclass(frozen=True)
class Fault:
    kind: str
    target: str | None = None
    seconds: float | None = None
    count: int | None = None
    power_loss: bool = True


class FaultError(ValueError):
    """A fault that this emulator cannot carry out."""


Handler = Callable[[Fault], None]


class FaultInjector:
    """The faults active on one emulator, and the device's handlers for its own."""

    def __init__(self, owner: str):
        self.owner = owner
        self._lock = threading.Lock()
        self._active: list[Fault] = []
        self._inject_handlers: dict[str, Handler] = {}
        self._clear_handlers: dict[str, Handler] = {}

    def handle(self, kind: str, on_inject: Handler, on_clear: Handler | None = None) -> None:
        """Register the device's own action for a device fault kind."""
        self._inject_handlers[kind] = on_inject
        if on_clear is not None:
            self._clear_handlers[kind] = on_clear

    def kinds(self) -> list[str]:
        return sorted(TRANSPORT_FAULTS | self._inject_handlers.keys())

    def inject(self, fault: Fault) -> None:
        if fault.kind not in TRANSPORT_FAULTS and fault.kind not in self._inject_handlers:
            raise FaultError(
                f"{self.owner} does not support fault {fault.kind!r}; "
                f"supported: {', '.join(self.kinds())}"
            )
        if fault.kind == "latency" and (fault.seconds is None or fault.seconds < 0):
            raise FaultError("a latency fault needs seconds >= 0")
        handler = self._inject_handlers.get(fault.kind)
        if handler is not None:
            handler(fault)
        # A reboot is an event, not a state; everything else stays until cleared.
        if fault.kind != "reboot":
            with self._lock:
                self._active.append(fault)

    def clear(self, kind: str | None = None, target: str | None = None) -> None:
        with self._lock:
            cleared = [
                f
                for f in self._active
                if (kind is None or f.kind == kind) and (target is None or f.target == target)
            ]
            self._active = [f for f in self._active if f not in cleared]
        for fault in cleared:
            handler = self._clear_handlers.get(fault.kind)
            if handler is not None:
                handler(fault)

    def active(self) -> list[Fault]:
        with self._lock:
            return list(self._active)

    def is_active(self, kind: str, target: str | None = None) -> bool:
        with self._lock:
            return any(f.kind == kind and (target is None or f.target == target)
                       for f in self._active)

    def consume(self, kind: str) -> Fault | None:
        """Take one use of an active transport fault, or ``None`` when it is not active."""
        with self._lock:
            for index, fault in enumerate(self._active):
                if fault.kind != kind:
                    continue
                if fault.count is not None:
                    if fault.count <= 1:
                        del self._active[index]
                    else:
                        self._active[index] = replace(fault, count=fault.count - 1)
                return fault
        return None
