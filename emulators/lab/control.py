"""The lab's control endpoint: status and fault injection for ``msoctl lab``.

Protocol: HTTP/1.1 on loopback (``127.0.0.1``, an ephemeral port), served on
the lab's event loop; one request per connection (the server closes it after
its answer); JSON bodies in UTF-8. Every request carries the lab's token::

    Authorization: Bearer <token>

The token is new at every start (32 random bytes, URL-safe base64), written to
``<state_dir>/secrets/lab-control.token`` (mode 0600, the directory 0700), so
only the user who runs the lab (and root) can read it. A request without it,
or with another, is answered ``401`` and nothing is done. Nothing but
loopback is bound.

Once every device listens and the inventory is written, the lab writes
``<state_dir>/lab.json`` (atomically, mode 0644) saying where it is::

    {"protocol": "msoctl-lab-control/1", "url": "http://127.0.0.1:PORT",
     "host": "127.0.0.1", "port": PORT, "token_file": "secrets/lab-control.token",
     "pid": PID, "topology": NAME, "inventory": "inventory.yaml"}

(paths relative to the state directory), and removes it when it stops. A
``lab.json`` whose port answers nothing is left from a lab that was killed.

Requests:

- ``GET /v1/status``: the status document (emulators/lab/status.py).
- ``GET /v1/faults/kinds``: ``{"targets": {TARGET: [KIND, ...]}}``.
- ``POST /v1/faults``, body ``{"kind", "target"}`` and optionally ``"port"``
  (what the fault hits inside the target: an OCS port, ``Ethernet2@0``, a
  pump, a CPO laser ``M/L``), ``"seconds"``, ``"count"``, ``"power_loss"``
  (a reboot's; default true): answers ``{"target", "injected": FAULT}``; a
  cut's FAULT (``fiber_cut`` of a fiber, a span or a cable; ``cable_cut`` of
  a cable) lists the ``"fibers"`` it cut and the device time it happened,
  ``"at_seconds"``.
- ``POST /v1/faults/clear``, body ``{"target"}`` and optionally ``"kind"``
  (default: every fault on the target) and ``"port"`` (only the faults injected on that
  part of it, as ``/v1/faults`` took it): answers ``{"target", "cleared": [FAULT, ...]}``.

A request may carry ``X-Msoctl-Deadline: <seconds since the epoch>``: taken up after
it (the lab was stopped, or busy), it is answered 408 and nothing is done, because its
client has given up and reported it failed.

Errors are ``{"error": "one line"}`` with 400 (a bad request: unknown
target, a kind the target does not take, the listing of those it does, a
parameter the device refuses), 401 (token), 404, 405, 411, 413, or 500.
Requests run in a worker thread, one at a time, the way tests inject faults
from outside the loop; the loop keeps serving the devices meanwhile.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emulators.faults import Fault, FaultError
from emulators.http import MAX_HEADER_BYTES, HttpError, read_request, response_head
from emulators.lab.constants import (
    DEADLINE_HEADER,
    ENDPOINT_FILE,
    INVENTORY_FILE,
    PROTOCOL,
    SECRETS_DIR,
    TOKEN_FILE,
)
from emulators.lab.status import CUT_KINDS, check_fault

if TYPE_CHECKING:
    from emulators.lab.backend import LabBackend

log = logging.getLogger(__name__)

"""In the lab's secrets directory."""
HOST = "127.0.0.1"
READ_TIMEOUT_SECONDS = 5.0
REQUEST_TIMEOUT_SECONDS = 30.0
FAULT_FIELDS = ("kind", "target", "port", "seconds", "count", "power_loss")
CLEAR_FIELDS = ("kind", "target", "port")


