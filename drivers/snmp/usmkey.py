"""RFC 3414's password-to-key for pysnmp, in one hash call and once per passphrase.

USM turns each passphrase into a master key by hashing the first 1,048,576 octets of
the passphrase repeated over and over (RFC 3414 A.2.1 for MD5, A.2.2 for SHA-1; RFC
7860 and RFC 3826 the same with their hash). pysnmp feeds those octets to the hash
64 at a time from a Python loop of 16,384 turns: some 10 ms of CPU for each key of
each user that each engine is given (every collector, every emulated agent, every
CLI command). :func:`install` puts in its place a function that hands the hash the
whole megabyte at once (the same octets, so the same key) and keeps the keys it has
computed, by passphrase and hash, for the process's life: a master key depends on
nothing else (the localisation to an engine ID, RFC 3414 2.6, stays pysnmp's).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

MASTER_KEY_OCTETS = 1_048_576
"""How many octets of the repeated passphrase are hashed (RFC 3414 A.2)."""
KEPT = 256
"""Master keys kept per process; past that none is added (a process has a few)."""

_installed = False
_lock = threading.Lock()
_keys: dict[tuple[bytes, Any], bytes] = {}


def master_key(passphrase: bytes, hash_function: Callable[..., Any]) -> bytes:
    """The master key of ``passphrase`` under ``hash_function`` (hashlib's constructor):
    the digest of the first :data:`MASTER_KEY_OCTETS` octets of the passphrase repeated.
    ValueError for an empty passphrase, which repeats to nothing."""
    if not passphrase:
        raise ValueError("an empty passphrase has no master key")
    with _lock:
        known = _keys.get((passphrase, hash_function))
    if known is not None:
        return known
    repeats = MASTER_KEY_OCTETS // len(passphrase) + 1
    digest: bytes = hash_function((passphrase * repeats)[:MASTER_KEY_OCTETS]).digest()
    with _lock:
        if len(_keys) < KEPT:
            _keys[(passphrase, hash_function)] = digest
    return digest


def install() -> None:
    """Have pysnmp's USM take its master keys from :func:`master_key`, once per process
    (an empty passphrase still goes to pysnmp's own, which refuses it as before)."""
    global _installed
    with _lock:
        if _installed:
            return
        from pyasn1.type import univ
        from pysnmp.proto.secmod.rfc3414 import localkey

        original = localkey.hash_passphrase

        def hash_passphrase(passphrase: Any, hashFunc: Any) -> Any:  # pysnmp calls it so
            octets = univ.OctetString(passphrase).asOctets()
            if not octets:
                return original(passphrase, hashFunc)
            return univ.OctetString(master_key(octets, hashFunc))

        localkey.hash_passphrase = hash_passphrase
        _installed = True
