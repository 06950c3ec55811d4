"""The CPO/CPC collector (drivers/snmp) against the emulated agent (emulators/cpo).

The agent runs on its own event loop in a background thread, on a SteppedClock, so
what it serves changes only when a test moves the clock; the collector runs on the
test's loop (``drivers.snmp.session.run``: one loop per call, engines closed after).
Expected values come from the model's reading, not from the collector's own tables.
"""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
from collections.abc import Coroutine, Iterator, Sequence
from typing import Any, TypeVar

import pytest
from pysnmp.proto import rfc1902

from drivers.errors import DeviceRejected, DeviceTimeout, ProtocolError
from drivers.snmp import mibs
from drivers.snmp.collector import (
    ELECTRICAL_LANE_COLUMNS,
    ENGINE_COLUMNS,
    LASER_COLUMNS,
    OPTICAL_LANE_COLUMNS,
    TelemetryCollector,
    decode,
)
from drivers.snmp.rates import CODEWORDS_PER_SECOND, lane_intervals
from drivers.snmp.session import SnmpSession, SnmpTarget, VarBind, engine_count, run
from drivers.snmp.telemetry import CpcTelemetry
from emulators.cpo.agent import UsmCredentials
from emulators.faults import Fault
from tests.support.snmp_agents import CREDENTIALS, SPEC, TINY, AgentUnderTest

T = TypeVar("T")


@pytest.fixture(scope="module")
def shared() -> Iterator[AgentUnderTest]:
    """One agent for the tests that only read (they move its clock forward)."""
    agent = AgentUnderTest()
    yield agent
    agent.close()


@pytest.fixture
def tiny() -> Iterator[AgentUnderTest]:
    agent = AgentUnderTest(TINY)
    yield agent
    agent.close()


def collect(coroutine: Coroutine[Any, Any, T]) -> T:
    return run(coroutine)


def _close(value: float | None, expected: float, decimals: int) -> bool:
    return value is not None and abs(value - expected) <= 10.0 ** -decimals / 2 + 1e-9


# ---- values and types ----------------------------------------------------------------------


def test_a_collection_decodes_every_table_to_the_models_values(shared: AgentUnderTest) -> None:
    shared.step(3.0)
    cpo, cpc = collect(TelemetryCollector(shared.target()).collect())
    reading = shared.telemetry.read()
    assert cpo.info.uptime_seconds == pytest.approx(shared.clock.now())
    assert not cpo.info.restarted and cpo.info.device == "sw-t"

    assert [engine.index for engine in cpo.engines] == [1, 2]
    for engine, model in zip(cpo.engines, reading.engines, strict=True):
        assert (engine.name, engine.lane_count, engine.status) == (
            model.name, model.lane_count, model.status)
        assert isinstance(engine.temperature_celsius, float)
        assert _close(engine.temperature_celsius, model.temperature_celsius, 2)
        assert _close(engine.temperature_high_celsius, model.temperature_high_celsius, 2)
        assert _close(engine.supply_voltage_volts, model.supply_voltage_volts, 3)

    assert len(cpo.lanes) == len(reading.optical_lanes) == 32
    for lane, optical in zip(cpo.lanes, reading.optical_lanes, strict=True):
        assert (lane.port, lane.lane, lane.port_name) == (
            optical.port, optical.lane, f"Ethernet{optical.port}")
        assert (lane.engine, lane.engine_lane, lane.els_module, lane.els_lane) == (
            optical.engine, optical.engine_lane, optical.els_module, optical.els_lane)
        assert _close(lane.tx_power_dbm, optical.tx_power_dbm, 2)
        assert _close(lane.rx_power_dbm, optical.rx_power_dbm, 2)
        assert _close(lane.tx_bias_ma, optical.tx_bias_ma, 3)

    assert len(cpo.lasers) == len(reading.lasers) == 8
    for laser, model_laser in zip(cpo.lasers, reading.lasers, strict=True):
        assert (laser.module, laser.lane, laser.state, laser.control_mode) == (
            model_laser.module, model_laser.lane, model_laser.state, model_laser.control_mode)
        assert laser.faults == tuple(sorted(model_laser.faults))
        assert _close(laser.output_power_dbm, model_laser.output_power_dbm, 2)
        assert _close(laser.bias_current_ma, model_laser.bias_current_ma, 3)
        assert _close(laser.voltage_volts, model_laser.voltage_volts, 3)
        assert _close(laser.temperature_celsius, model_laser.temperature_celsius, 2)

    assert cpc.fec_degrade_threshold_ber == pytest.approx(1e-4)
    assert len(cpc.lanes) == len(reading.electrical_lanes) == 16
    for lane, copper in zip(cpc.lanes, reading.electrical_lanes, strict=True):
        assert (lane.port, lane.lane, lane.port_name) == (
            copper.port, copper.lane, f"Ethernet{copper.port}")
        assert _close(lane.snr_db, copper.snr_db, 2)
        assert lane.pre_fec_ber is not None
        assert math.log10(lane.pre_fec_ber) == pytest.approx(
            max(-18.0, math.log10(copper.pre_fec_ber)), abs=0.0005 + 1e-9)
        assert lane.fec_corrected_total == copper.fec_corrected > 0
        assert lane.fec_uncorrectable_total == copper.fec_uncorrectable
        assert isinstance(lane.fec_corrected_total, int)
        assert lane.fec_histogram_total == copper.histogram
        assert _close(lane.insertion_loss_db, copper.insertion_loss_db, 2)
        assert _close(lane.eye_height_mv, copper.eye_height_mv, 3)
        assert _close(lane.eye_width_ui, copper.eye_width_ui, 3)
        assert lane.discontinuity_uptime_seconds == 0.0


