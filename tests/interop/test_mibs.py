"""The MIBs in mibs/: lint-clean, resolved by name by net-snmp, and the compiled OID table
(drivers/snmp/mibs.py) agreeing with net-snmp and libsmi on every object.

The names below are written out by hand on purpose: they are what operators and
the collector rely on, so a rename or a dropped object has to show up here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from drivers.snmp import mibs
from drivers.snmp.mibs import MibError, Mibs
from tests.support.peers import require_executable

MIBS_DIR = mibs.source_directory()
OUR_MODULES = ("MSO-SMI", "MSO-TC", "MSO-CPO-MIB", "MSO-CPC-MIB")

EVERY_NAME = {
    "MSO-SMI": ["megaScaleOut", "msoModules", "msoMibs"],
    "MSO-TC": ["msoTextualConventions"],
    "MSO-CPO-MIB": [
        "msoCpoMIB", "msoCpoNotifications", "msoCpoObjects", "msoCpoConformance",
        # engines
        "msoCpoEngineTable", "msoCpoEngineEntry", "msoCpoEngineIndex", "msoCpoEngineName",
        "msoCpoEngineLaneCount", "msoCpoEngineTemperature", "msoCpoEngineTempHighThreshold",
        "msoCpoEngineSupplyVoltage", "msoCpoEngineStatus",
        # port lanes
        "msoCpoLaneTable", "msoCpoLaneEntry", "msoCpoLaneIndex", "msoCpoLaneEngineIndex",
        "msoCpoLaneEngineLane", "msoCpoLaneTxPower", "msoCpoLaneRxPower", "msoCpoLaneTxBias",
        "msoCpoLaneElsModule", "msoCpoLaneElsLane",
        # external laser sources
        "msoCpoElsTable", "msoCpoElsEntry", "msoCpoElsModuleIndex", "msoCpoElsLaneIndex",
        "msoCpoElsOutputPower", "msoCpoElsBiasCurrent", "msoCpoElsVoltage",
        "msoCpoElsTemperature", "msoCpoElsState", "msoCpoElsControlMode", "msoCpoElsFaults",
        # notifications and conformance
        "msoCpoElsFault", "msoCpoEngineOverTemperature",
        "msoCpoCompliances", "msoCpoCompliance", "msoCpoGroups", "msoCpoEngineGroup",
        "msoCpoLaneGroup", "msoCpoElsGroup", "msoCpoEngineNotificationGroup",
        "msoCpoElsNotificationGroup",
    ],
    "MSO-CPC-MIB": [
        "msoCpcMIB", "msoCpcNotifications", "msoCpcObjects", "msoCpcConformance",
        # lanes
        "msoCpcLaneTable", "msoCpcLaneEntry", "msoCpcLaneIndex", "msoCpcLaneSnr",
        "msoCpcLanePreFecBer", "msoCpcLaneFecCorrected", "msoCpcLaneFecUncorrectable",
        "msoCpcLaneInsertionLoss", "msoCpcLaneEyeHeight", "msoCpcLaneEyeWidth",
        "msoCpcLaneDiscontinuityTime",
        # histogram
        "msoCpcHistogramTable", "msoCpcHistogramEntry", "msoCpcHistogramBin",
        "msoCpcHistogramCodewords",
        # threshold, notification, conformance
        "msoCpcFecDegradeThreshold", "msoCpcFecDegrade",
        "msoCpcCompliances", "msoCpcCompliance", "msoCpcGroups", "msoCpcLaneGroup",
        "msoCpcHistogramGroup", "msoCpcChannelGroup", "msoCpcThresholdGroup",
        "msoCpcNotificationGroup",
    ],
}

# Every readable value of the two MIBs: (syntax on the wire, UNITS, decimals of the
# fixed point). The collector scales by these; the emulator encodes by them.
VALUES = {
    ("MSO-CPO-MIB", "msoCpoEngineName"): ("OCTET STRING", None, 0),
    ("MSO-CPO-MIB", "msoCpoEngineLaneCount"): ("Unsigned32", None, 0),
    ("MSO-CPO-MIB", "msoCpoEngineTemperature"): ("Integer32", "degrees Celsius", 2),
    ("MSO-CPO-MIB", "msoCpoEngineTempHighThreshold"): ("Integer32", "degrees Celsius", 2),
    ("MSO-CPO-MIB", "msoCpoEngineSupplyVoltage"): ("Integer32", "V", 3),
    ("MSO-CPO-MIB", "msoCpoEngineStatus"): ("Integer32", None, 0),
    ("MSO-CPO-MIB", "msoCpoLaneEngineIndex"): ("Unsigned32", None, 0),
    ("MSO-CPO-MIB", "msoCpoLaneEngineLane"): ("Unsigned32", None, 0),
    ("MSO-CPO-MIB", "msoCpoLaneTxPower"): ("Integer32", "dBm", 2),
    ("MSO-CPO-MIB", "msoCpoLaneRxPower"): ("Integer32", "dBm", 2),
    ("MSO-CPO-MIB", "msoCpoLaneTxBias"): ("Integer32", "mA", 3),
    ("MSO-CPO-MIB", "msoCpoLaneElsModule"): ("Unsigned32", None, 0),
    ("MSO-CPO-MIB", "msoCpoLaneElsLane"): ("Unsigned32", None, 0),
    ("MSO-CPO-MIB", "msoCpoElsOutputPower"): ("Integer32", "dBm", 2),
    ("MSO-CPO-MIB", "msoCpoElsBiasCurrent"): ("Integer32", "mA", 3),
    ("MSO-CPO-MIB", "msoCpoElsVoltage"): ("Integer32", "V", 3),
    ("MSO-CPO-MIB", "msoCpoElsTemperature"): ("Integer32", "degrees Celsius", 2),
    ("MSO-CPO-MIB", "msoCpoElsState"): ("Integer32", None, 0),
    ("MSO-CPO-MIB", "msoCpoElsControlMode"): ("Integer32", None, 0),
    ("MSO-CPO-MIB", "msoCpoElsFaults"): ("BITS", None, 0),
    ("MSO-CPC-MIB", "msoCpcLaneSnr"): ("Integer32", "dB", 2),
    ("MSO-CPC-MIB", "msoCpcLanePreFecBer"): ("Integer32", "log10", 3),
    ("MSO-CPC-MIB", "msoCpcLaneFecCorrected"): ("Counter64", "codewords", 0),
    ("MSO-CPC-MIB", "msoCpcLaneFecUncorrectable"): ("Counter64", "codewords", 0),
    ("MSO-CPC-MIB", "msoCpcLaneInsertionLoss"): ("Integer32", "dB", 2),
    ("MSO-CPC-MIB", "msoCpcLaneEyeHeight"): ("Integer32", "mV", 3),
    ("MSO-CPC-MIB", "msoCpcLaneEyeWidth"): ("Integer32", "UI", 3),
    ("MSO-CPC-MIB", "msoCpcLaneDiscontinuityTime"): ("TimeTicks", None, 0),
    ("MSO-CPC-MIB", "msoCpcHistogramCodewords"): ("Counter64", "codewords", 0),
    ("MSO-CPC-MIB", "msoCpcFecDegradeThreshold"): ("Integer32", "log10", 3),
}

# What libsmi says at level 5 and 6 of the two support modules, and cannot be helped:
# an SMI root or a TC module is not named *-MIB, and a TC module uses none of its types.
UNAVOIDABLE_NOTES = {"module-name-suffix", "type-unref"}


def _net_snmp_environment() -> dict[str, str]:
    environment = dict(os.environ)
    for variable in ("MIBS", "MIBDIRS"):
        environment.pop(variable, None)
    return environment


def _smilint(*arguments: str | Path) -> str:
    """smilint's whole output; it exits 0 even on errors, so the output is the verdict."""
    smilint = require_executable("smilint", debian_package="smitools")
    # -c /dev/null: Debian's /etc/smi.conf preloads modules from directories that are empty.
    completed = subprocess.run(
        [smilint, "-c", "/dev/null", "-m", *map(str, arguments)],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "SMIPATH": str(MIBS_DIR)}, check=False)
    return completed.stdout + completed.stderr


