"""The CPO/CPC SNMP agent (emulators/cpo/agent.py), read by pysnmp 7 and by net-snmp.

The agent runs on its own event loop in a background thread, on a SteppedClock, so
the telemetry it serves only changes when a test moves the clock; the pysnmp
client runs on the test's own loop (``asyncio.run``), one SnmpEngine per loop.
Every OID a test asks for comes from drivers/snmp/mibs.py.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import subprocess
import time
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest
from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    ContextData,
    ObjectIdentity,
    ObjectType,
    SnmpEngine,
    UdpTransportTarget,
    UsmUserData,
    bulk_cmd,
    get_cmd,
    usmAesCfb128Protocol,
    usmHMAC192SHA256AuthProtocol,
)
from pysnmp.proto import errind, rfc1905
from pysnmp.proto.rfc1902 import Null
from pysnmp.smi.builder import MibBuilder
from pysnmp.smi.view import MibViewController

from drivers.snmp import mibs
from drivers.snmp.mibs import MibObject, Oid
from emulators.cpo import physics
from emulators.faults import Fault, FaultError
from tests.peers import require_executable
from tests.snmp_agents import CREDENTIALS, SPEC, TINY, AgentUnderTest

T = TypeVar("T")

MIBS_DIR = mibs.source_directory()

# Which reading attribute each column carries: written out here, not taken from the
# emulator's own table, so that a column wired to the wrong value shows up.
COLUMNS = {
    "msoCpoEngineTable": ("engines", lambda row: (row.index,), {
        "msoCpoEngineName": "name", "msoCpoEngineLaneCount": "lane_count",
        "msoCpoEngineTemperature": "temperature_celsius",
        "msoCpoEngineTempHighThreshold": "temperature_high_celsius",
        "msoCpoEngineSupplyVoltage": "supply_voltage_volts", "msoCpoEngineStatus": "status"}),
    "msoCpoLaneTable": ("optical_lanes", lambda row: (row.port, row.lane), {
        "msoCpoLaneEngineIndex": "engine", "msoCpoLaneEngineLane": "engine_lane",
        "msoCpoLaneTxPower": "tx_power_dbm", "msoCpoLaneRxPower": "rx_power_dbm",
        "msoCpoLaneTxBias": "tx_bias_ma", "msoCpoLaneElsModule": "els_module",
        "msoCpoLaneElsLane": "els_lane"}),
    "msoCpoElsTable": ("lasers", lambda row: (row.module, row.lane), {
        "msoCpoElsOutputPower": "output_power_dbm", "msoCpoElsBiasCurrent": "bias_current_ma",
        "msoCpoElsVoltage": "voltage_volts", "msoCpoElsTemperature": "temperature_celsius",
        "msoCpoElsState": "state", "msoCpoElsControlMode": "control_mode",
        "msoCpoElsFaults": "faults"}),
    "msoCpcLaneTable": ("electrical_lanes", lambda row: (row.port, row.lane), {
        "msoCpcLaneSnr": "snr_db", "msoCpcLanePreFecBer": "pre_fec_ber",
        "msoCpcLaneFecCorrected": "fec_corrected",
        "msoCpcLaneFecUncorrectable": "fec_uncorrectable",
        "msoCpcLaneInsertionLoss": "insertion_loss_db", "msoCpcLaneEyeHeight": "eye_height_mv",
        "msoCpcLaneEyeWidth": "eye_width_ui",
        "msoCpcLaneDiscontinuityTime": "discontinuity_at"}),
}


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


# --- a small pysnmp client -------------------------------------------------------------


def v3(*, auth_key: str = CREDENTIALS.auth_key,
       priv_key: str = CREDENTIALS.priv_key) -> UsmUserData:
    return UsmUserData(CREDENTIALS.user, authKey=auth_key, privKey=priv_key,
                       authProtocol=usmHMAC192SHA256AuthProtocol,
                       privProtocol=usmAesCfb128Protocol)


class Client:
    """pysnmp 7 calls against one agent, with one SnmpEngine (use inside one event loop)."""

    def __init__(self, harness: AgentUnderTest, auth: UsmUserData | CommunityData | None = None,
                 *, timeout: float = 2.0, retries: int = 0, max_message_size: int = 65507):
        self.port = harness.agent.port
        self.auth = auth or v3()
        self.timeout = timeout
        self.retries = retries
        self.engine = SnmpEngine(maxMessageSize=max_message_size)
        # pysnmp resolves every OID it sends through a MIB view, and sets up pysmi's
        # compiler in each new one (about 0.3 s): share one view between the clients.
        self.engine.cache["mibViewController"] = _shared_view()

    async def target(self) -> UdpTransportTarget:
        return await UdpTransportTarget.create(("127.0.0.1", self.port), timeout=self.timeout,
                                               retries=self.retries)

    async def get(self, *oids: Oid) -> tuple[Any, list[tuple[Oid, Any]]]:
        error, status, _, var_binds = await get_cmd(
            self.engine, self.auth, await self.target(), ContextData(),
            *(ObjectType(ObjectIdentity(oid)) for oid in oids), lookupMib=False)
        assert not status, status
        return error, [(tuple(name), value) for name, value in var_binds]

    async def bulk(self, repetitions: int, *oids: Oid,
                   non_repeaters: int = 0) -> list[tuple[Oid, Any]]:
        error, status, _, var_binds = await bulk_cmd(
            self.engine, self.auth, await self.target(), ContextData(), non_repeaters,
            repetitions, *(ObjectType(ObjectIdentity(oid), Null()) for oid in oids),
            lookupMib=False)
        assert error is None and not status, (error, status)
        return [(tuple(name), value) for name, value in var_binds]

    async def walk(self, root: Oid, repetitions: int = 50) -> list[tuple[Oid, Any]]:
        """GETBULK from ``root`` until past its subtree; any error fails the test."""
        found: list[tuple[Oid, Any]] = []
        cursor = root
        while True:
            answers = await self.bulk(repetitions, cursor)
            for name, value in answers:
                if name[:len(root)] != root or value is rfc1905.endOfMibView \
                        or isinstance(value, rfc1905.EndOfMibView):
                    return found
                found.append((name, value))
            cursor = answers[-1][0]


def _timed_out(error: Any) -> bool:
    return isinstance(error, errind.RequestTimedOut)


_VIEW: list[MibViewController] = []


def _shared_view() -> MibViewController:
    if not _VIEW:
        _VIEW.append(MibViewController(MibBuilder()))
    return _VIEW[0]


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


async def _get_one(harness: AgentUnderTest, oid: Oid, **kwargs: Any) -> Any:
    error, var_binds = await Client(harness, **kwargs).get(oid)
    assert error is None, error
    return var_binds[0][1]


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
        expected = _expected(column, getattr(rows[index], columns[column.name]), shared)
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
    last = (*mibs.oid("MSO-CPC-MIB", "msoCpcFecDegradeThreshold"), 0)
    histogram = mibs.table("MSO-CPC-MIB", "msoCpcHistogramTable")
    final_bin = histogram.instance("msoCpcHistogramCodewords", (6, 4, 16))
    answers = run(Client(shared).bulk(40, final_bin, last))
    # first row: the threshold, then end; second row: both ended — and no third.
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


def test_v2c_is_served_only_where_a_community_is_configured(shared: AgentUnderTest,
                                                             tiny: AgentUnderTest) -> None:
    up_time = (*mibs.oid("SNMPv2-MIB", "sysUpTime"), 0)
    community = CommunityData("public-test", mpModel=1)
    assert run(_get_one(shared, up_time, auth=community)) is not None
    wrong = run(Client(shared, CommunityData("guess", mpModel=1), timeout=0.5).get(up_time))
    assert _timed_out(wrong[0])
    started = time.monotonic()
    error, _ = run(Client(tiny, CommunityData("public-test", mpModel=1), timeout=0.5).get(up_time))
    assert _timed_out(error)
    assert time.monotonic() - started < 2.0


@pytest.mark.parametrize(("keys", "reason"), [
    ({"auth_key": "not-the-passphrase"}, errind.WrongDigest),
    ({"priv_key": "not-the-passphrase"}, errind.DecryptionError),
])
def test_wrong_credentials_fail_fast_with_a_usm_error(tiny: AgentUnderTest,
                                                      keys: dict[str, str],
                                                      reason: type[errind.ErrorIndication]
                                                      ) -> None:
    up_time = (*mibs.oid("SNMPv2-MIB", "sysUpTime"), 0)
    started = time.monotonic()
    error, _ = run(Client(tiny, v3(**keys), timeout=5.0, retries=3).get(up_time))
    assert isinstance(error, reason), error
    assert time.monotonic() - started < 2.5  # a report, not the 5 s timeout


def test_unknown_user_is_refused_too(tiny: AgentUnderTest) -> None:
    stranger = UsmUserData("stranger", authKey="whatever-123", privKey="whatever-123",
                           authProtocol=usmHMAC192SHA256AuthProtocol,
                           privProtocol=usmAesCfb128Protocol)
    error, _ = run(Client(tiny, stranger, timeout=5.0).get((*mibs.oid("SNMPv2-MIB",
                                                                      "sysUpTime"), 0)))
    assert isinstance(error, errind.UnknownUserName), error


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
    assert _timed_out(error)
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
    assert _timed_out(error)
    faults.clear("drop")
    faults.inject(Fault("drop", count=1))  # the first try is lost, the retry answered
    assert run(_get_one(tiny, up_time, timeout=0.3, retries=1)) is not None
    assert not faults.is_active("drop")
    faults.inject(Fault("drop", target="0.3"))
    dropped = sum(tiny.agent.should_drop() for _ in range(2000))
    assert dropped == pytest.approx(600, abs=5 * math.sqrt(2000 * 0.3 * 0.7))
    faults.clear("drop")
    with pytest.raises(FaultError):
        faults.inject(Fault("drop", target="lots"))


def test_a_slow_agent_answers_late_and_a_frozen_one_not_at_all(tiny: AgentUnderTest) -> None:
    up_time = (*mibs.oid("SNMPv2-MIB", "sysUpTime"), 0)
    run(_get_one(tiny, up_time))  # discovery out of the way
    faults = tiny.telemetry.faults
    faults.inject(Fault("latency", seconds=0.3))
    started = time.monotonic()
    assert run(_get_one(tiny, up_time, timeout=2.0)) is not None
    assert time.monotonic() - started >= 0.3
    faults.clear("latency")
    faults.inject(Fault("freeze"))
    error, _ = run(Client(tiny, timeout=0.3).get(up_time))
    assert _timed_out(error)
    faults.clear("freeze")
    assert run(_get_one(tiny, up_time)) is not None


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
    assert _timed_out(spoiled) and retried is None
    assert not tiny.telemetry.faults.is_active(kind)


def test_an_els_fault_shows_in_the_laser_and_port_lane_tables(tiny: AgentUnderTest) -> None:
    els = mibs.table("MSO-CPO-MIB", "msoCpoElsTable")
    lanes = mibs.table("MSO-CPO-MIB", "msoCpoLaneTable")
    state = els.instance("msoCpoElsState", (1, 2))
    tiny.step_and_read(0.5)
    assert els.column("msoCpoElsState").enum_name(int(run(_get_one(tiny, state)))) == "on"
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
    first = int(run(_get_one(tiny, ber)))
    tiny.telemetry.faults.inject(Fault("rising_ber", target="2", seconds=10))
    tiny.step_and_read(20.0)
    assert int(run(_get_one(tiny, ber))) > first + 2000  # two decades worse at least


# --- interop: Debian's net-snmp -------------------------------------------------------


def _net_snmp(program: str, *arguments: str, timeout: float = 60) -> subprocess.CompletedProcess[
        str]:
    executable = require_executable(program, debian_package="snmp")
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("MIBS", "MIBDIRS", "SNMPCONFPATH")}
    return subprocess.run([str(executable), *arguments], capture_output=True, text=True,
                          timeout=timeout, env=environment, check=False)


def _v3_arguments(*, auth_key: str = CREDENTIALS.auth_key) -> list[str]:
    return ["-v3", "-l", "authPriv", "-u", CREDENTIALS.user, "-a", "SHA-256", "-A", auth_key,
            "-x", "AES", "-X", CREDENTIALS.priv_key, "-M", f"+{MIBS_DIR}", "-m", "ALL"]


def test_net_snmp_bulkwalk_reads_every_object_of_both_mibs_by_name(
        shared: AgentUnderTest) -> None:
    shared.step_and_read(1.0)
    readable = [node for module in ("MSO-CPO-MIB", "MSO-CPC-MIB")
                for node in mibs.load().objects(module)
                if node.kind in ("column", "scalar") and node.max_access == "read-only"]
    assert len(readable) == 30
    root = mibs.mib_object("MSO-SMI", "msoMibs").qualified_name
    completed = _net_snmp("snmpbulkwalk", *_v3_arguments(), "-Cr50",
                          f"127.0.0.1:{shared.agent.port}", root)
    assert completed.returncode == 0, completed.stderr
    ours = [line for line in completed.stderr.splitlines()
            if "/usr/share/snmp/mibs/" not in line]
    assert ours == []
    names = set(re.findall(r"^(MSO-C[PO][OC]-MIB::\w+)\.", completed.stdout, re.MULTILINE))
    assert names == {node.qualified_name for node in readable}
    # The walk runs into the end of the agent's view (MSO-CPC-MIB comes last): one
    # endOfMibView row, and net-snmp says so once, on the last line.
    assert "No Such" not in completed.stdout
    assert completed.stdout.count("No more variables") == 1
    assert "No more variables" in completed.stdout.splitlines()[-1]
    assert "MSO-CPO-MIB::msoCpoElsState.1.1 = INTEGER: on(3)" in completed.stdout
    assert re.search(r"MSO-CPO-MIB::msoCpoLaneTxPower\.1\.1 = INTEGER: -?\d+\.\d\d dBm",
                     completed.stdout)
    lines = completed.stdout.count("\n") - 1
    assert lines == len(shared.agent.view) - 7 - len(SPEC.ports)  # all but system and ifName


def test_net_snmp_with_a_wrong_passphrase_fails_fast(tiny: AgentUnderTest) -> None:
    started = time.monotonic()
    completed = _net_snmp("snmpget", *_v3_arguments(auth_key="not-the-passphrase"),
                          "-t", "5", "-r", "2", f"127.0.0.1:{tiny.agent.port}",
                          "SNMPv2-MIB::sysUpTime.0")
    assert completed.returncode != 0
    assert "authentication failure" in completed.stderr.lower()
    assert time.monotonic() - started < 3.0  # a report, not the 5 s timeout


def test_net_snmp_v2c_against_the_v3_only_agent_times_out(tiny: AgentUnderTest) -> None:
    completed = _net_snmp("snmpget", "-v2c", "-c", "public", "-t", "0.5", "-r", "0",
                          f"127.0.0.1:{tiny.agent.port}",
                          mibs.mib_object("SNMPv2-MIB", "sysUpTime").dotted + ".0", timeout=10)
    assert completed.returncode != 0 and "timeout" in completed.stderr.lower()
