"""The CPO/CPC SNMP agent (emulators/cpo/agent.py), read by pysnmp 7 and by net-snmp.

The agent runs on its own event loop in a background thread, on a SteppedClock, so
the telemetry it serves only changes when a test moves the clock; the pysnmp
client runs on the test's own loop (``asyncio.run``), one SnmpEngine per loop.
Every OID a test asks for comes from drivers/snmp/mibs.py.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    UsmUserData,
    usmAesCfb128Protocol,
    usmHMAC192SHA256AuthProtocol,
)
from pysnmp.proto import errind, rfc1905

from drivers.snmp import mibs
from drivers.snmp.mibs import MibObject, Oid
from emulators.cpo import columns as served_columns
from emulators.cpo import physics, wire
from emulators.faults import Fault, FaultError
from tests.support.snmp_agents import (
    SPEC,
    TINY,
    AgentUnderTest,
    Client,
    get_one,
    net_snmp,
    our_stderr,
    run,
    timed_out,
    v3,
    v3_arguments,
)

# Which reading attribute each column carries, and how the MIB's DESCRIPTION scales it
# (N: a fixed point counting 10^-N of the UNITS), written out here and not taken from
# the emulator's own table (emulators/cpo/columns.py), so that a column wired to the
# wrong value, or scaled wrong, shows up.
COLUMNS: dict[str, tuple[str, Any, dict[str, tuple[str, int | str]]]] = {
    "msoCpoEngineTable": ("engines", lambda row: (row.index,), {
        "msoCpoEngineName": ("name", "text"),
        "msoCpoEngineLaneCount": ("lane_count", "number"),
        "msoCpoEngineTemperature": ("temperature_celsius", 2),  # hundredths of a degree
        "msoCpoEngineTempHighThreshold": ("temperature_high_celsius", 2),
        "msoCpoEngineSupplyVoltage": ("supply_voltage_volts", 3),  # millivolts
        "msoCpoEngineStatus": ("status", "enum")}),
    "msoCpoLaneTable": ("optical_lanes", lambda row: (row.port, row.lane), {
        "msoCpoLaneEngineIndex": ("engine", "number"),
        "msoCpoLaneEngineLane": ("engine_lane", "number"),
        "msoCpoLaneTxPower": ("tx_power_dbm", 2),  # hundredths of a dBm
        "msoCpoLaneRxPower": ("rx_power_dbm", 2),
        "msoCpoLaneTxBias": ("tx_bias_ma", 3),  # microamperes
        "msoCpoLaneElsModule": ("els_module", "number"),
        "msoCpoLaneElsLane": ("els_lane", "number")}),
    "msoCpoElsTable": ("lasers", lambda row: (row.module, row.lane), {
        "msoCpoElsOutputPower": ("output_power_dbm", 2),
        "msoCpoElsBiasCurrent": ("bias_current_ma", 3),
        "msoCpoElsVoltage": ("voltage_volts", 3),
        "msoCpoElsTemperature": ("temperature_celsius", 2),
        "msoCpoElsState": ("state", "enum"),
        "msoCpoElsControlMode": ("control_mode", "enum"),
        "msoCpoElsFaults": ("faults", "bits")}),
    "msoCpcLaneTable": ("electrical_lanes", lambda row: (row.port, row.lane), {
        "msoCpcLaneSnr": ("snr_db", 2),  # hundredths of a dB
        "msoCpcLanePreFecBer": ("pre_fec_ber", "log10"),  # log10 of the ratio, thousandths
        "msoCpcLaneFecCorrected": ("fec_corrected", "counter"),
        "msoCpcLaneFecUncorrectable": ("fec_uncorrectable", "counter"),
        "msoCpcLaneInsertionLoss": ("insertion_loss_db", 2),
        "msoCpcLaneEyeHeight": ("eye_height_mv", 3),  # microvolts
        "msoCpcLaneEyeWidth": ("eye_width_ui", 3),  # thousandths of a UI
        "msoCpcLaneDiscontinuityTime": ("discontinuity_at", "timestamp")}),
}
POWER_FLOOR = -10000  # MsoPowerDbm: "a power below -100.00 dBm ... is reported as -10000"
BER_FLOOR = -18000  # MsoLog10Ber: "a ratio below 1E-18 ... is reported as -18000"


def _module(table: str) -> str:
    return "MSO-CPC-MIB" if table.startswith("msoCpc") else "MSO-CPO-MIB"


@pytest.fixture
def tiny() -> Iterator[AgentUnderTest]:
    harness = AgentUnderTest(TINY, seed=5)
    yield harness
    harness.close()


@pytest.fixture(scope="module")
def shared() -> Iterator[AgentUnderTest]:
    """One agent for the tests that only read (they do move its clock forward)."""
    harness = AgentUnderTest(SPEC, community="public-test", seed=5)
    yield harness
    harness.close()


def _expected(column: MibObject, value: Any, harness: AgentUnderTest) -> Any:
    """What a manager should decode from column ``column`` for the reading ``value``."""
    if column.base_type == "BITS":
        return frozenset(value)
    if column.enumeration:
        return value
    if column.base_type == "TimeTicks":
        return 0 if value is None else round((value - harness.agent._boot_time) * 100)
    if isinstance(value, str):
        return value
    if column.syntax == "MsoLog10Ber":
        return max(-18.0, math.log10(value)) if value > 0 else -18.0
    if value == float("-inf"):
        return column.scaled(column.value_range[0]) if column.value_range else None
    return value


def _decoded(column: MibObject, value: Any) -> Any:
    if column.base_type == "BITS":
        return column.decode_bits(value.asOctets())
    if column.enumeration:
        return column.enum_name(int(value))
    if column.base_type == "OCTET STRING":
        return value.asOctets().decode()
    return column.scaled(int(value))


# --- reading the tables -------------------------------------------------------------


@pytest.mark.parametrize("table", sorted(COLUMNS))
def test_a_bulk_walk_of_each_table_decodes_to_the_models_values(
        shared: AgentUnderTest, table: str) -> None:
    reading = shared.step_and_read(3.0)
    rows_attribute, index_of, columns = COLUMNS[table]
    layout = mibs.table(_module(table), table)
    walked = run(Client(shared).walk(layout.oid))
    rows = {index_of(row): row for row in getattr(reading, rows_attribute)}
    assert len(walked) == len(rows) * len(columns) == len(rows) * len(layout.columns)
    seen_columns = set()
    for oid, value in walked:
        parsed = layout.parse_instance(oid)
        assert parsed is not None, oid
        column, index = parsed
        seen_columns.add(column.name)
        expected = _expected(column, getattr(rows[index], columns[column.name][0]), shared)
        decoded = _decoded(column, value) if column.base_type != "TimeTicks" else int(value)
        if isinstance(expected, float):
            resolution = 10.0 ** -column.decimals
            assert decoded == pytest.approx(expected, abs=resolution / 2 + 1e-9), column.name
        else:
            assert decoded == expected, column.name
    assert seen_columns == set(columns)


def test_the_histogram_table_agrees_with_the_lane_counters_in_one_snapshot(
        shared: AgentUnderTest) -> None:
    reading = shared.step_and_read(10.0)
    histogram = mibs.table("MSO-CPC-MIB", "msoCpcHistogramTable")
    lanes = mibs.table("MSO-CPC-MIB", "msoCpcLaneTable")

    async def read() -> tuple[list[tuple[Oid, Any]], list[tuple[Oid, Any]]]:
        client = Client(shared)
        return await client.walk(histogram.oid, 200), await client.walk(lanes.oid)

    bins, counters = run(read())
    by_lane: dict[tuple[int, ...], list[int]] = {}
    for oid, value in bins:
        parsed = histogram.parse_instance(oid)
        assert parsed is not None
        port, lane, bin_number = parsed[1]
        by_lane.setdefault((port, lane), [0] * 17)[bin_number] = int(value)
    corrected = lanes.column("msoCpcLaneFecCorrected")
    uncorrectable = lanes.column("msoCpcLaneFecUncorrectable")
    lane_counters = {(parsed[0].name, parsed[1]): int(value) for oid, value in counters
                     if (parsed := lanes.parse_instance(oid)) is not None}
    assert len(by_lane) == len(reading.electrical_lanes)
    for row in reading.electrical_lanes:
        served = by_lane[row.port, row.lane]
        assert tuple(served) == row.histogram
        assert sum(served[1:16]) == lane_counters[corrected.name, (row.port, row.lane)] > 0
        assert served[16] == lane_counters[uncorrectable.name, (row.port, row.lane)]
        assert sum(served) == physics.CODEWORDS_PER_SECOND * round(reading.at)


def test_system_group_ifname_and_the_threshold_scalar(shared: AgentUnderTest) -> None:
    shared.step_and_read(1.0)
    system = {name: (*mibs.oid("SNMPv2-MIB", name), 0)
              for name in ("sysDescr", "sysObjectID", "sysUpTime", "sysName")}
    threshold = (*mibs.oid("MSO-CPC-MIB", "msoCpcFecDegradeThreshold"), 0)
    if_name = mibs.table("IF-MIB", "ifXTable").instance("ifName", (5,))
    error, var_binds = run(Client(shared).get(*system.values(), threshold, if_name))
    assert error is None
    values = dict(var_binds)
    assert "CPO/CPC" in str(values[system["sysDescr"]])
    assert tuple(values[system["sysObjectID"]]) == mibs.oid("MSO-SMI", "megaScaleOut")
    assert int(values[system["sysUpTime"]]) == round(shared.clock.now() * 100)
    assert str(values[system["sysName"]]) == "sw-t"
    assert int(values[threshold]) == -4000
    assert str(values[if_name]) == "Ethernet5"


def test_absent_instances_and_objects_are_reported_as_such(shared: AgentUnderTest) -> None:
    snr = mibs.table("MSO-CPC-MIB", "msoCpcLaneTable").instance("msoCpcLaneSnr", (99, 1))
    unknown = (*mibs.oid("MSO-SMI", "msoModules"), 42, 0)
    error, var_binds = run(Client(shared).get(snr, unknown))
    assert error is None
    assert isinstance(var_binds[0][1], rfc1905.NoSuchInstance)
    assert isinstance(var_binds[1][1], rfc1905.NoSuchObject)


def test_getbulk_stops_after_a_row_of_end_of_mib_view(shared: AgentUnderTest) -> None:
    """RFC 3416 4.2.3: a response may hold fewer repetitions than asked; after a
    repetition in which every variable is endOfMibView, more would add nothing."""
    last = (*mibs.oid("SNMP-USER-BASED-SM-MIB", "usmStatsDecryptionErrors"), 0)
    before_last = (*mibs.oid("SNMP-USER-BASED-SM-MIB", "usmStatsWrongDigests"), 0)
    assert shared.agent.view.oids[-2:] == [before_last, last]  # the end of what is served
    answers = run(Client(shared).bulk(40, before_last, last))
    # first row: the last object, then end; second row: both ended — and no third.
    assert [name for name, _ in answers[:1]] == [last]
    assert len(answers) == 4
    assert all(isinstance(value, rfc1905.EndOfMibView) for _, value in answers[1:])


def test_a_large_getbulk_is_cut_to_what_the_manager_accepts(shared: AgentUnderTest) -> None:
    histogram = mibs.table("MSO-CPC-MIB", "msoCpcHistogramTable")

    async def both() -> tuple[int, int]:
        roomy = await Client(shared).bulk(200, histogram.oid)
        small = await Client(shared, max_message_size=1500).bulk(200, histogram.oid)
        return len(roomy), len(small)

    roomy, small = run(both())
    assert roomy == 200  # the stock responder would stop at 64
    assert 10 < small < 60  # fewer repetitions, not tooBig and not a silent drop


def test_a_getbulk_answers_the_same_over_v2c_and_over_v3_where_the_agent_writes_its_ber(
        shared: AgentUnderTest, monkeypatch: pytest.MonkeyPatch) -> None:
    """An authPriv GETBULK's bindings are the agent's own BER spliced into the scopedPDU
    (emulators/cpo/wire.py); a v2c one's are pysnmp's values, encoded by pyasn1. Both
    answer with the same names and values, of every type the agent serves (from the
    system group on: a thousand instances of IF-MIB and both telemetry MIBs), decoded
    here by pysnmp's own decoder."""
    spliced: list[int] = []
    original = wire.splice

    def counting(scoped_pdu: bytes, bindings: bytes) -> bytes | None:
        result = original(scoped_pdu, bindings)
        spliced.append(result is not None)
        return result

    monkeypatch.setattr(wire, "splice", counting)
    start = mibs.oid("SNMPv2-MIB", "sysDescr")[:-1]  # the system group
    community = CommunityData("public-test", mpModel=1)

    async def both() -> tuple[list[tuple[Oid, Any]], list[tuple[Oid, Any]]]:
        return (await Client(shared).bulk(1000, start),
                await Client(shared, community).bulk(1000, start))

    over_v3, over_v2c = run(both())
    assert spliced == [True]  # the v3 response, and only it
    assert len(over_v3) > 100
    # sysUpTime, snmpEngineTime and snmpInPkts (one request more) are the agent's at
    # each request
    moving = {(*mibs.oid("SNMPv2-MIB", "sysUpTime"), 0),
              (*mibs.oid("SNMP-FRAMEWORK-MIB", "snmpEngineTime"), 0),
              (*mibs.oid("SNMPv2-MIB", "snmpInPkts"), 0)}
    assert [name for name, _ in over_v3] == [name for name, _ in over_v2c]
    assert [(name, value.tagSet, value.prettyPrint()) for name, value in over_v3
            if name not in moving] == [(name, value.tagSet, value.prettyPrint())
                                       for name, value in over_v2c if name not in moving]
    kinds = {type(value).__name__ for _, value in over_v3}
    assert {"Integer", "Gauge32", "Counter64", "OctetString", "TimeTicks",
            "ObjectIdentifier"} <= kinds, kinds