# --- smilint ------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["MSO-CPO-MIB", "MSO-CPC-MIB"])
def test_smilint_finds_nothing_in_the_cpo_and_cpc_modules_at_level_6(module: str) -> None:
    assert _smilint("-l", "6", MIBS_DIR / f"{module}.mib") == ""


@pytest.mark.parametrize("module", ["MSO-SMI", "MSO-TC"])
def test_smilint_support_modules_are_clean_at_level_4_with_only_unavoidable_notes_above(
        module: str) -> None:
    path = MIBS_DIR / f"{module}.mib"
    assert _smilint("-l", "4", path) == ""
    tags = set(re.findall(r"\{([a-z0-9-]+)\}", _smilint("-l", "6", path)))
    assert tags <= UNAVOIDABLE_NOTES


def test_smilint_check_is_not_vacuous(tmp_path: Path) -> None:
    broken = tmp_path / "MSO-CPC-MIB.mib"
    broken.write_text((MIBS_DIR / "MSO-CPC-MIB.mib").read_text().replace(
        "msoCpcLaneSnr,\n                    msoCpcLanePreFecBer,",
        "msoCpcLanePreFecBer,"))
    assert "group-membership" in _smilint("-l", "6", broken)


# --- net-snmp and libsmi agree with the compiled table ------------------------------


