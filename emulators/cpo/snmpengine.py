"""The agent's SNMP engine identity: snmpEngineID, snmpEngineBoots kept across restarts,
and snmpEngineTime on the device's clock (SNMP-FRAMEWORK-MIB, RFC 3411; USM, RFC 3414).

- **snmpEngineID** is RFC 3411's text format: the enterprise number with its top bit
  set (0x80000000 | 32473, the documentation arc the MIBs use), format octet 4
  ("administratively assigned text"), then up to 27 octets of the switch's name:
  stable across restarts and unique among the switches of a lab.
- **snmpEngineBoots** counts the engine's (re)initialisations since its engineID
  was configured (RFC 3414 section 2.2.2), and a real engine keeps it in
  non-volatile memory: :class:`EngineNvram` keeps it in a small JSON file, so a
  restarted agent (a new process, the same file) counts on. It stops at
  2147483647, where RFC 3414 leaves an engine needing a new engineID.
- **snmpEngineTime**, the seconds since boots last changed, follows the device's
  clock (the telemetry's, as sysUpTime does), so both restart together at a reboot
  fault and agree in tests that step the clock. pysnmp's USM reads it from its own
  snmpEngineTime instance by ``syntax.clone()``; :func:`install` puts there a value
  whose ``clone()`` asks the agent. A manager whose estimate falls out of USM's
  150-second window (a clock stepped far ahead) is answered notInTimeWindow with the
  current values, and resynchronises, as after any reboot.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pysnmp.entity import engine
from pysnmp.proto import rfc1902

ENTERPRISE = 32473  # MSO-SMI's enterprise arc (RFC 5612, documentation)
ENGINE_ID_TEXT_FORMAT = 4
ENGINE_ID_TEXT_MAX = 27
MAX_BOOTS = 2147483647
MAX_ENGINE_SECONDS = 2147483647
MAX_MESSAGE_SIZE = 65507
"""snmpEngineMaxMessageSize: the largest UDP payload over IPv4 (65535 - 8 - 20)."""
_FRAMEWORK = "__SNMP-FRAMEWORK-MIB"  # pysnmp's instances of SNMP-FRAMEWORK-MIB


def engine_id_for(name: str) -> bytes:
    """RFC 3411's text-format snmpEngineID of switch ``name`` (5 + up to 27 octets)."""
    text = name.encode("utf-8")[:ENGINE_ID_TEXT_MAX] or b"?"
    return (0x80000000 | ENTERPRISE).to_bytes(4, "big") + bytes([ENGINE_ID_TEXT_FORMAT]) + text


class EngineNvram:
    """snmpEngineBoots in a JSON file (``path``), or in memory when ``path`` is None.

    The file is ``{"engine_id": HEX, "boots": N}``, replaced atomically; boots stored
    for another engineID do not count (RFC 3414: boots count since the engineID
    was configured).
    """

    def __init__(self, path: Path | None):
        self.path = path
        self._memory: dict[bytes, int] = {}

    def load(self, engine_id: bytes) -> int:
        """The boots stored for ``engine_id``, 0 if none (or the file is unreadable)."""
        if self.path is None:
            return self._memory.get(engine_id, 0)
        try:
            stored = json.loads(self.path.read_text(encoding="utf-8"))
            if bytes.fromhex(str(stored["engine_id"])) != engine_id:
                return 0
            return max(0, min(MAX_BOOTS, int(stored["boots"])))
        except (OSError, ValueError, KeyError, TypeError):
            return 0

    def store(self, engine_id: bytes, boots: int) -> None:
        """Keep ``boots`` for ``engine_id``; raises OSError if the file cannot be written."""
        if self.path is None:
            self._memory[engine_id] = boots
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=self.path.parent,
                                                 prefix=f".{self.path.name}.")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                json.dump({"engine_id": engine_id.hex(), "boots": boots}, file)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def next_boot(self, engine_id: bytes) -> int:
        """Count one more boot of ``engine_id`` and keep it: the new snmpEngineBoots."""
        boots = min(MAX_BOOTS, self.load(engine_id) + 1)
        self.store(engine_id, boots)
        return boots