@pytest.mark.parametrize(("columns", "module", "table"), [
    (ENGINE_COLUMNS, "MSO-CPO-MIB", "msoCpoEngineTable"),
    (OPTICAL_LANE_COLUMNS, "MSO-CPO-MIB", "msoCpoLaneTable"),
    (LASER_COLUMNS, "MSO-CPO-MIB", "msoCpoElsTable"),
    (ELECTRICAL_LANE_COLUMNS, "MSO-CPC-MIB", "msoCpcLaneTable"),
])
def test_every_readable_column_is_mapped_and_field_units_match_the_mib(
        columns: dict[str, str], module: str, table: str) -> None:
    suffixes = {"dBm": "_dbm", "dB": "_db", "degrees Celsius": "_celsius", "V": "_volts",
                "mA": "_ma", "mV": "_mv", "UI": "_ui"}
    layout = mibs.table(module, table)
    assert set(columns) == {column.name for column in layout.columns}
    for column in layout.columns:
        field = columns[column.name]
        if column.units in suffixes:
            assert field.endswith(suffixes[column.units]), (column.name, field)
        elif column.base_type == "TimeTicks":
            assert field.endswith("_seconds")


def test_decode_refuses_what_the_mib_does_not_allow() -> None:
    snr = mibs.mib_object("MSO-CPC-MIB", "msoCpcLaneSnr")
    assert decode(snr, rfc1902.Integer32(2350)) == 23.5
    with pytest.raises(ProtocolError, match="should be Integer32"):
        decode(snr, rfc1902.OctetString(b"23.5"), device="sw-t")
    with pytest.raises(ProtocolError, match="outside its range"):
        decode(snr, rfc1902.Integer32(20000))
    status = mibs.mib_object("MSO-CPO-MIB", "msoCpoEngineStatus")
    assert decode(status, rfc1902.Integer32(2)) == "overTemperature"
    assert decode(status, rfc1902.Integer32(9)) == "unknown(9)"  # a newer agent's state
    ber = mibs.mib_object("MSO-CPC-MIB", "msoCpcLanePreFecBer")
    assert decode(ber, rfc1902.Integer32(-3620)) == pytest.approx(2.4e-4, rel=0.01)
    faults = mibs.mib_object("MSO-CPO-MIB", "msoCpoElsFaults")
    assert decode(faults, rfc1902.Bits(b"\xc0")) == ("coolerFault", "overTemperature")
    counter = mibs.mib_object("MSO-CPC-MIB", "msoCpcLaneFecCorrected")
    assert decode(counter, rfc1902.Counter64(2**64 - 1)) == 2**64 - 1
    with pytest.raises(ProtocolError):
        decode(counter, rfc1902.Counter32(5))