def test_the_compiled_table_has_exactly_the_names_listed_here() -> None:
    for module, names in EVERY_NAME.items():
        assert sorted(node.name for node in mibs.load().objects(module)) == sorted(names)


def test_net_snmp_resolves_every_object_by_name_to_the_compiled_oid() -> None:
    snmptranslate = require_executable("snmptranslate", debian_package="snmp")
    expected = [mibs.mib_object(module, name)
                for module, names in EVERY_NAME.items() for name in names]
    completed = subprocess.run(
        [snmptranslate, "-M", f"+{MIBS_DIR}", "-m", "ALL", "-On",
         *(node.qualified_name for node in expected)],
        capture_output=True, text=True, timeout=60, env=_net_snmp_environment(), check=False)
    assert completed.returncode == 0, completed.stderr
    # -m ALL also loads Debian's own MIBs, some of which import modules Debian lacks:
    # that noise names their files; anything else on stderr is about ours.
    ours = [line for line in completed.stderr.splitlines()
            if "/usr/share/snmp/mibs/" not in line]
    assert ours == []
    assert completed.stdout.split() == [node.dotted for node in expected]


def test_libsmi_gives_every_object_the_compiled_oid() -> None:
    smidump = require_executable("smidump", debian_package="smitools")
    for module in OUR_MODULES:
        completed = subprocess.run(
            [smidump, "-c", "/dev/null", "-f", "identifiers", module],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "SMIPATH": str(MIBS_DIR)}, check=True)
        assert completed.stderr == ""
        dumped = {fields[1]: fields[3] for fields in map(str.split, completed.stdout.splitlines())
                  if len(fields) == 4 and fields[0] == module}
        compiled = {node.name: node.dotted.lstrip(".") for node in mibs.load().objects(module)}
        assert dumped == compiled


# --- the typed table ----------------------------------------------------------------


def test_every_value_has_its_wire_type_units_and_fixed_point_scale() -> None:
    for (module, name), (base_type, units, decimals) in VALUES.items():
        node = mibs.mib_object(module, name)
        assert (node.base_type, node.units, node.decimals) == (base_type, units, decimals), name
        assert node.max_access == "read-only", name
    readable = {(node.module, node.name) for module in ("MSO-CPO-MIB", "MSO-CPC-MIB")
                for node in mibs.load().objects(module)
                if node.kind in ("column", "scalar") and node.max_access == "read-only"}
    assert readable == set(VALUES)