def test_v2c_is_served_only_where_a_community_is_configured(shared: AgentUnderTest,
                                                             tiny: AgentUnderTest) -> None:
    up_time = (*mibs.oid("SNMPv2-MIB", "sysUpTime"), 0)
    community = CommunityData("public-test", mpModel=1)
    assert run(get_one(shared, up_time, auth=community)) is not None
    wrong = run(Client(shared, CommunityData("guess", mpModel=1), timeout=0.5).get(up_time))
    assert timed_out(wrong[0])
    received, dropped = tiny.agent.requests_received, tiny.agent.requests_dropped
    error, _ = run(Client(tiny, CommunityData("public-test", mpModel=1), timeout=0.5).get(up_time))
    assert timed_out(error)
    # the one try reached the agent and went unanswered by the agent's own rule (no drop
    # fault): counted, not timed
    assert tiny.agent.requests_received - received == 1
    assert tiny.agent.requests_dropped == dropped


@pytest.mark.parametrize(("keys", "reason"), [
    ({"auth_key": "not-the-passphrase"}, errind.WrongDigest),
    ({"priv_key": "not-the-passphrase"}, errind.DecryptionError),
])
def test_wrong_credentials_fail_fast_with_a_usm_error(tiny: AgentUnderTest,
                                                      keys: dict[str, str],
                                                      reason: type[errind.ErrorIndication]
                                                      ) -> None:
    """A report, not a timeout: the error is the report's, and each of the request's four
    tries was sent on the report to the one before (a try that waited out the 60 s
    timeout would trip pytest's per-test timeout): no clock, which a loaded machine
    stretches."""
    up_time = (*mibs.oid("SNMPv2-MIB", "sysUpTime"), 0)
    received = tiny.agent.requests_received
    error, _ = run(Client(tiny, v3(**keys), timeout=60.0, retries=3).get(up_time))
    assert isinstance(error, reason), error
    assert tiny.agent.requests_received - received == 1 + 4  # USM discovery, four tries