# ---- walks ---------------------------------------------------------------------------------


def test_a_walk_ends_at_its_subtree_and_asks_for_nothing_past_it(shared: AgentUnderTest) -> None:
    snr = mibs.table("MSO-CPC-MIB", "msoCpcLaneTable").column("msoCpcLaneSnr").oid
    threshold = mibs.oid("MSO-CPC-MIB", "msoCpcFecDegradeThreshold")

    async def walks() -> tuple[dict[Any, list[VarBind]], int, dict[Any, list[VarBind]], int]:
        session = SnmpSession(shared.target(), max_repetitions=5)
        await session.get([(*mibs.oid("SNMPv2-MIB", "sysUpTime"), 0)])  # discovery
        before = shared.agent.requests_received
        column, _ = await session.walk([snr])
        column_requests = shared.agent.requests_received - before
        before = shared.agent.requests_received
        last, _ = await session.walk([threshold])  # the last object the agent serves
        return column, column_requests, last, shared.agent.requests_received - before

    column, column_requests, last, last_requests = collect(walks())
    assert [oid for oid, _ in column[snr]] == [
        (*snr, port, lane) for port in SPEC.ports for lane in range(1, 5)]
    assert column_requests == math.ceil((16 + 1) / 5)  # 16 rows, then one past the column
    assert [oid for oid, _ in last[threshold]] == [(*threshold, 0)]
    assert last_requests == 1  # ended by endOfMibView, not asked again


def test_a_collection_takes_few_requests_and_the_agent_saw_just_those(
        shared: AgentUnderTest) -> None:
    async def twice() -> tuple[int, int, int]:
        collector = TelemetryCollector(shared.target())
        await collector.cpc(histogram=False)  # USM discovery out of the way
        before = shared.agent.requests_received
        cpo, cpc = await collector.collect()
        assert cpo.info.requests == cpc.info.requests
        return cpo.info.requests, shared.agent.requests_received - before, cpo.info.variables

    requests, received, variables = collect(twice())
    assert requests == received
    # One response of each table, ifName, ifHighSpeed and the threshold; then the columns
    # the first responses did not finish, each expecting the first column's rows, and
    # the histogram of each port (4 lanes x 17 bins), side by side: 7 requests here.
    assert requests <= 9
    served = 2 * 6 + 32 * 7 + 8 * 7 + 16 * 8 + 16 * 17 + 4 + 4 + 1
    # Past its end, a walk of unknown length (the four tables' first responses, ifName,
    # ifHighSpeed) gets the rest of its response's 50 repetitions, the threshold (a
    # scalar, one instance expected) one more; every request also carries sysUpTime and
    # snmpEngineBoots.
    assert served + 2 * requests <= variables <= served + 6 * 50 + 1 + 2 * requests


def test_oids_that_do_not_increase_are_a_protocol_error() -> None:
    class Looping(SnmpSession):
        async def bulk(self, non_repeaters: Sequence[Any], repeaters: Sequence[Any],
                       max_repetitions: int) -> tuple[list[VarBind], list[VarBind]]:
            root = tuple(repeaters[0][:8])
            return [], [((*root, 5), rfc1902.Integer32(1)), ((*root, 4), rfc1902.Integer32(1))]

    session = Looping(SnmpTarget("sw-t", "127.0.0.1", user="u", auth_key="k" * 8,
                                 priv_key="k" * 8))
    with pytest.raises(ProtocolError, match="do not increase"):
        collect(session.walk([(1, 3, 6, 1, 4, 1, 32473, 9)]))