def test_fixed_point_values_scale_into_their_units() -> None:
    assert mibs.mib_object("MSO-CPO-MIB", "msoCpoLaneTxPower").scaled(-123) == pytest.approx(-1.23)
    assert mibs.mib_object("MSO-CPO-MIB", "msoCpoElsBiasCurrent").scaled(52500) == 52.5
    assert mibs.mib_object("MSO-CPC-MIB", "msoCpcLanePreFecBer").scaled(-3620) == -3.62
    assert mibs.mib_object("MSO-CPC-MIB", "msoCpcLaneFecCorrected").scaled(10**19) == 1e19
    ber = mibs.mib_object("MSO-CPC-MIB", "msoCpcLanePreFecBer")
    assert ber.syntax == "MsoLog10Ber" and ber.value_range == (-18000, 0)
    assert mibs.mib_object("MSO-CPO-MIB", "msoCpoEngineName").value_range == (0, 64)


def test_tables_are_indexed_by_ifindex_and_lane_and_by_their_own_numbers() -> None:
    def index(name: str) -> list[str]:
        module = "MSO-CPC-MIB" if name.startswith("msoCpc") else "MSO-CPO-MIB"
        return [part.qualified_name for part in mibs.table(module, name).index]

    assert index("msoCpoEngineTable") == ["MSO-CPO-MIB::msoCpoEngineIndex"]
    assert index("msoCpoLaneTable") == ["IF-MIB::ifIndex", "MSO-CPO-MIB::msoCpoLaneIndex"]
    assert index("msoCpoElsTable") == ["MSO-CPO-MIB::msoCpoElsModuleIndex",
                                       "MSO-CPO-MIB::msoCpoElsLaneIndex"]
    assert index("msoCpcLaneTable") == ["IF-MIB::ifIndex", "MSO-CPC-MIB::msoCpcLaneIndex"]
    assert index("msoCpcHistogramTable") == ["IF-MIB::ifIndex", "MSO-CPC-MIB::msoCpcLaneIndex",
                                             "MSO-CPC-MIB::msoCpcHistogramBin"]
    histogram = mibs.table("MSO-CPC-MIB", "msoCpcHistogramTable")
    assert histogram.index[2].value_range == (0, 16)
    assert [column.name for column in histogram.columns] == ["msoCpcHistogramCodewords"]


def test_instance_oids_are_built_and_split_by_the_table() -> None:
    lanes = mibs.table("MSO-CPC-MIB", "msoCpcLaneTable")
    assert [column.name for column in lanes.columns] == [
        "msoCpcLaneSnr", "msoCpcLanePreFecBer", "msoCpcLaneFecCorrected",
        "msoCpcLaneFecUncorrectable", "msoCpcLaneInsertionLoss", "msoCpcLaneEyeHeight",
        "msoCpcLaneEyeWidth", "msoCpcLaneDiscontinuityTime"]
    snr = lanes.instance("msoCpcLaneSnr", (7, 2))
    assert snr == (1, 3, 6, 1, 4, 1, 32473, 2, 2, 1, 1, 1, 2, 7, 2)
    column, row = lanes.parse_instance(snr) or (None, None)
    assert column is not None and column.name == "msoCpcLaneSnr" and row == (7, 2)
    assert lanes.parse_instance(snr[:-1]) is None
    assert lanes.parse_instance((*mibs.oid("SNMPv2-MIB", "sysUpTime"), 0)) is None
    with pytest.raises(MibError):
        lanes.instance("msoCpcLaneSnr", (7,))
    with pytest.raises(MibError):
        lanes.instance("msoCpcLaneIndex", (7, 2))  # not-accessible: not a readable column


def test_enumerations_and_bits_come_from_the_mib() -> None:
    state = mibs.mib_object("MSO-CPO-MIB", "msoCpoElsState")
    assert dict(state.enumeration) == {"off": 1, "ramping": 2, "on": 3}
    assert state.enum_name(2) == "ramping" and state.enum_name(9) is None
    assert dict(mibs.mib_object("MSO-CPO-MIB", "msoCpoElsControlMode").enumeration) == {
        "constantCurrent": 1, "constantPower": 2}
    assert dict(mibs.mib_object("MSO-CPO-MIB", "msoCpoEngineStatus").enumeration) == {
        "normal": 1, "overTemperature": 2, "failed": 3}
    faults = mibs.mib_object("MSO-CPO-MIB", "msoCpoElsFaults")
    assert sorted(faults.bits, key=faults.bits.__getitem__) == [
        "overTemperature", "coolerFault", "overCurrent", "highOutputPower", "lowOutputPower",
        "supplyVoltage", "safetyInterlock", "endOfLife"]
    # RFC 2578 BITS: bit 0 is the high bit of the first octet.
    assert faults.encode_bits(["overTemperature"]) == b"\x80"
    assert faults.encode_bits(["endOfLife", "coolerFault"]) == b"\x41"
    assert faults.encode_bits([]) == b""
    assert faults.decode_bits(b"\x41\xff") == {"coolerFault", "endOfLife"}
    assert faults.decode_bits(b"") == frozenset()
    with pytest.raises(MibError):
        faults.encode_bits(["onFire"])