def test_unknown_user_is_refused_too(tiny: AgentUnderTest) -> None:
    stranger = UsmUserData("stranger", authKey="whatever-123", privKey="whatever-123",
                           authProtocol=usmHMAC192SHA256AuthProtocol,
                           privProtocol=usmAesCfb128Protocol)
    error, _ = run(Client(tiny, stranger, timeout=5.0).get((*mibs.oid("SNMPv2-MIB",
                                                                      "sysUpTime"), 0)))
    assert isinstance(error, errind.UnknownUserName), error


# --- the agent's own mapping, read by name with net-snmp ------------------------------


_LINE = re.compile(r"^(?P<module>[\w-]+)::(?P<name>\w+)\.(?P<index>[\d.]+) = "
                   r"(?P<type>[\w-]+): ?(?P<value>.*)$")


def _net_snmp_walk(harness: AgentUnderTest, name: str) -> dict[str, dict[tuple[int, ...], str]]:
    """net-snmp's walk of ``name`` (MODULE::object): column name -> index -> value text."""
    completed = net_snmp("snmpbulkwalk", *v3_arguments(), "-Cr60",
                         f"127.0.0.1:{harness.agent.port}", name)
    assert completed.returncode == 0 and our_stderr(completed) == [], completed.stderr
    found: dict[str, dict[tuple[int, ...], str]] = {}
    for line in completed.stdout.splitlines():
        match = _LINE.match(line)
        assert match is not None, line
        index = tuple(int(arc) for arc in match["index"].split("."))
        found.setdefault(match["name"], {})[index] = match["value"].strip()
    return found


