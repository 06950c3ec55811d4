"""The switch emulator as a device: the congestion model behind a NETCONF server.

:class:`SwitchDevice` composes :class:`~emulators.switch.model.SwitchModel`,
the NETCONF datastores (:class:`~emulators.netconf.datastore.Datastores`) and
the NETCONF-over-SSH server (:class:`~emulators.netconf.server.NetconfServer`):

- Every change of running (commit, or a confirmed commit's rollback) is handed
  to the model first (``SwitchModel.apply_config``); a configuration the chip
  cannot run (a port it does not have) is refused with ``operation-failed``
  and running stays as it was.
- ``<get>`` merges the model's operational data (the buffer, counters per port
  and queue, integrated up to the moment of the request) into running.
- At start the device holds its factory configuration in running, candidate
  and startup: every physical port with its name and speed, nothing else (no
  PFC, no ECN, no fast CNP), so ``get-config`` lists the ports.
- The server is built at :meth:`start`, with a new host key each time
  (:meth:`known_hosts_line` gives its known_hosts line), and the users given.
  Its RPCs run in the server's worker thread, off the event loop that serves
  the SSH connection; the model is therefore read and changed from that thread
  (and faulted from others), under one lock.

Faults: one injector, :attr:`SwitchDevice.faults`, for the whole device, routed
by kind. The transport kinds (latency, drop, reset, garbage, truncate, freeze)
are read by the NETCONF server from this injector itself; the model's kinds
(``congestion``, ``pfc_storm``, target ``PORT`` or ``PORT@QUEUE``) are handed
to the model's own injector, and clearing them here clears them there.

A congestion fault is always a finite burst here. The model integrates in steps
of at most 5 us; while DCQCN senders keep reacting to CNPs there is no steady
state to take in closed form, and a second of such congestion costs about
2.8 s of CPU (measured on the 2-core lab machine: one queue of a 400G port on
30 km, the planner's configuration, with or without fast CNP; 0.2 s when the
queue just fills and drops, as with the factory configuration). On the lab's
real clock a sustained fault would fall further behind with every read, and
each read would keep the switch's NETCONF worker busy (its other sessions
waiting) for longer than the time it integrates. So a congestion fault
without ``seconds`` lasts :data:`DEFAULT_CONGESTION_SECONDS` (50 ms: the
queue's peak and the senders' reaction fit in it; the ``<get>`` that
integrates it takes about 0.3 s), and one asking for more than
:data:`MAX_CONGESTION_SECONDS` (whose ``<get>`` takes about 0.9 s) is refused
with :class:`FaultError`; inject it again for another burst. A ``pfc_storm``
stays until cleared: against a queue that holds nothing, or once the watchdog
drops, it is a steady state and costs next to nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import asyncssh
from lxml.etree import _Element

from emulators.clock import Clock
from emulators.faults import TRANSPORT_FAULTS, Fault, FaultError, FaultInjector
from emulators.netconf.datastore import CAPABILITIES, DATASTORES, Datastores, empty
from emulators.netconf.server import NetconfServer
from emulators.netconf.validation import Validator
from emulators.switch.model import (
    DEFAULT_LOSSLESS_POOL_BYTES,
    DEFAULT_TOTAL_BYTES,
    PhysicalPort,
    SwitchModel,
)
from emulators.switch.xmldata import to_xml

DEFAULT_CONGESTION_SECONDS = 0.05
MAX_CONGESTION_SECONDS = 0.25


def factory_config(ports: Mapping[str, PhysicalPort]) -> dict[str, Any]:
    """What a switch holds out of the box: each port's name and speed, nothing else."""
    return {"switch": {"ports": {"port": [{"name": name, "speed": port.speed}
                                          for name, port in ports.items()]}}}