def test_notifications_name_their_objects() -> None:
    assert mibs.mib_object("MSO-CPO-MIB", "msoCpoElsFault").members == (
        ("MSO-CPO-MIB", "msoCpoElsFaults"), ("MSO-CPO-MIB", "msoCpoElsState"),
        ("MSO-CPO-MIB", "msoCpoElsOutputPower"))
    assert mibs.mib_object("MSO-CPO-MIB", "msoCpoEngineOverTemperature").kind == "notification"
    assert mibs.mib_object("MSO-CPC-MIB", "msoCpcFecDegrade").members == (
        ("MSO-CPC-MIB", "msoCpcLanePreFecBer"), ("MSO-CPC-MIB", "msoCpcFecDegradeThreshold"))


def test_standard_objects_a_collector_needs_are_there_too() -> None:
    assert mibs.oid("SNMPv2-MIB", "sysUpTime") == (1, 3, 6, 1, 2, 1, 1, 3)
    assert mibs.oid("IF-MIB", "ifName") == (1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 1)
    assert mibs.mib_object("IF-MIB", "ifIndex").base_type == "Integer32"
    assert mibs.oid("IF-MIB", "ifNumber") == (1, 3, 6, 1, 2, 1, 2, 1)
    assert mibs.mib_object("IF-MIB", "ifType").enumeration["ethernetCsmacd"] == 6
    assert mibs.mib_object("IF-MIB", "ifHighSpeed").base_type == "Gauge32"


def test_the_snmp_engine_group_is_rfc_3411s() -> None:
    """SNMP-FRAMEWORK-MIB (RFC 3411 section 5): snmpEngine 1.3.6.1.6.3.10.2.1, objects
    1-4, with the RFC's ranges; the copy is the RFC's own text (its LAST-UPDATED)."""
    engine = mibs.oid("SNMP-FRAMEWORK-MIB", "snmpEngine")
    assert engine == (1, 3, 6, 1, 6, 3, 10, 2, 1)
    expected = {"snmpEngineID": (1, "OCTET STRING", (5, 32)),
                "snmpEngineBoots": (2, "Integer32", (1, 2147483647)),
                "snmpEngineTime": (3, "Integer32", (0, 2147483647)),
                "snmpEngineMaxMessageSize": (4, "Integer32", (484, 2147483647))}
    for name, (arc, base_type, value_range) in expected.items():
        node = mibs.mib_object("SNMP-FRAMEWORK-MIB", name)
        assert (node.oid, node.kind, node.base_type, node.value_range, node.max_access) == (
            (*engine, arc), "scalar", base_type, value_range, "read-only"), name
    text = (MIBS_DIR / "SNMP-FRAMEWORK-MIB.mib").read_text()
    assert 'LAST-UPDATED "200210140000Z"' in text and "RFC 3411" in text
    assert _smilint("-l", "4", MIBS_DIR / "SNMP-FRAMEWORK-MIB.mib") == ""


def test_net_snmp_resolves_the_standard_objects_the_agent_serves() -> None:
    snmptranslate = require_executable("snmptranslate", debian_package="snmp")
    names = [("SNMP-FRAMEWORK-MIB", name) for name in (
        "snmpEngineID", "snmpEngineBoots", "snmpEngineTime", "snmpEngineMaxMessageSize")]
    names += [("IF-MIB", name) for name in (
        "ifNumber", "ifIndex", "ifDescr", "ifType", "ifSpeed", "ifOperStatus", "ifName",
        "ifHighSpeed")]
    completed = subprocess.run(
        [snmptranslate, "-M", f"+{MIBS_DIR}", "-m", "ALL", "-On",
         *(f"{module}::{name}" for module, name in names)],
        capture_output=True, text=True, timeout=60, env=_net_snmp_environment(), check=False)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == [mibs.mib_object(*pair).dotted for pair in names]