def _raw(scale: int | str, value: Any, boot_time: float) -> Any:
    """What the agent must serve for a model value, by the MIB text's own rules."""
    if scale == "timestamp":  # TimeStamp: sysUpTime at the event, 0 if none
        return 0 if value is None else round((value - boot_time) * 100)
    if scale == "log10":
        return BER_FLOOR if value <= 0 else max(BER_FLOOR, round(1000 * math.log10(value)))
    if scale == "bits":
        return frozenset(value)
    if isinstance(scale, int):
        if value == float("-inf"):
            return POWER_FLOOR
        return round(value * 10**scale)
    return value


def _printed(scale: int | str, text: str) -> Any:
    """The value in net-snmp's text, back to the raw integer where it is a number."""
    if scale == "timestamp":  # "(1250) 0:00:12.50"
        match = re.match(r"\((\d+)\)", text)
        assert match is not None, text
        return int(match[1])
    if scale == "enum":  # "on(3)"
        return text.split("(")[0]
    if scale == "bits":  # "C0 overTemperature(0) coolerFault(1)"
        return frozenset(re.findall(r"(\w+)\(\d+\)", text))
    if scale == "text":
        return text.strip('"')
    number = text.split()[0]  # "-1.23 dBm": the DISPLAY-HINT's decimal point, then UNITS
    if scale == "log10":
        return round(float(number) * 1000)
    if isinstance(scale, int):
        return round(float(number) * 10**scale)
    return int(number)