class SwitchDevice:
    """One emulated switch: its model, its datastores and (once started) its server."""

    def __init__(
        self,
        name: str,
        ports: Mapping[str, PhysicalPort],
        *,
        clock: Clock,
        total_bytes: int = DEFAULT_TOTAL_BYTES,
        lossless_pool_bytes: int = DEFAULT_LOSSLESS_POOL_BYTES,
        users: Mapping[str, str] | None = None,
        authorized_keys: Mapping[str, Sequence[str | asyncssh.SSHKey]] | None = None,
        validator: Validator | None = None,
        congestion_seconds: float = DEFAULT_CONGESTION_SECONDS,
        max_congestion_seconds: float = MAX_CONGESTION_SECONDS,
    ):
        if not 0 < congestion_seconds <= max_congestion_seconds:
            raise ValueError("0 < congestion_seconds <= max_congestion_seconds")
        self.name = name
        self.clock = clock
        self.users = dict(users or {})
        self.authorized_keys = dict(authorized_keys or {})
        self.congestion_seconds = congestion_seconds
        self.max_congestion_seconds = max_congestion_seconds
        self._physical = dict(ports)
        self._buffer = (total_bytes, lossless_pool_bytes)
        self.model = SwitchModel(clock, ports, name=name, total_bytes=total_bytes,
                                 lossless_pool_bytes=lossless_pool_bytes)
        # The model is read and changed in the NETCONF worker and faulted from other threads.
        self._lock = threading.RLock()
        self.datastores = Datastores(clock=clock, on_commit=self._apply, state=self._state,
                                     validator=validator)
        factory = factory_config(ports)
        self.model.apply_config(factory)
        for store in DATASTORES:
            holder = empty()
            holder.append(to_xml(factory))
            self.datastores.stores[store] = holder
        self.faults = FaultInjector(name)
        for kind in sorted(set(self.model.faults.kinds()) - TRANSPORT_FAULTS):
            self.faults.handle(kind, self._inject_model_fault, self._clear_model_fault)
        self.server: NetconfServer | None = None

    def factory_reset(self) -> None:
        """Back as delivered, for a lab shared by several tests: faults cleared, a new
        congestion model (counters from zero) with the factory configuration, which every
        datastore holds again, no lock, no confirmed commit pending. Not a NETCONF
        operation; call it while no session is open."""
        self.faults.clear()
        factory = factory_config(self._physical)
        total_bytes, lossless_pool_bytes = self._buffer
        with self._lock:
            self.model = SwitchModel(self.clock, self._physical, name=self.name,
                                     total_bytes=total_bytes,
                                     lossless_pool_bytes=lossless_pool_bytes)
            self.model.apply_config(factory)
            holder = empty()
            holder.append(to_xml(factory))
            self.datastores.factory_reset(holder)

    # ---- serving ------------------------------------------------------------------------

    async def start(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        """Serve NETCONF on ``host:port`` (an ephemeral port by default), new host key."""
        if self.server is not None:
            raise RuntimeError(f"{self.name} is already serving")
        server = NetconfServer(name=self.name, users=self.users,
                               authorized_keys=self.authorized_keys, capabilities=CAPABILITIES,
                               faults=self.faults, on_session_end=self.datastores.session_ended,
                               host=host, port=port)
        self.datastores.register(server)
        await server.start()
        self.server = server

    async def stop(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            await server.stop()
        self.datastores.close()

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        if self.server is None:
            raise RuntimeError(f"{self.name} is not serving")
        return self.server.port

    def known_hosts_line(self) -> str:
        """``[host]:port ssh-ed25519 AAAA...`` for the running server's host key."""
        if self.server is None:
            raise RuntimeError(f"{self.name} is not serving")
        return self.server.known_hosts_line()

    # ---- the model behind the datastores ------------------------------------------------

    def _apply(self, tree: dict[str, Any]) -> None:
        with self._lock:
            self.model.apply_config(tree)

    def _state(self) -> _Element:
        with self._lock:
            tree = self.model.state_tree()
        return to_xml(tree)

    # ---- faults ---------------------------------------------------------------------------

    def _inject_model_fault(self, fault: Fault) -> None:
        if fault.kind == "congestion":
            seconds = self.congestion_seconds if fault.seconds is None else fault.seconds
            if not 0 < seconds <= self.max_congestion_seconds:
                raise FaultError(
                    f"{self.name}: a congestion burst lasts more than 0 and at most "
                    f"{self.max_congestion_seconds} s here (each second of it costs seconds "
                    f"of CPU to model); got {seconds} s")
            fault = replace(fault, seconds=seconds)
        with self._lock:
            self.model.faults.inject(fault)

    def _clear_model_fault(self, fault: Fault) -> None:
        with self._lock:
            self.model.faults.clear(fault.kind, fault.target)
