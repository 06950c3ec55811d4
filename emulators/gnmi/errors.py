"""The one failure the gNMI server's layers raise: a gRPC status code and its details."""

from __future__ import annotations


class GnmiError(Exception):
    """A request the target answers with a gRPC error status.

    ``code`` is a ``grpc.StatusCode`` name (``"NOT_FOUND"``, ``"INVALID_ARGUMENT"``,
    ...), as :class:`emulators.gnmi.face.FaceError` names its code; the message becomes
    the status details.
    """

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message