@pytest.mark.parametrize("table", sorted(COLUMNS))
def test_net_snmp_reads_every_column_by_name_and_each_value_is_the_models(
        shared: AgentUnderTest, table: str) -> None:
    """Each column as net-snmp names and formats it from the MIB text (its DISPLAY-HINT
    and UNITS, RFC 2579 section 3.1), compared with the model's value scaled as the
    column's DESCRIPTION says: a column that carries another's value, or is scaled
    wrong, fails here even if a collector that shares its mapping would agree."""
    reading = shared.step_and_read(4.0)
    rows_attribute, index_of, expected_columns = COLUMNS[table]
    rows = {index_of(row): row for row in getattr(reading, rows_attribute)}
    walked = _net_snmp_walk(shared, f"{_module(table)}::{table}")
    assert set(walked) == set(expected_columns)
    for column, (attribute, scale) in expected_columns.items():
        assert set(walked[column]) == set(rows), column
        for index, text in walked[column].items():
            model = getattr(rows[index], attribute)
            assert _printed(scale, text) == _raw(scale, model, shared.agent._boot_time), (
                column, index, text, model)


def test_net_snmp_reads_the_histogram_and_the_threshold_by_name(shared: AgentUnderTest) -> None:
    """msoCpcHistogramCodewords: bin n of a lane is its codewords with n symbol errors
    (16: 16 or more); msoCpcFecDegradeThreshold is an MsoLog10Ber (MSO-CPC-MIB)."""
    reading = shared.step_and_read(2.0)
    walked = _net_snmp_walk(shared, "MSO-CPC-MIB::msoCpcHistogramTable")
    assert set(walked) == {"msoCpcHistogramCodewords"}
    served = {index: int(text.split()[0]) for index, text in
              walked["msoCpcHistogramCodewords"].items()}
    assert served == {(lane.port, lane.lane, number): count
                      for lane in reading.electrical_lanes
                      for number, count in enumerate(lane.histogram)}
    assert len(served) == len(reading.electrical_lanes) * 17
    completed = net_snmp("snmpget", *v3_arguments(), f"127.0.0.1:{shared.agent.port}",
                         "MSO-CPC-MIB::msoCpcFecDegradeThreshold.0")
    assert completed.returncode == 0, completed.stderr
    expected = round(1000 * math.log10(reading.fec_degrade_threshold_ber))
    assert completed.stdout.strip() == (
        f"MSO-CPC-MIB::msoCpcFecDegradeThreshold.0 = INTEGER: {expected / 1000:.3f} log10")