def test_unknown_names_are_refused_clearly() -> None:
    with pytest.raises(MibError, match="defines no object 'msoCpcLaneSnir'"):
        mibs.oid("MSO-CPC-MIB", "msoCpcLaneSnir")
    with pytest.raises(MibError, match="no MIB module MSO-NOPE-MIB"):
        mibs.oid("MSO-NOPE-MIB", "anything")
    with pytest.raises(MibError, match="not a table"):
        mibs.table("MSO-CPC-MIB", "msoCpcLaneSnr")


def test_descriptions_are_kept_for_help_texts() -> None:
    description = mibs.mib_object("MSO-CPC-MIB", "msoCpcLaneSnr").description
    assert description.startswith("The signal-to-noise ratio at the receiver's slicer")
    assert "\n" not in description and "  " not in description


# --- the compile cache --------------------------------------------------------------


_PROBE = ("import sys; from drivers.snmp import mibs; "
          "print(mibs.oid('MSO-CPC-MIB', 'msoCpcLaneSnr'), 'pysmi' in sys.modules)")


def _probe(cache: Path) -> str:
    completed = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                               timeout=120, env={**os.environ, mibs.CACHE_ENVIRONMENT: str(cache)},
                               check=True)
    return completed.stdout.strip()


def test_the_first_use_compiles_and_later_processes_only_read_the_cache(tmp_path: Path) -> None:
    snr = "(1, 3, 6, 1, 4, 1, 32473, 2, 2, 1, 1, 1, 2)"
    assert _probe(tmp_path) == f"{snr} True"
    assert _probe(tmp_path) == f"{snr} False"  # pysmi not even imported
    [compiled] = [path for path in tmp_path.iterdir()]
    assert compiled.name == mibs.source_digest(MIBS_DIR)[:32]
    assert {path.name for path in compiled.iterdir()} >= {
        "manifest.json", "MSO-CPO-MIB.json", "MSO-CPC-MIB.json", "IF-MIB.json"}


def test_an_edited_mib_is_compiled_afresh(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(mibs.CACHE_ENVIRONMENT, str(tmp_path / "cache"))
    source = tmp_path / "mibs"
    shutil.copytree(MIBS_DIR, source, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    path = source / "MSO-CPC-MIB.mib"
    path.write_text(path.read_text().replace(
        "The signal-to-noise ratio at", "The edited signal-to-noise ratio at"))
    compiled = mibs.compiled_directory(source)
    assert compiled.name == mibs.source_digest(source)[:32] != mibs.source_digest(MIBS_DIR)[:32]
    edited = Mibs(compiled).object("MSO-CPC-MIB", "msoCpcLaneSnr")
    assert edited.description.startswith("The edited signal-to-noise ratio")
    assert mibs.compiled_directory(source) == compiled  # now cached


def test_a_mib_that_does_not_compile_is_reported_by_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(mibs.CACHE_ENVIRONMENT, str(tmp_path / "cache"))
    source = tmp_path / "mibs"
    shutil.copytree(MIBS_DIR, source, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    path = source / "MSO-CPC-MIB.mib"
    path.write_text(path.read_text().replace("msoCpcLaneSnr OBJECT-TYPE\n",
                                             "msoCpcLaneSnr OBJECT-TYPE )\n"))
    with pytest.raises(MibError, match="MSO-CPC-MIB"):
        mibs.compiled_directory(source)
    assert list((tmp_path / "cache").iterdir()) == [], "nothing half-built is left"


def test_a_temporary_cache_directory_others_can_write_is_not_trusted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setattr(mibs, "_shared_temporary_root", lambda: shared)
    monkeypatch.setattr(mibs, "cache_roots", lambda: [shared])
    with pytest.raises(MibError, match="not a private directory"):
        mibs.compiled_directory()
