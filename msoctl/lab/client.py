"""The client side of the lab's control endpoint (protocol: emulators/lab/control.py).

A lab is found by its state directory: ``lab.json`` there says where its
endpoint listens and which file holds its token. Errors are the drivers' ones, so
the CLI prints one line and exits with their code (:mod:`msoctl.cli`): no lab
running (no ``lab.json``, or nothing listening where it says), a refused token, a request
that does not answer: :class:`DeviceUnreachable`, :class:`DeviceRejected`,
:class:`DeviceTimeout` (exit 1); a request the lab finds bad (an unknown
target, a kind the target does not take): :class:`ValidationError` (exit 2).
"""

from __future__ import annotations

import http.client
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drivers.errors import (
    DeviceError,
    DeviceRejected,
    DeviceTimeout,
    DeviceUnreachable,
    ProtocolError,
    ValidationError,
)
from emulators.lab.constants import DEADLINE_HEADER, ENDPOINT_FILE, PROTOCOL

TIMEOUT_SECONDS = 10.0
"""How long a request waits for the lab: its operations take milliseconds, so a lab
that has not answered by then is stopped (SIGSTOP), hung or gone."""
LAB = "lab"


@dataclass(frozen=True)
class LabEndpoint:
    state_dir: Path
    host: str
    port: int
    token: str
    pid: int | None = None
    topology: str | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def find_lab(state_dir: Path) -> LabEndpoint:
    """The endpoint of the lab that serves ``state_dir``, read from its ``lab.json``."""
    path = state_dir / ENDPOINT_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DeviceUnreachable(
            f"no lab is running in {state_dir} (no {ENDPOINT_FILE}); start one with "
            f"'msoctl lab up --state-dir {state_dir}', or name its directory with "
            "--state-dir", device=LAB) from None
    except (OSError, ValueError) as error:
        raise DeviceUnreachable(f"cannot read {path}: {error}", device=LAB) from None
    if not isinstance(document, dict) or document.get("protocol") != PROTOCOL:
        raise ProtocolError(f"{path} is not a {PROTOCOL} endpoint file", device=LAB)
    try:
        host, port = str(document["host"]), int(document["port"])
        token_path = state_dir / str(document["token_file"])
    except (KeyError, TypeError, ValueError):
        raise ProtocolError(f"{path} lacks host, port or token_file", device=LAB) from None
    try:
        token = token_path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise DeviceUnreachable(f"cannot read the lab's token {token_path}: "
                                f"{error.strerror or error}", device=LAB) from None
    pid = document.get("pid")
    return LabEndpoint(state_dir, host, port, token, pid if isinstance(pid, int) else None,
                       document.get("topology"))


def call(endpoint: LabEndpoint, method: str, path: str, body: dict[str, Any] | None = None,
         *, timeout_seconds: float | None = None) -> dict[str, Any]:
    """One request to the lab; its JSON answer. Raises the errors of the module docstring.

    The request carries its deadline (``X-Msoctl-Deadline``, this host's clock, which
    the lab shares): a lab that takes it up later (stopped meanwhile, then continued)
    does nothing with it, so a request reported as timed out never takes effect."""
    timeout_seconds = TIMEOUT_SECONDS if timeout_seconds is None else timeout_seconds
    connection = http.client.HTTPConnection(endpoint.host, endpoint.port,
                                            timeout=timeout_seconds)
    payload = None if body is None else json.dumps(body).encode("utf-8")
    headers = {"Authorization": f"Bearer {endpoint.token}", "Accept": "application/json",
               DEADLINE_HEADER: f"{time.time() + timeout_seconds:.3f}"}
    if payload is not None:
        headers["Content-Type"] = "application/json"
    try:
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        raw = response.read()
    except ConnectionRefusedError:
        raise DeviceUnreachable(
            f"no lab is running in {endpoint.state_dir}: nothing listens at {endpoint.url} "
            f"(its {ENDPOINT_FILE} is left from a lab that did not stop cleanly)",
            device=LAB) from None
    except TimeoutError:
        raise DeviceTimeout(f"no answer from {endpoint.url} within {timeout_seconds:g} s "
                            "(the lab is stopped, hung or overloaded; the request will not "
                            "take effect later)", device=LAB) from None
    except (OSError, http.client.HTTPException) as error:
        raise DeviceUnreachable(f"{endpoint.url}: {error}", device=LAB) from None
    finally:
        connection.close()
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ProtocolError(f"{endpoint.url} answered {response.status} without JSON "
                            "(is it a lab?)", device=LAB,
                            detail=raw[:200].decode("latin-1")) from None
    if not isinstance(document, dict):
        raise ProtocolError(f"{endpoint.url} answered something other than a JSON object",
                            device=LAB)
    if response.status == http.client.OK:
        return document
    message = str(document.get("error", f"HTTP {response.status}"))
    if response.status == http.client.BAD_REQUEST:
        raise ValidationError(message)
    if response.status == http.client.UNAUTHORIZED:
        raise DeviceRejected(f"{message}; is {endpoint.url} the lab of "
                             f"{endpoint.state_dir}?", device=LAB)
    raise DeviceError(message, device=LAB, detail=f"HTTP {response.status}")