def test_the_agents_own_table_serves_every_column_with_the_mibs_scale() -> None:
    """The emulator's table (emulators/cpo/columns.py) restates each column's scale from
    its DESCRIPTION; it must agree with the textual convention's DISPLAY-HINT "d-N"
    (RFC 2579 section 3.1), and name every readable column of the MSO tables."""
    for table in served_columns.TABLES:
        layout = mibs.table(table.module, table.table)
        assert {column.name for column in table.columns} == {
            column.name for column in layout.columns}, table.table
        for column in table.columns:
            node = layout.column(column.name)
            if column.encoding.kind == "fixed":
                assert column.encoding.decimals == node.decimals, column.name
            elif column.encoding.kind == "log10_ber":
                assert node.syntax == "MsoLog10Ber", column.name
            else:
                assert node.decimals == 0, column.name


def test_the_emulator_does_not_use_the_collectors_mapping() -> None:
    """An agent that shares the tested code's column mapping proves nothing about it."""
    probe = ("import json, sys, emulators.cpo.agent, emulators.lab.lab; print(json.dumps("
             "sorted(name for name in sys.modules if name.startswith('drivers.snmp'))))")
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                               timeout=120, check=True)
    modules = json.loads(completed.stdout)
    assert "drivers.snmp.collector" not in modules
    assert "drivers.snmp.mibs" in modules  # the MIBs themselves: the spec table


# --- restarts, discontinuities, faults ----------------------------------------------


def _lane_counter(name: str, port: int = 1, lane: int = 1) -> Oid:
    return mibs.table("MSO-CPC-MIB", "msoCpcLaneTable").instance(name, (port, lane))


def test_a_restart_resets_counters_and_sysuptime_and_the_client_carries_on(
        tiny: AgentUnderTest) -> None:
    up_time = (*mibs.oid("SNMPv2-MIB", "sysUpTime"), 0)
    corrected = _lane_counter("msoCpcLaneFecCorrected")
    discontinuity = _lane_counter("msoCpcLaneDiscontinuityTime")
    histogram_zero = mibs.table("MSO-CPC-MIB", "msoCpcHistogramTable").instance(
        "msoCpcHistogramCodewords", (1, 1, 0))

    async def scenario() -> tuple[list[int], list[int]]:
        client = Client(tiny, timeout=1.0)  # no retries: the same client, across the restart
        tiny.step_and_read(30.0)
        error, before = await client.get(up_time, corrected, discontinuity, histogram_zero)
        assert error is None
        tiny.telemetry.faults.inject(Fault("reboot"))
        tiny.step_and_read(2.0)
        error, after = await client.get(up_time, corrected, discontinuity, histogram_zero)
        assert error is None, error
        return [int(value) for _, value in before], [int(value) for _, value in after]

    boots = tiny.agent.engine_boots
    assert boots is not None
    before, after = run(scenario())
    assert before[0] == 3000 and after[0] == 200  # sysUpTime went backwards
    assert after[1] < before[1]
    assert after[2] == 0 and before[2] == 0
    assert after[3] == physics.CODEWORDS_PER_SECOND * 2 - after[1]  # none uncorrectable
    assert tiny.agent.engine_boots == boots + 1


def test_a_lane_reset_sets_its_discontinuity_time(tiny: AgentUnderTest) -> None:
    tiny.step_and_read(12.5)
    tiny.telemetry.faults.inject(Fault("lane_reset", target="2/1"))
    tiny.step_and_read(1.0)
    values = run(Client(tiny).get(_lane_counter("msoCpcLaneDiscontinuityTime", 2, 1),
                                  _lane_counter("msoCpcLaneDiscontinuityTime", 2, 2)))[1]
    assert [int(value) for _, value in values] == [1250, 0]


