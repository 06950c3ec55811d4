"""The switch emulator as a device: the congestion model behind a NETCONF or gNMI server.

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

The management face (``face``): ``"msoctl"``, the default, is all of the above: the
project's own YANG over NETCONF. ``"openconfig"`` (OpenConfig interfaces and QoS with
``augments`` ``"msoctl"`` or ``"arista"``) and ``"sonic"`` (SONiC's CONFIG_DB) serve
gNMI by default (:class:`~emulators.gnmi.server.GnmiServer`, the Commit Confirmed
extension offered unless ``commit_confirmed`` is false, TLS with ``gnmi_tls``), through
the faces of :mod:`emulators.switch.faces`, which translate their model into the
chip's configuration and its state back. The server is built at :meth:`start`, with
the users and :attr:`gnmi_tls` set then, and holds the face's factory configuration,
which is committed to the model then (and at construction): a gNMI switch keeps no
configuration across a stop and a start, having no startup datastore. Such a device
has no NETCONF datastores (:attr:`datastores` is None) and no host key.

``transport="netconf"`` serves the OpenConfig face over NETCONF instead, with the same
server, sessions, locks, candidate, validation and confirmed commits as the msoctl
module (:confirmed-commit:1.1 unless ``commit_confirmed`` is false): its datastores
hold OpenConfig's XML and hand every change of running to the face
(emulators/netconf/openconfig.py); ``<get>`` shows the face's operational tree. Its
factory configuration is in running, candidate and startup; ``validator`` (the msoctl
module's must rules) has no part there: the face checks what it takes. Community SONiC
has no NETCONF server, and the msoctl module is served over NETCONF only: those are
refused with ``ValueError``.

Telemetry: a gNMI switch given its CPO model (``telemetry``, a
:class:`~emulators.cpo.model.SwitchTelemetry`) serves its optics and FEC through its
face (:mod:`emulators.switch.faces.optics`), read from the model only when a request
reads them. The model's own fault kinds are the owner's to route (the lab hands them
from this device's injector to the model's).

Faults: one injector, :attr:`SwitchDevice.faults`, for the whole device, routed
by kind. A gNMI switch also takes the stream faults ``malformed`` and ``stream_stop``
(:mod:`emulators.gnmi.streamfaults`), carried out by its server. The transport kinds
(latency, drop, reset, garbage, truncate, freeze) are read by the NETCONF (or gNMI)
server from this injector itself; the model's kinds (``congestion``, ``pfc_storm``,
target ``PORT`` or ``PORT@QUEUE``) are handed to the model's own injector, and clearing
them here clears them there.

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
from typing import TYPE_CHECKING, Any

import asyncssh
from lxml.etree import _Element

from emulators.clock import Clock
from emulators.faults import TRANSPORT_FAULTS, Fault, FaultError, FaultInjector
from emulators.gnmi import streamfaults
from emulators.gnmi.face import Face
from emulators.netconf.datastore import (
    CAPABILITIES,
    DATASTORES,
    Datastores,
    capabilities,
    empty,
)
from emulators.netconf.library import switch_library
from emulators.netconf.openconfig import OpenConfigNetconf
from emulators.netconf.server import NetconfServer
from emulators.netconf.validation import Validator
from emulators.switch.faces.openconfig import OpenConfigFace
from emulators.switch.faces.sonic import SonicFace
from emulators.switch.model import (
    DEFAULT_LOSSLESS_POOL_BYTES,
    DEFAULT_TOTAL_BYTES,
    PhysicalPort,
    SwitchModel,
)
from emulators.switch.xmldata import to_xml

if TYPE_CHECKING:
    from emulators.cpo.model import SwitchTelemetry
    from emulators.gnmi.server import GnmiServer, GnmiTls

DEFAULT_CONGESTION_SECONDS = 0.05
MAX_CONGESTION_SECONDS = 0.25
FACES = ("msoctl", "openconfig", "sonic")
AUGMENTS = ("msoctl", "arista")
TRANSPORTS = ("netconf", "gnmi")


def factory_config(ports: Mapping[str, PhysicalPort]) -> dict[str, Any]:
    """What a switch holds out of the box: each port's name and speed, nothing else."""
    return {"switch": {"ports": {"port": [{"name": name, "speed": port.speed}
                                          for name, port in ports.items()]}}}


