"""NETCONF in tests: the emulator's server on a loop of its own, ncclient sessions to it,
and the documents and reads the datastore tests share.

:class:`Switch` is the emulator's datastores behind a :class:`NetconfServer` on a stepped
clock that moves only when a test moves it (``jump_on_sleep=False``), user ``USER`` with
``PASSWORD``; every commit is recorded in ``commits``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

from lxml import etree
from ncclient import NCClientError, manager
from ncclient.manager import Manager
from ncclient.operations.rpc import RaiseMode

from drivers.switch.netconf import first_reply_nudged
from drivers.switch.schema import NAMESPACE
from emulators.clock import SteppedClock
from emulators.lab import Lab
from emulators.netconf import NetconfServer
from emulators.netconf.datastore import Datastores, capabilities
from msoctl.inventory import Device, load_inventory

T = TypeVar("T")
USER, PASSWORD = "admin", "s3cret"


class Loop:
    """An asyncio loop in a thread, for the server (ncclient is synchronous)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 10) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@contextmanager
def ncclient_session(timeout: float, *, settle: bool = False,
                     **connect: Any) -> Iterator[Manager]:
    """``manager.connect(**connect)``: a session that is always closed, every RPC bounded
    by ``timeout`` and every rpc-error raised; with ``settle``, :func:`settled` first."""
    session = manager.connect(timeout=timeout, **connect)
    session.timeout = timeout
    session.raise_mode = RaiseMode.ERRORS
    try:
        if settle:
            settled(session)
        yield session
    finally:
        if session.connected:
            try:
                session.close_session()
            except NCClientError:
                session._session.close()


def netconf(port: int, *, password: str = PASSWORD, timeout: float = 5,
            **options: Any) -> AbstractContextManager[Manager]:
    """A session to the emulator on ``port`` (host key not checked unless asked)."""
    options.setdefault("hostkey_verify", False)
    return ncclient_session(timeout, host="127.0.0.1", port=port, username=USER,
                            password=password, allow_agent=False,
                            look_for_keys=options.pop("look_for_keys", False), **options)


NS = f'xmlns="{NAMESPACE}"'
BASE = "urn:ietf:params:xml:ns:netconf:base:1.0"
NC = f'xmlns="{BASE}" xmlns:nc="{BASE}"'
PORT = "<name>Ethernet1</name>"


def config(body: str) -> str:
    return f'<config {NC}><switch {NS}>{body}</switch></config>'


def port(body: str, name: str = "Ethernet1") -> str:
    return f"<ports><port><name>{name}</name>{body}</port></ports>"


def switch_text(session: Manager, source: str = "running") -> str:
    reply = session.get_config(source=source)
    found = reply.data.find(f"{{{NAMESPACE}}}switch")
    return "" if found is None else etree.tostring(found, encoding="unicode")


def leaf(session: Manager, path: str, source: str = "running") -> str | None:
    reply = session.get_config(source=source)
    steps = "/".join(f"{{{NAMESPACE}}}{step}" for step in path.split("/"))
    found = reply.data.find(f"{{{NAMESPACE}}}switch/{steps}")
    return None if found is None else found.text


class Switch:
    def __init__(self, loop: Loop, *, candidate: bool = True, validator: Any = None):
        self.loop = loop
        self.clock = SteppedClock(jump_on_sleep=False)
        self.commits: list[dict[str, Any]] = []
        self.datastores = Datastores(clock=self.clock, on_commit=self.commits.append,
                                     state=self.state, candidate=candidate,
                                     validator=validator)
        self.server = NetconfServer(name="sw-ds", users={USER: PASSWORD},
                                    capabilities=capabilities(candidate=candidate),
                                    on_session_end=self.datastores.session_ended)
        self.datastores.register(self.server)
        loop.run(self.server.start())

    def state(self) -> etree._Element:
        return etree.fromstring(
            f"<switch {NS}><buffer><total-bytes>8589934592</total-bytes></buffer></switch>")

    def wait_sessions_ended(self) -> None:
        async def ended() -> None:
            while self.server.sessions:
                await asyncio.sleep(0.005)
        self.loop.run(ended())

    def stop(self) -> None:
        self.loop.run(self.server.stop())
        self.loop.loop.call_soon_threadsafe(self.datastores.close)




# ---- what the switch driver is asked to reach ------------------------------------------

TOKEN = "msoctl-test-1"


def want(xoff: int = 24_000_000, xon: int = 20_000, *, fast_cnp: bool = True,
         port: str = "Ethernet1") -> dict[str, Any]:
    return {"switch": {
        "fast-cnp": {"enabled": fast_cnp, "cnp-priority": 6},
        "ports": {"port": [{
            "name": port, "speed": "400G", "cable-length-meters": 30_000,
            "lossless-priorities": [3],
            "pfc": {"xoff-bytes": xoff, "xon-bytes": xon},
            "queues": {"queue": [{"queue-id": 3, "wred": {
                "min-threshold": 1_000_000, "max-threshold": 30_000_000,
                "max-drop-probability-percent": 20, "enable-ecn": True},
                "fast-cnp": {"enabled": fast_cnp}}]},
        }]},
    }}




# ---- the lab's switches ------------------------------------------------------------------


def switch_entry(lab: Lab, name: str) -> Device:
    """Switch ``name`` as the lab's inventory describes it."""
    return load_inventory(lab.state_dir / "inventory.yaml").device(name, "switch")


@contextmanager
def lab_session(lab: Lab, name: str, *, known_hosts: Path | None = None,
            password: str | None = None, timeout: float = 10) -> Iterator[Manager]:
    """An ncclient session to switch ``name`` as the inventory describes it: host key
    checked against the lab's known_hosts (or ``known_hosts``), every RPC bounded."""
    device = switch_entry(lab, name)
    access = device.netconf
    assert access is not None and access.known_hosts is not None
    ssh_config = lab.state_dir / f"ssh_config.{name}"
    ssh_config.write_text(f"Host *\n  UserKnownHostsFile {known_hosts or access.known_hosts}\n")
    with ncclient_session(
            timeout, host=access.host, port=access.port, username=access.username,
            password=password if password is not None else device.secrets["password"].resolve(),
            hostkey_verify=True, ssh_config=str(ssh_config), allow_agent=False,
            look_for_keys=False) as session:
        yield session


def settled(session: Manager) -> None:
    """Send ``session`` one RPC that reads nothing, its reply nudged out of a server that
    read it with the hello's tail (netconfd 2.13; drivers.switch.netconf
    first_reply_nudged, which the driver does on each session's first RPC). The RPCs
    after it are answered as they come."""
    with first_reply_nudged(session):
        session.get_config(source="running", filter=[])
