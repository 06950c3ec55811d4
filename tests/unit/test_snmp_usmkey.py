"""USM master keys in one hash call (drivers/snmp/usmkey.py): RFC 3414's test vectors,
the same keys as pysnmp's own loop for every hash and passphrase length, and pysnmp's
USM using them once installed."""

from __future__ import annotations

import hashlib
import importlib.util
from types import ModuleType
from typing import Any

import pytest
from pyasn1.type import univ

from drivers.snmp import usmkey

# RFC 3414 A.3.1 and A.3.2: "maplesyrup", and localised to engine ID 00..02
MAPLESYRUP = b"maplesyrup"
ENGINE_ID = bytes(11) + b"\x02"
VECTORS = [
    (hashlib.md5, "9faf3283884e92834ebc9847d8edd963", "526f5eed9fcce26f8964c2930787d82b"),
    (hashlib.sha1, "9fb5cc0381497b3793528939ff788d5d79145211",
     "6695febc9288e36282235fc7151f128497b38f3f"),
]


def pysnmps_own() -> ModuleType:
    """A fresh copy of pysnmp's localkey module, which nothing has replaced in."""
    spec = importlib.util.find_spec("pysnmp.proto.secmod.rfc3414.localkey")
    assert spec is not None and spec.origin is not None
    copy = importlib.util.spec_from_file_location("pysnmp_localkey_copy", spec.origin)
    assert copy is not None and copy.loader is not None
    module = importlib.util.module_from_spec(copy)
    copy.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("hash_function", "master", "_"), VECTORS)
def test_rfc_3414_master_keys(hash_function: Any, master: str, _: str) -> None:
    assert usmkey.master_key(MAPLESYRUP, hash_function).hex() == master


@pytest.mark.parametrize("hash_function", [hashlib.md5, hashlib.sha1, hashlib.sha224,
                                           hashlib.sha256, hashlib.sha384, hashlib.sha512])
@pytest.mark.parametrize("length", [1, 7, 8, 63, 64, 65, 100, 1000])
def test_the_same_key_as_pysnmps_loop(hash_function: Any, length: int) -> None:
    passphrase = bytes((ord("a") + i % 26) for i in range(length))
    expected = pysnmps_own().hash_passphrase(passphrase, hash_function).asOctets()
    assert usmkey.master_key(passphrase, hash_function) == expected
    assert usmkey.master_key(passphrase, hash_function) == expected  # and from what is kept


def test_pysnmps_usm_localises_the_rfcs_keys_once_installed() -> None:
    from pysnmp.proto.secmod.rfc3414 import localkey
    usmkey.install()
    usmkey.install()  # once is enough; twice changes nothing
    for hash_function, master, localised in VECTORS:
        key = localkey.password_to_key(MAPLESYRUP, univ.OctetString(ENGINE_ID), hash_function)
        assert key.asOctets().hex() == localised
        assert localkey.hash_passphrase(MAPLESYRUP, hash_function).asOctets().hex() == master


def test_an_empty_passphrase_is_refused_as_pysnmp_refuses_it() -> None:
    from pysnmp.proto.secmod.rfc3414 import localkey
    usmkey.install()
    with pytest.raises(ValueError):
        usmkey.master_key(b"", hashlib.sha256)
    with pytest.raises(ZeroDivisionError):
        pysnmps_own().hash_passphrase(b"", hashlib.sha256)
    with pytest.raises(ZeroDivisionError):
        localkey.hash_passphrase(b"", hashlib.sha256)
