"""The NETCONF capabilities the emulator knows (RFC 6241 8, RFC 6243 4), as one table:
each capability's URI and the feature of ietf-netconf@2011-06-01 it enables.

ietf-netconf ties each of its features to a capability ("If the server advertises the
:candidate capability for a session, then this feature must also be enabled for that
session. Otherwise, this feature must not be enabled."), so the features a server
announces with the module (RFC 6020 5.6.4: ``?module=ietf-netconf&revision=…&features=
…``) are computed from the capabilities it announces, never listed by hand:
:func:`netconf_features`. A reviewer checks :data:`NETCONF_FEATURES` against the
module's ``feature`` statements (yang/ietf-netconf@2011-06-01.yang), line by line.
"""

from __future__ import annotations

from collections.abc import Iterable

_CAPABILITY = "urn:ietf:params:netconf:capability"
WRITABLE_RUNNING = f"{_CAPABILITY}:writable-running:1.0"
CANDIDATE = f"{_CAPABILITY}:candidate:1.0"
CONFIRMED_COMMIT_1_0 = f"{_CAPABILITY}:confirmed-commit:1.0"
CONFIRMED_COMMIT = f"{_CAPABILITY}:confirmed-commit:1.1"
ROLLBACK_ON_ERROR = f"{_CAPABILITY}:rollback-on-error:1.0"
VALIDATE_1_0 = f"{_CAPABILITY}:validate:1.0"
VALIDATE = f"{_CAPABILITY}:validate:1.1"
STARTUP = f"{_CAPABILITY}:startup:1.0"
URL = f"{_CAPABILITY}:url:1.0"
XPATH = f"{_CAPABILITY}:xpath:1.0"
WITH_DEFAULTS = f"{_CAPABILITY}:with-defaults:1.0"  # RFC 6243 4

NETCONF_MODULE = "ietf-netconf"
NETCONF_REVISION = "2011-06-01"

# ietf-netconf's features, in the module's order, each with the capability it stands for.
NETCONF_FEATURES: dict[str, str] = {
    "writable-running": WRITABLE_RUNNING,
    "candidate": CANDIDATE,
    "confirmed-commit": CONFIRMED_COMMIT,  # "NETCONF :confirmed-commit:1.1 capability"
    "rollback-on-error": ROLLBACK_ON_ERROR,
    "validate": VALIDATE,  # "NETCONF :validate:1.1 capability"
    "startup": STARTUP,
    "url": URL,
    "xpath": XPATH,
}


def announced(capabilities: Iterable[str]) -> frozenset[str]:
    """The capability URIs of a hello without their parameters (``:url:1.0?scheme=file``
    is ``:url:1.0``)."""
    return frozenset(capability.partition("?")[0] for capability in capabilities)


def netconf_features(capabilities: Iterable[str]) -> tuple[str, ...]:
    """The features of ietf-netconf enabled by ``capabilities``, in the module's order."""
    present = announced(capabilities)
    return tuple(feature for feature, capability in NETCONF_FEATURES.items()
                 if capability in present)