def test_a_rebooting_agent_answers_nothing_until_it_is_back(tiny: AgentUnderTest) -> None:
    up_time = (*mibs.oid("SNMPv2-MIB", "sysUpTime"), 0)
    tiny.step_and_read(1.0)
    tiny.telemetry.faults.inject(Fault("reboot", seconds=30.0))
    error, _ = run(Client(tiny, timeout=0.3).get(up_time))
    assert timed_out(error)
    tiny.step_and_read(31.0)
    counted = [_lane_counter("msoCpcLaneFecCorrected"), _lane_counter("msoCpcLaneFecUncorrectable"),
               mibs.table("MSO-CPC-MIB", "msoCpcHistogramTable").instance(
                   "msoCpcHistogramCodewords", (1, 1, 0))]
    error, values = run(Client(tiny).get(up_time, *counted))
    assert error is None and int(values[0][1]) == 100
    # counting from when the agent came back, not from when it went down
    assert sum(int(value) for _, value in values[1:]) == physics.CODEWORDS_PER_SECOND
    with pytest.raises(FaultError):
        tiny.telemetry.faults.inject(Fault("reboot", target="1"))


def test_drop_faults_lose_all_some_or_a_counted_number_of_requests(
        tiny: AgentUnderTest) -> None:
    up_time = (*mibs.oid("SNMPv2-MIB", "sysUpTime"), 0)
    faults = tiny.telemetry.faults
    faults.inject(Fault("drop"))
    error, _ = run(Client(tiny, timeout=0.3).get(up_time))
    assert timed_out(error)
    faults.clear("drop")
    faults.inject(Fault("drop", count=1))  # the first try is lost, the retry answered
    assert run(get_one(tiny, up_time, timeout=0.3, retries=1)) is not None
    assert not faults.is_active("drop")
    faults.inject(Fault("drop", target="0.3"))
    dropped = sum(tiny.agent.should_drop() for _ in range(2000))
    assert dropped == pytest.approx(600, abs=5 * math.sqrt(2000 * 0.3 * 0.7))
    faults.clear("drop")
    with pytest.raises(FaultError):
        faults.inject(Fault("drop", target="lots"))


def test_a_slow_agent_answers_late_and_a_frozen_one_not_at_all(tiny: AgentUnderTest) -> None:
    up_time = (*mibs.oid("SNMPv2-MIB", "sysUpTime"), 0)
    run(get_one(tiny, up_time))  # discovery out of the way
    faults = tiny.telemetry.faults
    faults.inject(Fault("latency", seconds=0.3))
    started = time.monotonic()
    assert run(get_one(tiny, up_time, timeout=2.0)) is not None
    assert time.monotonic() - started >= 0.3
    faults.clear("latency")
    faults.inject(Fault("freeze"))
    error, _ = run(Client(tiny, timeout=0.3).get(up_time))
    assert timed_out(error)
    faults.clear("freeze")
    assert run(get_one(tiny, up_time)) is not None


@pytest.mark.parametrize("kind", ["garbage", "truncate", "reset"])
def test_spoiled_responses_are_ignored_by_the_client_which_retries(tiny: AgentUnderTest,
                                                                  kind: str) -> None:
    up_time = (*mibs.oid("SNMPv2-MIB", "sysUpTime"), 0)

    async def scenario() -> tuple[Any, Any]:
        client = Client(tiny, timeout=0.3, retries=0)
        await client.get(up_time)  # discovery out of the way
        tiny.telemetry.faults.inject(Fault(kind))
        spoiled, _ = await client.get(up_time)
        tiny.telemetry.faults.clear(kind)
        tiny.telemetry.faults.inject(Fault(kind, count=1))
        client.retries = 1
        retried, _ = await client.get(up_time)
        return spoiled, retried

    spoiled, retried = run(scenario())
    assert timed_out(spoiled) and retried is None
    assert not tiny.telemetry.faults.is_active(kind)