class SwitchDevice:
    """One emulated switch: its model, its datastores or gNMI face, and (once started)
    its server."""

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
        face: str = "msoctl",
        augments: str = "msoctl",
        commit_confirmed: bool = True,
        gnmi_tls: GnmiTls | None = None,
        transport: str | None = None,
        telemetry: SwitchTelemetry | None = None,
    ):
        if not 0 < congestion_seconds <= max_congestion_seconds:
            raise ValueError("0 < congestion_seconds <= max_congestion_seconds")
        if face not in FACES or augments not in AUGMENTS:
            raise ValueError(f"face one of {', '.join(FACES)}; "
                             f"augments one of {', '.join(AUGMENTS)}")
        transport = transport or ("netconf" if face == "msoctl" else "gnmi")
        if transport not in TRANSPORTS:
            raise ValueError(f"transport one of {', '.join(TRANSPORTS)}")
        if face == "sonic" and transport == "netconf":
            raise ValueError("community SONiC has no NETCONF: a sonic switch serves gNMI")
        if face == "msoctl" and transport == "gnmi":
            raise ValueError("the msoctl module is served over NETCONF only")
        self.face_name = face
        """The management face: msoctl, openconfig or sonic (served over :attr:`transport`)."""
        self.transport = transport
        """How the face is served: netconf or gnmi."""
        self.augments = augments
        self.commit_confirmed = commit_confirmed
        self.gnmi_tls = gnmi_tls
        self.telemetry = telemetry
        """The switch's CPO model, served through the face (None: no optics served)."""
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
        # The model is read and changed in the server's workers and faulted from other threads.
        self._lock = threading.RLock()
        self.datastores: Datastores | None = None
        self.face: Face | None = None
        """The face (None for the msoctl module)."""
        self._capabilities = CAPABILITIES
        self._openconfig: OpenConfigNetconf | None = None  # OpenConfig over NETCONF
        if face == "msoctl":
            self.datastores = Datastores(clock=clock, on_commit=self._apply,
                                         state=self._state, validator=validator)
            factory = factory_config(ports)
            self.model.apply_config(factory)
            for store in DATASTORES:
                holder = empty()
                holder.append(to_xml(factory))
                self.datastores.stores[store] = holder
        else:
            self.face = self._new_face(face, augments)
            with self._lock:
                self.face.commit(self.face.factory())
            if transport == "netconf":
                self._serve_over_netconf(self.face)
        self.faults = FaultInjector(name)
        for kind in sorted(set(self.model.faults.kinds()) - TRANSPORT_FAULTS):
            self.faults.handle(kind, self._inject_model_fault, self._clear_model_fault)
        if transport == "gnmi":
            streamfaults.register(self.faults)
        self.server: NetconfServer | GnmiServer | None = None
        self._gnmi: GnmiServer | None = None  # the server, while it serves gNMI

    def _serve_over_netconf(self, face: Face) -> None:
        assert isinstance(face, OpenConfigFace)
        self._openconfig = openconfig = OpenConfigNetconf(face, lock=self._lock)
        self._capabilities = capabilities(confirmed_commit=self.commit_confirmed,
                                          modules=openconfig.modules)
        self.datastores = Datastores(
            clock=self.clock, on_commit=openconfig.commit, validator=openconfig,
            schema=openconfig.schema, operational=openconfig.operational,
            library=switch_library(self._capabilities, openconfig.modules))
        self.datastores.factory_reset(openconfig.factory())

    def _new_face(self, face: str, augments: str) -> Face:
        if face == "openconfig":
            return OpenConfigFace(self._current_model, self._physical,
                                  augments="arista" if augments == "arista" else "msoctl",
                                  telemetry=self._current_telemetry)
        return SonicFace(self._current_model, self._physical,
                         telemetry=self._current_telemetry)

    def _current_telemetry(self) -> SwitchTelemetry | None:
        return self.telemetry if self.transport == "gnmi" else None

    def factory_reset(self) -> None:
        """Back as delivered, for a lab shared by several tests: faults cleared, a new
        congestion model (counters from zero) with the factory configuration, which every
        datastore (or the gNMI server) holds again, no lock, no confirmed commit pending.
        Not a protocol operation; call it while no session is open."""
        self.faults.clear()
        factory = factory_config(self._physical)
        total_bytes, lossless_pool_bytes = self._buffer
        with self._lock:
            self.model = SwitchModel(self.clock, self._physical, name=self.name,
                                     total_bytes=total_bytes,
                                     lossless_pool_bytes=lossless_pool_bytes)
            if self._openconfig is not None and self.datastores is not None:
                self._openconfig.face.commit(self._openconfig.face.factory())
                self.datastores.factory_reset(self._openconfig.factory())
            elif self.datastores is not None:
                self.model.apply_config(factory)
                holder = empty()
                holder.append(to_xml(factory))
                self.datastores.factory_reset(holder)
            elif self._gnmi is not None:
                self._gnmi.factory_reset()  # commits the face's factory tree to the new model
            elif self.face is not None:
                self.face.commit(self.face.factory())

    # ---- serving ------------------------------------------------------------------------

    async def start(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        """Serve NETCONF (new host key) or gNMI on ``host:port`` (an ephemeral port by
        default)."""
        if self.server is not None:
            raise RuntimeError(f"{self.name} is already serving")
        if self.datastores is None:
            await self._start_gnmi(host, port)
            return
        server = NetconfServer(name=self.name, users=self.users,
                               authorized_keys=self.authorized_keys,
                               capabilities=self._capabilities,
                               faults=self.faults, on_session_end=self.datastores.session_ended,
                               host=host, port=port)
        self.datastores.register(server)
        await server.start()
        self.server = server

    async def _start_gnmi(self, host: str, port: int) -> None:
        # Imported here: grpc and the gNMI stubs stay out of a process that serves only
        # NETCONF switches.
        from emulators.gnmi.server import GnmiServer

        assert self.face is not None
        server = GnmiServer(self.name, self.face, clock=self.clock, users=self.users,
                            tls=self.gnmi_tls, faults=self.faults,
                            commit_confirmed=self.commit_confirmed, host=host, port=port,
                            lock=self._lock)
        with self._lock:  # the new server holds the factory tree: so does the chip
            self.face.commit(self.face.factory())
        await server.start()
        self.server = self._gnmi = server

    async def stop(self) -> None:
        server, self.server, self._gnmi = self.server, None, None
        if server is not None:
            await server.stop()
        if self.datastores is not None:
            self.datastores.close()

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        if self.server is None:
            raise RuntimeError(f"{self.name} is not serving")
        return self.server.port

    def known_hosts_line(self) -> str:
        """``[host]:port ssh-ed25519 AAAA...`` for the running server's host key
        (NETCONF only: a gNMI switch has no SSH host key)."""
        if self.datastores is None:
            raise RuntimeError(f"{self.name} serves gNMI ({self.face_name}), not NETCONF "
                               "over SSH: it has no host key")
        if not isinstance(self.server, NetconfServer):
            raise RuntimeError(f"{self.name} is not serving")
        return self.server.known_hosts_line()

    # ---- the model behind the datastores and the face ------------------------------------

    def _current_model(self) -> SwitchModel:
        return self.model  # a factory reset replaces it

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