# ---- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(("changes", "message"), [
    ({"auth_key": "not-the-passphrase"}, "SNMPv3 authentication failed for user 'msoctl'"),
    ({"priv_key": "not-the-passphrase"}, "SNMPv3 decryption failed for user 'msoctl'"),
    ({"user": "stranger"}, "SNMPv3 user 'stranger' is unknown to the agent"),
])
def test_wrong_credentials_are_one_clear_line_at_once(tiny: AgentUnderTest, changes: dict[str, str],
                                                      message: str) -> None:
    """At once, told without a clock (which a loaded machine stretches): the error is the
    USM report's, and the agent heard the USM discovery and the request's four tries,
    each sent on the report to the one before; a try that waited out the 60 s timeout
    would trip pytest's per-test timeout."""
    received = tiny.agent.requests_received
    collector = TelemetryCollector(tiny.target(timeout_seconds=60.0, retries=3, **changes))
    with pytest.raises(DeviceRejected) as refused:
        collect(collector.cpo())
    assert str(refused.value).startswith(f"sw-t: {message}")
    assert tiny.agent.requests_received - received == 1 + 4
    assert "\n" not in str(refused.value)
    assert collector.requests == 1  # the first request goes alone: no storm of resends


@pytest.mark.serial  # the budget is measured in real time: alone on the machine
def test_v2c_to_a_v3_only_agent_times_out_within_the_budget(tiny: AgentUnderTest) -> None:
    # cut at the budget (its message, not the tries' "6 tries of 0.3 s"), not by a clock
    received = tiny.agent.requests_received
    with pytest.raises(DeviceTimeout, match="within the 1 s budget"):
        collect(TelemetryCollector(tiny.target(version="2c", community="public", user=None,
                                               auth_key=None, priv_key=None,
                                               timeout_seconds=0.3, retries=5),
                                   budget_seconds=1.0).cpo())
    assert tiny.agent.requests_received - received <= 4  # 0.3 s apart: no storm
    # the request's two tries of 0.2 s, then the error that says why
    received = tiny.agent.requests_received
    with pytest.raises(DeviceTimeout, match=r"\(2 tries of 0\.2 s\); a v2c request with a "
                                            "wrong community"):
        collect(TelemetryCollector(tiny.target(version="2c", community="public", user=None,
                                               auth_key=None, priv_key=None,
                                               timeout_seconds=0.2, retries=1)).cpo())
    assert tiny.agent.requests_received - received == 2


def test_v2c_where_the_inventory_says_so() -> None:
    agent = AgentUnderTest(TINY, community="lab-community")
    try:
        v2c = agent.target(version="2c", community="lab-community", user=None, auth_key=None,
                           priv_key=None)
        cpo, cpc = collect(TelemetryCollector(v2c).collect())
        assert len(cpo.lanes) == 4 and len(cpc.lanes) == 4
        assert cpc.lanes[0].fec_histogram_total is not None
    finally:
        agent.close()


@pytest.mark.parametrize("fault", [Fault("latency", seconds=0.45), Fault("freeze")])
def test_the_budget_holds_under_a_slow_or_frozen_agent(tiny: AgentUnderTest, fault: Fault) -> None:
    # The tiny agent's collection is two rounds of requests: 0.9 s when each answer is
    # 0.45 s late (inside the 0.5 s timeout, so no retry), well past the 0.6 s budget.
    # Told without a clock (a loaded machine stretches one): the budget's message, not the
    # tries' ("6 tries of 0.5 s", 3 s), and fewer messages at the agent than 6 tries of
    # each request sent.
    async def scenario() -> tuple[int, int, int]:
        collector = TelemetryCollector(tiny.target(timeout_seconds=0.5, retries=5),
                                       budget_seconds=5.0)
        await collector.cpo()  # works before the fault
        collector.budget_seconds = 0.6
        tiny.telemetry.faults.inject(fault)
        received, sent = tiny.agent.requests_received, collector.requests
        try:
            with pytest.raises(DeviceTimeout, match=r"within the 0\.6 s budget \(\d+ "
                                                    r"requests? sent\)$"):
                await collector.collect()
            heard, sent = tiny.agent.requests_received - received, collector.requests - sent
        finally:
            tiny.telemetry.faults.clear(fault.kind)
        await asyncio.sleep(0.5)  # let the late answers of the slow agent go by
        collector.budget_seconds = 5.0  # room for a loaded machine
        return heard, sent, len((await collector.cpc()).lanes)  # and the collector carries on

    heard, sent, lanes = collect(scenario())
    assert 0 < heard < 6 * sent, (heard, sent)
    assert lanes == 4