def test_an_els_fault_shows_in_the_laser_and_port_lane_tables(tiny: AgentUnderTest) -> None:
    els = mibs.table("MSO-CPO-MIB", "msoCpoElsTable")
    lanes = mibs.table("MSO-CPO-MIB", "msoCpoLaneTable")
    state = els.instance("msoCpoElsState", (1, 2))
    tiny.step_and_read(0.5)
    assert els.column("msoCpoElsState").enum_name(int(run(get_one(tiny, state)))) == "on"
    tiny.telemetry.faults.inject(Fault("els", target="1/2"))  # seen at once, no refresh wait
    oids = [state, els.instance("msoCpoElsFaults", (1, 2)),
            els.instance("msoCpoElsOutputPower", (1, 2)),
            lanes.instance("msoCpoLaneTxPower", (2, 1)),  # fed by laser 1/2
            lanes.instance("msoCpoLaneTxPower", (1, 1))]  # fed by laser 1/1
    values = [value for _, value in run(Client(tiny).get(*oids))[1]]
    assert els.column("msoCpoElsState").enum_name(int(values[0])) == "off"
    assert els.column("msoCpoElsFaults").decode_bits(values[1].asOctets()) == {
        "coolerFault", "overTemperature"}
    assert int(values[2]) == -10000 and int(values[3]) == -10000
    assert int(values[4]) > 0


def test_rising_ber_shows_in_the_served_pre_fec_ber(tiny: AgentUnderTest) -> None:
    ber = _lane_counter("msoCpcLanePreFecBer", 2, 2)
    first = int(run(get_one(tiny, ber)))
    tiny.telemetry.faults.inject(Fault("rising_ber", target="2", seconds=10))
    tiny.step_and_read(20.0)
    assert int(run(get_one(tiny, ber))) > first + 2000  # two decades worse at least


# --- interop: Debian's net-snmp -------------------------------------------------------


def test_net_snmp_bulkwalk_reads_every_object_of_both_mibs_by_name(
        shared: AgentUnderTest) -> None:
    shared.step_and_read(1.0)
    readable = [node for module in ("MSO-CPO-MIB", "MSO-CPC-MIB")
                for node in mibs.load().objects(module)
                if node.kind in ("column", "scalar") and node.max_access == "read-only"]
    assert len(readable) == 30
    root = mibs.mib_object("MSO-SMI", "msoMibs").qualified_name
    completed = net_snmp("snmpbulkwalk", *v3_arguments(), "-Cr50",
                          f"127.0.0.1:{shared.agent.port}", root)
    assert completed.returncode == 0, completed.stderr
    assert our_stderr(completed) == []
    names = set(re.findall(r"^(MSO-C[PO][OC]-MIB::\w+)\.", completed.stdout, re.MULTILINE))
    assert names == {node.qualified_name for node in readable}
    assert "No Such" not in completed.stdout and "No more variables" not in completed.stdout
    assert "MSO-CPO-MIB::msoCpoElsState.1.1 = INTEGER: on(3)" in completed.stdout
    assert re.search(r"MSO-CPO-MIB::msoCpoLaneTxPower\.1\.1 = INTEGER: -?\d*\.\d\d dBm",
                     completed.stdout)
    ours_served = [oid for oid in shared.agent.view.oids
                   if oid[:len(mibs.oid("MSO-SMI", "msoMibs"))] == mibs.oid("MSO-SMI", "msoMibs")]
    assert completed.stdout.count("\n") == len(ours_served)


def test_net_snmp_with_a_wrong_passphrase_fails_fast(tiny: AgentUnderTest) -> None:
    """A report, not a timeout: net-snmp names the authentication failure (a timeout says
    "Timeout: No Response"), and waiting out its 60 s timeout would outlast the run's own
    60 s limit: no clock here, which a loaded machine stretches."""
    received = tiny.agent.requests_received
    completed = net_snmp("snmpget", *v3_arguments(auth_key="not-the-passphrase"),
                          "-t", "60", "-r", "2", f"127.0.0.1:{tiny.agent.port}",
                          "SNMPv2-MIB::sysUpTime.0")
    assert completed.returncode != 0
    assert "authentication failure" in completed.stderr.lower()
    # its engine discovery and the request, no resend (-r 2 resends only on a timeout)
    assert tiny.agent.requests_received - received == 2


def test_net_snmp_v2c_against_the_v3_only_agent_times_out(tiny: AgentUnderTest) -> None:
    completed = net_snmp("snmpget", "-v2c", "-c", "public", "-t", "0.5", "-r", "0",
                          f"127.0.0.1:{tiny.agent.port}",
                          mibs.mib_object("SNMPv2-MIB", "sysUpTime").dotted + ".0", timeout=10)
    assert completed.returncode != 0 and "timeout" in completed.stderr.lower()