class ControlServer:
    """The control endpoint of the lab behind ``backend`` (in this process, or spread over
    several: emulators/lab/backend.py); the token is checked on every request."""

    def __init__(self, backend: LabBackend, token: str):
        self.lab = backend
        self._token = token.encode("utf-8")
        self._server: asyncio.Server | None = None
        self._lock = threading.Lock()  # one change at a time
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, HOST, 0,
                                                  limit=MAX_HEADER_BYTES)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()

    # ---- HTTP --------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                method, path, headers, body = await asyncio.wait_for(
                    read_request(reader), READ_TIMEOUT_SECONDS)
                self._check_token(headers)
                handler, wants_body = self._route(method, path)
                document = _parse_body(body) if wants_body else None
                deadline = _deadline(headers)
                answer = await asyncio.wait_for(
                    asyncio.get_running_loop().run_in_executor(None, self._locked, handler,
                                                               document, deadline),
                    REQUEST_TIMEOUT_SECONDS)
                status = HTTPStatus.OK
            except HttpError as error:
                status, answer = error.status, {"error": error.message}
            except FaultError as error:
                status, answer = HTTPStatus.BAD_REQUEST, {"error": str(error)}
            except TimeoutError:
                status, answer = HTTPStatus.REQUEST_TIMEOUT, {"error": "request timed out"}
            except Exception as error:  # one bad request must not stop the lab
                log.exception("lab control: request failed")
                status = HTTPStatus.INTERNAL_SERVER_ERROR
                answer = {"error": f"{type(error).__name__}: {error}"}
            payload = json.dumps(answer).encode("utf-8")
            writer.write(response_head(status, "application/json", len(payload),
                                       {"X-Msoctl-Lab": PROTOCOL}) + payload)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away
        finally:
            writer.close()

    def _check_token(self, headers: dict[str, str]) -> None:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
                token.strip().encode("utf-8"), self._token):
            raise HttpError(HTTPStatus.UNAUTHORIZED,
                             "refused: no token or a wrong one (the lab's token is in "
                             f"secrets/{TOKEN_FILE} of its state directory)")

    def _route(self, method: str, path: str) -> tuple[Callable[[Any], Any], bool]:
        routes: dict[str, tuple[str, Callable[[Any], Any], bool]] = {
            "/v1/status": ("GET", lambda _: self.lab.status(), False),
            "/v1/faults/kinds": ("GET", lambda _: {"targets": self.lab.fault_targets()},
                                 False),
            "/v1/faults": ("POST", self.inject, True),
            "/v1/faults/clear": ("POST", self.clear, True),
        }
        route = routes.get(path.split("?", 1)[0])
        if route is None:
            raise HttpError(HTTPStatus.NOT_FOUND, f"no such resource {path!r}; resources: "
                             f"{', '.join(routes)}")
        if method != route[0]:
            raise HttpError(HTTPStatus.METHOD_NOT_ALLOWED, f"{path} takes {route[0]}")
        return route[1], route[2]

    def _locked(self, handler: Callable[[Any], Any], document: Any,
                deadline: float | None = None) -> Any:
        with self._lock:
            # checked once the request's turn has come, just before it acts: a request
            # its client gave up on is never carried out late
            if deadline is not None and time.time() > deadline:
                raise HttpError(HTTPStatus.REQUEST_TIMEOUT,
                                 "taken up after its deadline (the lab was stopped or "
                                 "busy): nothing was done")
            return handler(document)

    # ---- operations ----------------------------------------------------------------------

    def inject(self, request: dict[str, Any]) -> dict[str, Any]:
        """Inject the fault of a ``POST /v1/faults`` body; FaultError for a bad one."""
        _check_fields(request, FAULT_FIELDS)
        kind = _text(request, "kind")
        target = _text(request, "target")
        port = request.get("port")
        if port is not None and not isinstance(port, str | int):
            raise FaultError("port must be text or an integer")
        seconds = request.get("seconds")
        if seconds is not None and (isinstance(seconds, bool)
                                    or not isinstance(seconds, int | float) or seconds < 0):
            raise FaultError("seconds must be a number >= 0")
        count = request.get("count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)
                                  or count < 1):
            raise FaultError("count must be an integer >= 1")
        power_loss = request.get("power_loss", True)
        if not isinstance(power_loss, bool):
            raise FaultError("power_loss must be true or false")
        check_fault(self.lab.fault_targets(), self.lab.topology, target, kind)
        if kind in CUT_KINDS and (port is not None or seconds is not None or count is not None):
            raise FaultError("a cut takes no port, seconds or count: name the cable, the span "
                             "or the fiber as its target")
        fault = Fault(kind, None if port is None else str(port),
                      None if seconds is None else float(seconds), count, power_loss)
        injected = self.lab.inject(target, fault)
        log.info("lab control: %s on %s", fault, target)
        return {"target": target, "injected": injected}

    def clear(self, request: dict[str, Any]) -> dict[str, Any]:
        """Clear faults as a ``POST /v1/faults/clear`` body says; FaultError for a bad one."""
        _check_fields(request, CLEAR_FIELDS)
        target = _text(request, "target")
        kind = request.get("kind")
        if kind is not None:
            kind = _text(request, "kind")
        port = request.get("port")
        if port is not None:
            port = _text(request, "port")
        cleared = self.lab.clear(target, kind, port)
        log.info("lab control: cleared %s on %s", kind or "every fault", target)
        return {"target": target, "cleared": cleared}


# ---- the endpoint file ------------------------------------------------------------------


def endpoint_document(server: ControlServer, lab: LabBackend) -> dict[str, Any]:
    return {"protocol": PROTOCOL, "url": server.url, "host": HOST, "port": server.port,
            "token_file": f"{SECRETS_DIR}/{TOKEN_FILE}", "pid": os.getpid(),
            "topology": lab.topology.name, "inventory": INVENTORY_FILE}


def remove_endpoint_file(state_dir: Path, server: ControlServer) -> None:
    """Remove ``state_dir/lab.json`` if it still names ``server`` (a newer lab in the same
    directory keeps its own)."""
    path = state_dir / ENDPOINT_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if document.get("port") == server.port and document.get("pid") == os.getpid():
        path.unlink(missing_ok=True)


# ---- parsing ------------------------------------------------------------------------------


def _deadline(headers: dict[str, str]) -> float | None:
    """The request's deadline header, seconds since the epoch (None without one)."""
    text = headers.get(DEADLINE_HEADER.lower())
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise HttpError(HTTPStatus.BAD_REQUEST, f"{DEADLINE_HEADER}: a number of seconds "
                         f"since the epoch, not {text[:40]!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise HttpError(HTTPStatus.BAD_REQUEST, f"{DEADLINE_HEADER}: not a finite number")
    return value


def _parse_body(body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise HttpError(HTTPStatus.BAD_REQUEST, f"the body is not JSON: {error}") from None
    if not isinstance(document, dict):
        raise HttpError(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
    return document


def _check_fields(request: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(request) - set(allowed))
    if unknown:
        raise FaultError(f"unknown field {', '.join(unknown)}; fields: {', '.join(allowed)}")


def _text(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not value:
        raise FaultError(f"{key} is required (text)")
    return value
