"""What a device model shows the gNMI server: the seam between the protocol and the device.

The gNMI server (:mod:`emulators.gnmi.server`) knows paths, JSON trees, transactions,
subscriptions and the Commit extension, and nothing of any data model. A *face* is one
data model a device serves over it (OpenConfig QoS, SONiC's CONFIG_DB, ...): it says
which models it announces, holds what a factory-fresh device holds, checks and applies
a candidate configuration, and shows the operational tree.

Trees are JSON values as RFC 7951 (json_ietf) writes them: objects, arrays of list
entries (each entry carrying its key leaves), member names qualified by their module
where RFC 7951 section 4 asks for it (``"openconfig-qos:qos"``, and an augment's
``"arista-qos-augments:pfc"`` inside an OpenConfig container). A SONiC face's tree is
``{"CONFIG_DB": {"localhost": {TABLE: {KEY: {FIELD: "value"}}}}}`` (values strings,
as the database holds them); its read-only databases sit beside CONFIG_DB.

A face is called with the device's lock held by the server: one call at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

Tree = dict[str, Any]


@dataclass(frozen=True)
class Model:
    """One entry of the CapabilityResponse's supported models."""

    name: str
    organization: str
    version: str


class FaceError(Exception):
    """A configuration or request the device refuses.

    ``code`` is the gRPC status the server answers with (a ``grpc.StatusCode`` name:
    ``INVALID_ARGUMENT`` for a document that does not fit the model, an unknown or
    mistyped leaf; ``FAILED_PRECONDITION`` for one the device cannot run, a port it
    does not have); ``path`` is the path of the offending node in gNMI path notation,
    as the device names it.
    """

    def __init__(self, message: str, *, path: str | None = None,
                 code: str = "INVALID_ARGUMENT"):
        super().__init__(message)
        self.message = message
        self.path = path
        self.code = code

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class Face(Protocol):
    """One data model served over gNMI (see the module docstring)."""

    name: str
    """Short name: ``openconfig``, ``sonic``."""

    models: tuple[Model, ...]
    encodings: tuple[str, ...]
    """gNMI Encoding names the face accepts and answers in: ``("JSON_IETF",)``, or for
    SONiC ``("JSON", "JSON_IETF")``."""

    def factory(self) -> Tree:
        """The configuration tree a device holds out of the box."""

    def commit(self, config: Tree) -> None:
        """Check ``config`` (the whole candidate configuration after a Set) and make it
        the device's running configuration, or raise :class:`FaceError` and change
        nothing. Called for every Set, for a Commit extension's cancel and for its
        rollback on timeout (with the configuration to go back to)."""

    def operational(self, config: Tree) -> Tree:
        """``config`` with the device's state merged in (OpenConfig: every ``state``
        container mirroring its applied ``config`` and carrying counters, integrated up
        to now; SONiC: the read-only databases beside CONFIG_DB)."""

    # Optional: ``scalar(path, value)``, a leaf's value sent as a scalar TypedValue
    # (int_val, uint_val, ...: gNMI lets a client send a number so) in the face's JSON
    # for that leaf; the server calls it where the face has it.

    def writable(self, top: str) -> bool:
        """Whether a Set may touch the top-level member ``top`` (a SONiC face refuses
        COUNTERS_DB; an OpenConfig face any tree but its configuration modules')."""
