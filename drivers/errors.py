"""The one error hierarchy shared by every driver.

Every failure a driver can report is a :class:`DeviceError`. The operator layer
maps each class to an exit code and one line of text; nothing else escapes a
driver except programming errors.
"""

from __future__ import annotations

import re


class DeviceError(Exception):
    """Base class: something went wrong talking to, or with, a device.

    ``device`` names the device when the raiser knows it; ``detail`` carries
    extra context that ``-v`` shows (the command sent, the raw reply).
    """

    def __init__(self, message: str, *, device: str | None = None, detail: str | None = None):
        super().__init__(message)
        self.message = message
        self.device = device
        self.detail = detail

    def __str__(self) -> str:
        """The message, prefixed ``device: `` unless it names the device already: a
        message that does (``link-1 would go down (ocs-a: ...)``, or one a caller has
        prefixed) must not read ``ocs-a: ocs-a: ...``."""
        if not self.device or _names(self.message, self.device):
            return self.message
        return f"{self.device}: {self.message}"


def _names(message: str, device: str) -> bool:
    """Whether ``message`` names ``device`` as a word (not inside a longer name)."""
    return re.search(rf"(?<![\w.-]){re.escape(device)}(?![\w-]|\.\w)", message) is not None


class DeviceUnreachable(DeviceError):
    """The device could not be reached, or the connection to it was lost."""


class DeviceTimeout(DeviceError):
    """The device did not answer within the timeout."""


class ProtocolError(DeviceError):
    """The device answered, but the reply is malformed or not what was asked for."""


class DeviceRejected(DeviceError):
    """The device refused the request: an SCPI error, an rpc-error, an I2C NACK.

    ``read_back`` is the reply of a query sent with the request to read back what it
    changed (an SCPI change's read-back), when there was one."""

    def __init__(
        self,
        message: str,
        *,
        device: str | None = None,
        detail: str | None = None,
        errors: tuple[str, ...] = (),
        read_back: str | None = None,
    ):
        super().__init__(message, device=device, detail=detail)
        self.errors = errors
        self.read_back = read_back


class VerificationFailed(DeviceError):
    """The change was accepted but reading it back shows a different state."""


class ValidationError(DeviceError):
    """Bad input, caught before anything was sent to the device."""


class Unsupported(ValidationError):
    """The unit lacks an optional feature the request needs (it said so when the driver
    asked what it has): refused before anything was changed. The message names the
    feature."""


class SafetyInterlock(DeviceError):
    """Refused by msoctl's safety rules; needs an explicit, journaled override."""