# ---- counters across time, restarts and resets -----------------------------------------------


def _two_readings(agent: AgentUnderTest, between: Any, *, step: float = 10.0
                  ) -> tuple[CpcTelemetry, CpcTelemetry]:
    async def both() -> tuple[CpcTelemetry, CpcTelemetry]:
        collector = TelemetryCollector(agent.target())
        agent.step(1.0)
        first = await collector.cpc()
        between()
        agent.step(step)
        return first, await collector.cpc()

    return collect(both())


def test_rates_cer_and_flr_over_an_interval(tiny: AgentUnderTest) -> None:
    tiny.telemetry.faults.inject(Fault("rising_ber", target="2/2", seconds=0))
    first, second = _two_readings(tiny, lambda: None)
    intervals = {(row.port, row.lane): row for row in lane_intervals(first, second)}
    assert len(intervals) == 4
    for row in intervals.values():
        before, after = first.lane(row.port, row.lane), second.lane(row.port, row.lane)
        assert before is not None and after is not None
        assert before.fec_corrected_total is not None and after.fec_corrected_total is not None
        assert row.no_rates_reason is None
        assert row.interval_seconds == pytest.approx(10.0)  # sysUpTime
        assert row.codewords == CODEWORDS_PER_SECOND * 10  # every codeword in the bins
        assert row.counted_seconds == pytest.approx(10.0)
        assert row.fec_corrected == after.fec_corrected_total - before.fec_corrected_total
        assert row.fec_corrected_per_second == pytest.approx(row.fec_corrected / 10.0)
        assert row.fec_histogram is not None and row.cer_basis == "histogram"
        assert row.codeword_error_ratio == (row.fec_histogram[16] or 0) / row.codewords
        # TINY's ports: two 200G lanes, a 400G port (ifHighSpeed), whose FEC interleaves two
        assert after.port_speed_mbps == 400_000 and row.interleave == 2
        assert row.frame_loss_ratio == pytest.approx(2.125 * row.codeword_error_ratio)
    faulty = intervals[2, 2]
    assert faulty.codeword_error_ratio is not None and faulty.codeword_error_ratio > 0.01
    assert all(row.codeword_error_ratio == 0 for key, row in intervals.items()
               if key != (2, 2))


def test_an_agent_restart_gives_no_rates_and_says_why(tiny: AgentUnderTest) -> None:
    tiny.step(10.0)
    first, second = _two_readings(
        tiny, lambda: tiny.telemetry.faults.inject(Fault("reboot")), step=2.0)
    assert first.info.uptime_seconds == pytest.approx(11.0)
    assert second.info.uptime_seconds == pytest.approx(2.0)  # sysUpTime went backwards
    for row in lane_intervals(first, second):
        assert row.no_rates_reason is not None and "restarted" in row.no_rates_reason
        assert row.fec_corrected_per_second is None and row.codeword_error_ratio is None


def test_a_reboot_that_sysuptime_hides_is_told_by_snmp_engine_boots(
        tiny: AgentUnderTest) -> None:
    """RFC 3414 2.2.2: a changed snmpEngineBoots means the engine re-initialised. Read
    at 1 s of uptime; the agent reboots, and 10 s later its sysUpTime is 10 s, ahead
    of the first reading, while this host's clock has hardly moved (the agent's is
    stepped): only the boots show that its counters started again."""
    first, second = _two_readings(
        tiny, lambda: tiny.telemetry.faults.inject(Fault("reboot")), step=10.0)
    assert first.info.uptime_seconds == pytest.approx(1.0)
    assert second.info.uptime_seconds == pytest.approx(10.0)  # forwards
    assert (first.info.engine_boots, second.info.engine_boots) == (1, 2)
    assert not first.info.restarted and not second.info.restarted
    for row in lane_intervals(first, second):
        assert row.no_rates_reason is not None
        assert "snmpEngineBoots went from 1 to 2" in row.no_rates_reason
        assert row.fec_corrected_per_second is None