class _DeviceEngineTime(rfc1902.Integer32):  # type: ignore[misc]
    """snmpEngineTime whose ``clone()`` without a value is the device's engine time."""

    seconds: Callable[[], int] = staticmethod(lambda: 0)

    def clone(self, *args: Any, **kwargs: Any) -> Any:
        if not args:
            args = (self.seconds(),)
        return super().clone(*args, **kwargs)


def install(snmp_engine: engine.SnmpEngine, engine_id: bytes, boots: int,
            seconds: Callable[[], int]) -> None:
    """Give ``snmp_engine`` this identity: engineID, boots, and engine time from
    ``seconds()`` (call before any SnmpContext is made: it copies the engineID)."""
    builder = snmp_engine.get_mib_builder()
    engine_id_instance, engine_time = builder.import_symbols(
        _FRAMEWORK, "snmpEngineID", "snmpEngineTime")
    engine_id_instance.syntax = engine_id_instance.syntax.clone(engine_id)
    snmp_engine.snmpEngineID = engine_id_instance.syntax
    set_boots(snmp_engine, boots)
    device_time = type("DeviceEngineTime", (_DeviceEngineTime,),
                       {"seconds": staticmethod(seconds)})
    engine_time.syntax = device_time(0)


def set_boots(snmp_engine: engine.SnmpEngine, boots: int) -> None:
    (engine_boots,) = snmp_engine.get_mib_builder().import_symbols(_FRAMEWORK,
                                                                   "snmpEngineBoots")
    engine_boots.syntax = engine_boots.syntax.clone(boots)


def boots_of(snmp_engine: engine.SnmpEngine) -> int:
    """snmpEngineBoots as ``snmp_engine``'s USM puts it in message headers."""
    (engine_boots,) = snmp_engine.get_mib_builder().import_symbols(_FRAMEWORK,
                                                                   "snmpEngineBoots")
    return int(engine_boots.syntax)


_SNMP_GROUP = {"in_pkts": "snmpInPkts", "in_bad_versions": "snmpInBadVersions",
               "in_bad_community_names": "snmpInBadCommunityNames",
               "in_bad_community_uses": "snmpInBadCommunityUses",
               "in_asn_parse_errs": "snmpInASNParseErrs", "silent_drops": "snmpSilentDrops",
               "proxy_drops": "snmpProxyDrops"}
"""The SNMPv2-MIB snmp group's counters, by the attribute that serves each, as pysnmp's
message processing keeps them in the engine's own instances."""
_USM_STATS = {"usm_unsupported_sec_levels": "usmStatsUnsupportedSecLevels",
              "usm_not_in_time_windows": "usmStatsNotInTimeWindows",
              "usm_unknown_user_names": "usmStatsUnknownUserNames",
              "usm_unknown_engine_ids": "usmStatsUnknownEngineIDs",
              "usm_wrong_digests": "usmStatsWrongDigests",
              "usm_decryption_errors": "usmStatsDecryptionErrors"}
"""SNMP-USER-BASED-SM-MIB's usmStats counters (RFC 3414 3.2 counts each refusal), as
pysnmp's USM keeps them."""


def snmp_counters_of(snmp_engine: engine.SnmpEngine) -> dict[str, int]:
    """The snmp group's and USM's counters of ``snmp_engine`` now, by attribute
    (:class:`~emulators.cpo.mibview.Statistics`)."""
    builder = snmp_engine.get_mib_builder()
    counters = {}
    for module, group in (("__SNMPv2-MIB", _SNMP_GROUP),
                          ("__SNMP-USER-BASED-SM-MIB", _USM_STATS)):
        found = builder.import_symbols(module, *group.values())
        counters.update({attribute: int(instance.syntax)
                         for attribute, instance in zip(group, found, strict=True)})
    return counters


def count_bad_community_use(snmp_engine: engine.SnmpEngine) -> None:
    """One more snmpInBadCommunityUses."""
    (uses,) = snmp_engine.get_mib_builder().import_symbols("__SNMPv2-MIB",
                                                           "snmpInBadCommunityUses")
    uses.syntax += 1


def max_message_size_of(snmp_engine: engine.SnmpEngine) -> int:
    (size,) = snmp_engine.get_mib_builder().import_symbols(_FRAMEWORK,
                                                           "snmpEngineMaxMessageSize")
    return int(size.syntax)