def test_a_reboot_during_a_collection_marks_it_restarted(tiny: AgentUnderTest) -> None:
    """Every request carries snmpEngineBoots (SNMP-FRAMEWORK-MIB): a reboot between two
    requests of one collection, after which sysUpTime is ahead of where it was, still
    marks the collection restarted. The reboot is the agent's fault, injected when
    its third datagram (USM discovery, the first walk, then this) arrives."""
    agent = tiny.agent
    tiny.step(1.0)
    receive = agent.should_drop

    def reboot_at_the_third_request() -> bool:
        if agent.requests_received == 3:
            tiny.telemetry.faults.inject(Fault("reboot"))
            tiny.step(20.0)  # sysUpTime after the reboot: 20 s, before it: 1 s
        return receive()

    agent.should_drop = reboot_at_the_third_request  # type: ignore[method-assign]
    cpc = collect(TelemetryCollector(tiny.target()).cpc())
    assert cpc.info.restarted
    assert (cpc.info.engine_boots, cpc.info.engine_boots_end) == (1, 2)
    assert cpc.info.uptime_seconds is not None and cpc.info.uptime_end_seconds is not None
    assert cpc.info.uptime_end_seconds > cpc.info.uptime_seconds


def test_a_lane_reset_gives_no_rates_for_that_lane_only(tiny: AgentUnderTest) -> None:
    first, second = _two_readings(
        tiny, lambda: tiny.telemetry.faults.inject(Fault("lane_reset", target="1/2")))
    intervals = {(row.port, row.lane): row for row in lane_intervals(first, second)}
    reason = intervals[1, 2].no_rates_reason
    assert reason is not None and "reset" in reason and "1.00 s" in reason
    assert intervals[1, 2].fec_corrected_per_second is None
    assert all(row.no_rates_reason is None and row.fec_corrected_per_second is not None
               for key, row in intervals.items() if key != (1, 2))


# ---- engines and imports ----------------------------------------------------------------------


def test_one_engine_per_loop_and_another_only_for_other_keys_of_the_same_user(
        tiny: AgentUnderTest) -> None:
    other = AgentUnderTest(TINY, UsmCredentials("msoctl", "another-auth-key", "another-priv-key"))
    try:
        async def scenario() -> list[int]:
            counts = []
            await TelemetryCollector(tiny.target()).cpo()
            await TelemetryCollector(tiny.target()).cpo()
            counts.append(engine_count())
            second = other.target(auth_key="another-auth-key", priv_key="another-priv-key")
            results = await asyncio.gather(TelemetryCollector(tiny.target()).cpc(),
                                           TelemetryCollector(second).cpc())
            counts.append(engine_count())
            counts.extend(len(result.lanes) for result in results)
            return counts

        async def count() -> int:
            return engine_count()

        assert collect(scenario()) == [1, 2, 4, 4]
        assert collect(count()) == 0  # a new loop starts without any
    finally:
        other.close()


def test_the_collector_never_imports_pysmi(tiny: AgentUnderTest) -> None:
    mibs.load()  # the compiled MIBs are cached for the child, as after any first use
    program = (
        "import sys\n"
        "from drivers.snmp.collector import TelemetryCollector\n"
        "from drivers.snmp.session import SnmpTarget, run\n"
        f"target = SnmpTarget('sw-t', '127.0.0.1', {tiny.agent.port}, user='msoctl', "
        f"auth_key={CREDENTIALS.auth_key!r}, priv_key={CREDENTIALS.priv_key!r})\n"
        "cpo, cpc = run(TelemetryCollector(target).collect())\n"
        "print(len(cpo.lanes), len(cpc.lanes), 'pysmi' in sys.modules)\n")
    completed = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                               timeout=60, check=False, env=dict(os.environ))
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["4", "4", "False"]
