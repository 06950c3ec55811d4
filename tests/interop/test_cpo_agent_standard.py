"""The CPO/CPC agent as a standard SNMP agent: SET refused as RFC 3416 says, the
snmpEngine group that agrees with USM's message headers, and IF-MIB's interfaces.

Read by pysnmp 7 (the agent on its own loop and thread, the client on the test's) and
by Debian's net-snmp, by name, with the project's MIBs.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyasn1.codec.ber import decoder, encoder
from pysnmp.hlapi.v3arch.asyncio import CommunityData
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.proto.api import v2c
from pysnmp.proto.mpmod.rfc3412 import SNMPv3Message
from pysnmp.proto.secmod.rfc3414.service import UsmSecurityParameters

from drivers.snmp import mibs
from drivers.snmp.mibs import Oid
from emulators.cpo.interfaces import Interface
from emulators.faults import Fault
from tests.support.snmp_agents import (
    CREDENTIALS,
    PORT_SPEED_BPS_PER_LANE,
    SPEC,
    TINY,
    AgentUnderTest,
    Client,
    net_snmp,
    our_stderr,
    run,
    scalar,
    v3_arguments,
)

NOT_WRITABLE, NO_ACCESS, NO_CREATION = 17, 6, 11  # error-status, RFC 3416 section 3
ETHERNET_CSMACD = 6  # IANAifType-MIB
GAUGE32_MAX = 4294967295
RX_LOS_DBM = -20.0  # the emulator's documented loss-of-signal threshold

UP_TIME = scalar("SNMPv2-MIB", "sysUpTime")
ENGINE = {name: scalar("SNMP-FRAMEWORK-MIB", name) for name in (
    "snmpEngineID", "snmpEngineBoots", "snmpEngineTime", "snmpEngineMaxMessageSize")}


@pytest.fixture(scope="module")
def shared() -> Iterator[AgentUnderTest]:
    """One agent for the tests that do not restart it (they move its clock)."""
    harness = AgentUnderTest(SPEC, community="public-test", seed=11)
    yield harness
    harness.close()


@pytest.fixture
def tiny() -> Iterator[AgentUnderTest]:
    harness = AgentUnderTest(TINY, seed=5)
    yield harness
    harness.close()


def _lane_column(name: str, index: tuple[int, ...]) -> Oid:
    return mibs.table("MSO-CPO-MIB", "msoCpoLaneTable").instance(name, index)


# --- SET -------------------------------------------------------------------------------


def _set(harness: AgentUnderTest, *pairs: tuple[Oid, Any],
         **client: Any) -> tuple[Any, int, int, list[tuple[Oid, Any]]]:
    return run(Client(harness, **client).set(*pairs))


@pytest.mark.parametrize(("oid", "value", "status"), [
    (UP_TIME, rfc1902.TimeTicks(5), NOT_WRITABLE),  # read-only scalar
    (_lane_column("msoCpoLaneTxPower", (1, 1)), rfc1902.Integer32(0), NOT_WRITABLE),
    (_lane_column("msoCpoLaneTxPower", (99, 1)), rfc1902.Integer32(0), NOT_WRITABLE),
    ((*mibs.oid("MSO-CPO-MIB", "msoCpoLaneIndex"), 1, 1), rfc1902.Unsigned32(1), NO_ACCESS),
    ((*mibs.oid("MSO-SMI", "msoModules"), 42, 0), rfc1902.Integer32(1), NO_CREATION),
    ((1, 2, 3, 4), rfc1902.Integer32(1), NO_ACCESS),  # outside every view of the user
    # read-write in IF-MIB, read-only here (ifCompliance3: "write access is not required")
    (mibs.table("IF-MIB", "ifXTable").instance("ifLinkUpDownTrapEnable", (1,)),
     rfc1902.Integer32(1), NOT_WRITABLE),
], ids=["read-only scalar", "read-only column", "row that does not exist",
        "not-accessible index", "absent object", "outside the write view",
        "ifLinkUpDownTrapEnable"])
def test_a_set_is_answered_with_the_error_rfc_3416_gives_and_changes_nothing(
        shared: AgentUnderTest, oid: Oid, value: Any, status: int) -> None:
    """RFC 3416 4.2.5: checks (1) noAccess, (2) notWritable, (7) noCreation, in an
    authenticated Response (authPriv, so not a USM Report) carrying the request's
    variable bindings, the error-index naming the failed one."""
    shared.step_and_read(1.0)
    tx_power = _lane_column("msoCpoLaneTxPower", (1, 1))
    before = run(Client(shared).get(UP_TIME, tx_power))[1]
    error, error_status, error_index, var_binds = _set(shared, (oid, value))
    assert error is None, error
    assert (error_status, error_index) == (status, 1)
    assert var_binds == [(oid, value)]
    assert run(Client(shared).get(UP_TIME, tx_power))[1] == before  # the clock did not move


def test_the_error_index_names_the_first_binding_that_fails(shared: AgentUnderTest) -> None:
    """RFC 3416 4.2.5: the bindings are checked in order until one fails."""
    absent = (*mibs.oid("MSO-SMI", "msoModules"), 42, 0)
    pairs = [(UP_TIME, rfc1902.TimeTicks(5)), (absent, rfc1902.Integer32(1))]
    assert _set(shared, *pairs)[1:3] == (NOT_WRITABLE, 1)
    assert _set(shared, *reversed(pairs))[1:3] == (NO_CREATION, 1)


def test_a_read_only_community_is_refused_no_access(shared: AgentUnderTest) -> None:
    """The v2c community's write view (VACM, RFC 3415) includes nothing: every SET is
    outside it, noAccess (RFC 3416 4.2.5 (1)), in the community's Response; its reads
    still work."""
    community = CommunityData("public-test", mpModel=1)
    error, status, index, _ = _set(shared, (UP_TIME, rfc1902.TimeTicks(5)), auth=community)
    assert error is None
    assert (status, index) == (NO_ACCESS, 1)
    error, var_binds = run(Client(shared, community).get(UP_TIME))
    assert error is None and isinstance(var_binds[0][1], rfc1902.TimeTicks)


def test_net_snmp_snmpset_is_answered_not_writable(shared: AgentUnderTest) -> None:
    """net-snmp's snmpset of sysUpTime and of a CPO column, by name: notWritable
    (RFC 3416 4.2.5 (2)); of an absent object: noCreation (7)."""
    address = f"127.0.0.1:{shared.agent.port}"
    for name, kind in (("SNMPv2-MIB::sysUpTime.0", "t"),
                       ("MSO-CPO-MIB::msoCpoLaneTxPower.1.1", "i")):
        completed = net_snmp("snmpset", *v3_arguments(), address, name, kind, "5")
        assert completed.returncode != 0
        assert "Reason: notWritable" in completed.stderr, completed.stderr
        assert f"Failed object: {name}" in completed.stderr
    completed = net_snmp("snmpset", *v3_arguments(), address, "MSO-SMI::msoModules.42.0",
                         "i", "5")
    assert "Reason: noCreation" in completed.stderr, completed.stderr


# --- snmpEngine (SNMP-FRAMEWORK-MIB) ---------------------------------------------------


def _discover(harness: AgentUnderTest) -> dict[str, Any]:
    """RFC 3414 section 4 discovery by hand: an unauthenticated request with an empty
    engine ID and user, answered by a Report whose header and security parameters
    carry the agent's engine ID, boots and time, and its message size."""
    message = SNMPv3Message()
    message["msgVersion"] = 3
    header = message["msgGlobalData"]
    header["msgID"] = 4242
    header["msgMaxSize"] = 65507
    header["msgFlags"] = b"\x04"  # reportable, noAuthNoPriv
    header["msgSecurityModel"] = 3  # USM
    parameters = UsmSecurityParameters()
    for field, empty in (("msgAuthoritativeEngineId", b""), ("msgAuthoritativeEngineBoots", 0),
                         ("msgAuthoritativeEngineTime", 0), ("msgUserName", b""),
                         ("msgAuthenticationParameters", b""), ("msgPrivacyParameters", b"")):
        parameters[field] = empty
    message["msgSecurityParameters"] = encoder.encode(parameters)
    scoped = message["msgData"]["plaintext"]
    scoped["contextEngineId"] = b""
    scoped["contextName"] = b""
    pdu = v2c.GetRequestPDU()
    v2c.apiPDU.set_defaults(pdu)
    v2c.apiPDU.set_request_id(pdu, 77)
    scoped["data"]["get-request"] = pdu
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5.0)
        sock.sendto(encoder.encode(message), ("127.0.0.1", harness.agent.port))
        answer, _ = sock.recvfrom(65535)
    report, _ = decoder.decode(answer, asn1Spec=SNMPv3Message())
    security, _ = decoder.decode(bytes(report["msgSecurityParameters"]),
                                 asn1Spec=UsmSecurityParameters())
    report_pdu = report["msgData"]["plaintext"]["data"].getComponent()
    assert report_pdu.tagSet == rfc1905.ReportPDU.tagSet
    return {"engine_id": bytes(security["msgAuthoritativeEngineId"]),
            "boots": int(security["msgAuthoritativeEngineBoots"]),
            "time": int(security["msgAuthoritativeEngineTime"]),
            "max_size": int(report["msgGlobalData"]["msgMaxSize"])}


def _engine_group(harness: AgentUnderTest) -> dict[str, Any]:
    error, var_binds = run(Client(harness).get(*ENGINE.values()))
    assert error is None, error
    values = dict(var_binds)
    return {"engine_id": bytes(values[ENGINE["snmpEngineID"]].asOctets()),
            "boots": int(values[ENGINE["snmpEngineBoots"]]),
            "time": int(values[ENGINE["snmpEngineTime"]]),
            "max_size": int(values[ENGINE["snmpEngineMaxMessageSize"]])}


def test_the_snmp_engine_group_is_what_usm_discovery_reports(tiny: AgentUnderTest) -> None:
    """SNMP-FRAMEWORK-MIB snmpEngine group (RFC 3411 section 5) against the Report of
    a discovery (RFC 3414 sections 2.2 and 4): the same engineID, boots and time, and
    snmpEngineMaxMessageSize is the msgMaxSize of the agent's messages (RFC 3412 6.4)."""
    tiny.step(12.5)
    discovered = _discover(tiny)
    served = _engine_group(tiny)
    assert served == discovered
    assert served["engine_id"] == b"\x80\x00\x7e\xd9\x04sw-t"  # RFC 3411 text format
    assert served["boots"] == 1 and served["time"] == 12
    assert served["max_size"] == 65507


def test_a_reboot_counts_one_more_boot_and_restarts_engine_time(tiny: AgentUnderTest) -> None:
    """RFC 3414 2.2.2: snmpEngineBoots counts re-initialisations, snmpEngineTime the
    seconds since; sysUpTime (RFC 3418) restarts with them."""
    tiny.step(30.0)
    assert _engine_group(tiny)["time"] == 30
    tiny.telemetry.faults.inject(Fault("reboot"))
    tiny.step(7.0)
    served = _engine_group(tiny)
    assert (served["boots"], served["time"]) == (2, 7)
    assert _discover(tiny) == served
    assert int(run(Client(tiny).get(UP_TIME))[1][0][1]) == 700


def test_a_manager_whose_time_falls_out_of_the_window_catches_up(tiny: AgentUnderTest) -> None:
    """RFC 3414 3.2 (7): a request whose engine time is more than 150 s off the agent's
    gets a notInTimeWindow Report with the agent's time, and the manager resends. The
    agent's engine time follows its device clock, stepped here 400 s past what the
    manager last heard, in no time of this host's."""
    async def scenario() -> tuple[int, int]:
        client = Client(tiny, retries=0)
        error, before = await client.get(ENGINE["snmpEngineTime"])
        assert error is None, error
        tiny.step(400.0)
        error, after = await client.get(ENGINE["snmpEngineTime"])
        assert error is None, error
        return int(before[0][1]), int(after[0][1])

    received = tiny.agent.requests_received
    before, after = run(scenario())
    assert after - before == 400
    assert tiny.agent.requests_received - received == 4  # discovery, get, get refused, again


def test_boots_are_kept_across_restarts_of_the_agent(tmp_path: Path) -> None:
    """RFC 3414 2.2.2: boots are kept in non-volatile storage, so a new agent process
    with the same engineID counts on; stop and start again is one more boot too."""
    nvram = tmp_path / "sw-t.snmp-engine.json"
    first = AgentUnderTest(TINY, nvram_path=nvram)
    try:
        assert _engine_group(first)["boots"] == 1
        first.telemetry.faults.inject(Fault("reboot"))
        assert _engine_group(first)["boots"] == 2
        first.on_agent_loop(first.agent.stop())
        first.step(5.0)
        first.on_agent_loop(first.agent.start())
        served = _engine_group(first)
        assert (served["boots"], served["time"]) == (3, 0)
    finally:
        first.close()
    assert json.loads(nvram.read_text()) == {"engine_id": "80007ed904" + b"sw-t".hex(),
                                             "boots": 3}
    second = AgentUnderTest(TINY, nvram_path=nvram)
    try:
        assert _discover(second)["boots"] == _engine_group(second)["boots"] == 4
    finally:
        second.close()


def test_net_snmp_reads_the_snmp_engine_group_by_name(tiny: AgentUnderTest) -> None:
    """SNMP-FRAMEWORK-MIB (RFC 3411) by name; the walk ends at the group's end (USM's
    usmStats come after it in the agent's view)."""
    tiny.step(3.0)
    completed = net_snmp("snmpbulkwalk", *v3_arguments(), f"127.0.0.1:{tiny.agent.port}",
                         "SNMP-FRAMEWORK-MIB::snmpEngine")
    assert completed.returncode == 0 and our_stderr(completed) == [], completed.stderr
    assert completed.stdout.splitlines() == [
        "SNMP-FRAMEWORK-MIB::snmpEngineID.0 = Hex-STRING: 80 00 7E D9 04 73 77 2D 74 ",
        "SNMP-FRAMEWORK-MIB::snmpEngineBoots.0 = INTEGER: 1",
        "SNMP-FRAMEWORK-MIB::snmpEngineTime.0 = INTEGER: 3 seconds",
        "SNMP-FRAMEWORK-MIB::snmpEngineMaxMessageSize.0 = INTEGER: 65507"]


# --- IF-MIB ----------------------------------------------------------------------------


def _oper_status(reading: Any, port: int) -> str:
    """ifOperStatus as the emulator documents it: up while every optical lane of the
    port transmits and receives above the loss-of-signal threshold."""
    lanes = [lane for lane in reading.optical_lanes if lane.port == port]
    lit = all(lane.tx_power_dbm != float("-inf") and lane.rx_power_dbm > RX_LOS_DBM
              for lane in lanes)
    return "up" if lanes and lit else "down"


def _walk_by_name(harness: AgentUnderTest, name: str) -> dict[str, dict[int, str]]:
    completed = net_snmp("snmpbulkwalk", *v3_arguments(), f"127.0.0.1:{harness.agent.port}",
                         name)
    assert completed.returncode == 0 and our_stderr(completed) == [], completed.stderr
    found: dict[str, dict[int, str]] = {}
    for line in completed.stdout.splitlines():
        left, _, value = line.partition(" = ")
        column, _, index = left.removeprefix("IF-MIB::").partition(".")
        found.setdefault(column, {})[int(index)] = value
    return found


IF_TABLE_COLUMNS = {
    # ifGeneralInformationGroup's ifTable columns
    "ifIndex", "ifDescr", "ifType", "ifSpeed", "ifPhysAddress", "ifAdminStatus",
    "ifOperStatus", "ifLastChange",
    # ifVHCPacketGroup's (ifInNUcastPkts, ifOutNUcastPkts, ifOutQLen and ifSpecific are
    # deprecated, and not served)
    "ifMtu", "ifInOctets", "ifInUcastPkts", "ifInDiscards", "ifInErrors",
    "ifInUnknownProtos", "ifOutOctets", "ifOutUcastPkts", "ifOutDiscards", "ifOutErrors"}
IF_X_TABLE_COLUMNS = {
    "ifName", "ifLinkUpDownTrapEnable", "ifHighSpeed", "ifConnectorPresent", "ifAlias",
    "ifPromiscuousMode", "ifInMulticastPkts", "ifInBroadcastPkts", "ifOutMulticastPkts",
    "ifOutBroadcastPkts", "ifHCInOctets", "ifHCInUcastPkts", "ifHCInMulticastPkts",
    "ifHCInBroadcastPkts", "ifHCOutOctets", "ifHCOutUcastPkts", "ifHCOutMulticastPkts",
    "ifHCOutBroadcastPkts",
    "ifCounterDiscontinuityTime"}  # ifCounterDiscontinuityGroup
COUNTER32_PAIRS = {"ifInOctets": "ifHCInOctets", "ifOutOctets": "ifHCOutOctets",
                   "ifInUcastPkts": "ifHCInUcastPkts", "ifOutUcastPkts": "ifHCOutUcastPkts",
                   "ifInMulticastPkts": "ifHCInMulticastPkts",
                   "ifInBroadcastPkts": "ifHCInBroadcastPkts",
                   "ifOutMulticastPkts": "ifHCOutMulticastPkts",
                   "ifOutBroadcastPkts": "ifHCOutBroadcastPkts"}


def _counter(text: str, kind: str) -> int:
    """A net-snmp value ``Counter32: N`` (or Counter64) as N, its type checked."""
    found, _, value = text.partition(": ")
    assert found == kind, text
    return int(value)


def test_net_snmp_reads_the_interfaces_the_cpo_tables_index(shared: AgentUnderTest) -> None:
    """IF-MIB (RFC 2863): ifNumber, ifTableLastChange, ifTable and ifXTable by name for
    exactly the ports that index msoCpoLaneTable and msoCpcLaneTable, every column
    ifGeneralInformationGroup, ifVHCPacketGroup (a packet-oriented interface faster than
    650,000,000 bits/second) and ifCounterDiscontinuityGroup hold for every port:
    ifType ethernetCsmacd (IANAifType-MIB, RFC 3635), ifSpeed held at 4,294,967,295
    above that many bits per second with ifHighSpeed in Mb/s, ifOperStatus from the
    lanes' light, ifAdminStatus up, ifMtu 9100 (the emulator's jumbo default),
    ifLastChange 0 for a port in its state since the agent started; a locally
    administered unicast MAC address per port; each Counter32 its Counter64 modulo
    2^32; no discards, unknown protocols or send errors; linkUp/linkDown traps
    disabled (the agent sends none), not promiscuous, a connector, an empty ifAlias and
    no counter discontinuity since the start."""
    reading = shared.step_and_read(2.0)
    table = _walk_by_name(shared, "IF-MIB::ifTable")
    extra = _walk_by_name(shared, "IF-MIB::ifXTable")
    ports = sorted({lane.port for lane in reading.optical_lanes})
    assert ports == sorted({lane.port for lane in reading.electrical_lanes}) == list(SPEC.ports)
    assert set(table) == IF_TABLE_COLUMNS
    assert set(extra) == IF_X_TABLE_COLUMNS
    for column in (*table.values(), *extra.values()):
        assert sorted(column) == ports, column
    speed_bps = 200e9 * SPEC.electrical_lanes_per_port  # 800G: above Gauge32's reach
    addresses = set()
    for port in ports:
        # net-snmp shows a PhysAddress as its DISPLAY-HINT "1x:" has it
        kind, _, address = table["ifPhysAddress"][port].partition(": ")
        octets = bytes(int(part, 16) for part in address.split(":"))
        assert kind == "STRING" and len(octets) == 6
        assert octets[0] & 0x03 == 0x02  # locally administered, unicast (IEEE 802)
        addresses.add(octets)
        for short, high in COUNTER32_PAIRS.items():
            source = table if short in table else extra
            assert _counter(source[short][port], "Counter32") == \
                _counter(extra[high][port], "Counter64") % 2**32, short
        assert _counter(extra["ifHCInOctets"][port], "Counter64") > 2**32  # it wrapped
        for name in ("ifInDiscards", "ifInUnknownProtos", "ifOutDiscards", "ifOutErrors"):
            assert table[name][port] == "Counter32: 0", name
        assert extra["ifLinkUpDownTrapEnable"][port] == "INTEGER: disabled(2)"
        assert extra["ifPromiscuousMode"][port] == "INTEGER: false(2)"
        assert extra["ifConnectorPresent"][port] == "INTEGER: true(1)"
        assert extra["ifAlias"][port] == "STRING: "
        assert extra["ifCounterDiscontinuityTime"][port] == "Timeticks: (0) 0:00:00.00"
        assert table["ifIndex"][port] == f"INTEGER: {port}"
        assert f"Ethernet{port}" in table["ifDescr"][port]
        assert table["ifType"][port] == f"INTEGER: ethernetCsmacd({ETHERNET_CSMACD})"
        assert table["ifSpeed"][port] == f"Gauge32: {GAUGE32_MAX}"
        status = _oper_status(reading, port)
        assert table["ifOperStatus"][port].startswith(f"INTEGER: {status}(")
        assert table["ifAdminStatus"][port] == "INTEGER: up(1)"
        assert table["ifMtu"][port] == "INTEGER: 9100"
        assert table["ifLastChange"][port] == "Timeticks: (0) 0:00:00.00"
        assert extra["ifName"][port] == f"STRING: Ethernet{port}"
        assert extra["ifHighSpeed"][port] == f"Gauge32: {round(speed_bps / 1e6)}"
    assert len(addresses) == len(ports)
    completed = net_snmp("snmpget", *v3_arguments(), f"127.0.0.1:{shared.agent.port}",
                         "IF-MIB::ifNumber.0", "IF-MIB::ifTableLastChange.0")
    assert completed.stdout.splitlines() == [
        f"IF-MIB::ifNumber.0 = INTEGER: {len(ports)}",
        "IF-MIB::ifTableLastChange.0 = Timeticks: (0) 0:00:00.00"]


def test_a_dark_laser_takes_the_ports_it_feeds_down(tiny: AgentUnderTest) -> None:
    """ifOperStatus (RFC 2863): laser 1/1 feeds both lanes of port 1 (TINY: two lanes
    per laser); its fault leaves port 1 without light, down(2), and port 2 up(1).
    ifLastChange is sysUpTime when port 1 went down, then when it came back up;
    port 2's stays 0."""
    status = mibs.table("IF-MIB", "ifTable")
    oids = [status.instance("ifOperStatus", (port,)) for port in TINY.ports]
    changed = [status.instance("ifLastChange", (port,)) for port in TINY.ports]

    def read() -> tuple[list[int], list[int], int]:
        error, var_binds = run(Client(tiny).get(*oids, *changed, UP_TIME))
        assert error is None, error
        values = [int(value) for _, value in var_binds]
        return values[:2], values[2:4], values[4]

    tiny.step_and_read(3.0)
    assert read()[:2] == ([1, 1], [0, 0])
    tiny.telemetry.faults.inject(Fault("els", target="1/1"))
    states, last_change, up_time = read()
    assert states == [2, 1] and last_change == [up_time, 0] and up_time > 0
    went_down = up_time
    tiny.telemetry.faults.clear("els", target="1/1")
    tiny.step_and_read(5.0)  # the laser ramps back up
    states, last_change, up_time = read()
    assert states == [1, 1] and went_down < last_change[0] <= up_time
    assert last_change[1] == 0


def test_a_slower_port_reports_its_speed_in_both_objects() -> None:
    """RFC 2863: ifSpeed in bits per second where it fits a Gauge32, ifHighSpeed in
    units of 1,000,000 bits per second."""
    harness = AgentUnderTest(TINY, ports=[Interface(1, "Ethernet1", 1e9),
                                          Interface(2, "Ethernet2", 25e9)])
    try:
        speed = mibs.table("IF-MIB", "ifTable")
        high = mibs.table("IF-MIB", "ifXTable")
        oids = [speed.instance("ifSpeed", (1,)), speed.instance("ifSpeed", (2,)),
                high.instance("ifHighSpeed", (1,)), high.instance("ifHighSpeed", (2,))]
        values = [int(value) for _, value in run(Client(harness).get(*oids))[1]]
        assert values == [1_000_000_000, GAUGE32_MAX, 1000, 25000]
    finally:
        harness.close()
    with pytest.raises(ValueError, match="must be the ports"):
        AgentUnderTest(TINY, ports=[Interface(1, "Ethernet1", 1e9)])


# --- IF-MIB counters ------------------------------------------------------------------------

IF = mibs.table("IF-MIB", "ifTable")
IF_X = mibs.table("IF-MIB", "ifXTable")
TINY_SPEED_BPS = PORT_SPEED_BPS_PER_LANE * TINY.electrical_lanes_per_port  # 400G


def _if_columns(harness: AgentUnderTest, names: list[str], ports: tuple[int, ...] = TINY.ports,
                extra: tuple[Oid, ...] = ()) -> dict[str, dict[int, int]]:
    """Columns of ifTable or ifXTable for ``ports``, sysUpTime (under "sysUpTime", port
    0) and the integers ``extra`` (under "extra", by position), in one GET (one
    snapshot)."""
    oids = [(name, port, (IF if name in IF_TABLE_COLUMNS else IF_X).instance(name, (port,)))
            for name in names for port in ports]
    oids += [("extra", position, oid) for position, oid in enumerate(extra)]
    error, var_binds = run(Client(harness).get(*(oid for _, _, oid in oids), UP_TIME))
    assert error is None, error
    found: dict[str, dict[int, int]] = {}
    for (name, port, _), (_, value) in zip(oids, var_binds, strict=False):
        found.setdefault(name, {})[port] = int(value)
    found["sysUpTime"] = {0: int(var_binds[-1][1])}
    return found


def _octets_in(seconds: float, load: float, speed_bps: float = TINY_SPEED_BPS) -> float:
    """What a port carries in ``seconds`` at ``load``: its MAC frames' octets."""
    return load * speed_bps / 8.0 * seconds


HC = ["ifHCInOctets", "ifHCOutOctets"]


def test_octets_grow_at_the_load_times_the_speed_as_the_device_clock_moves(
        tiny: AgentUnderTest) -> None:
    """Each port carries the switch's load times its speed in each direction while it is
    up, counted in ifHCInOctets and ifHCOutOctets as the stepped device clock moves,
    refreshed at most once per refresh_seconds (1 s) of device time; the Counter32
    octets are the Counter64 ones modulo 2^32; the frames are RoCE's mix (mostly 4 KiB
    payloads, some ACKs), a few of them multicast and broadcast."""
    names = [*HC, "ifInOctets", "ifOutOctets", "ifHCInUcastPkts", "ifHCInMulticastPkts",
             "ifHCInBroadcastPkts", "ifHCOutUcastPkts", "ifHCOutMulticastPkts",
             "ifHCOutBroadcastPkts", "ifInErrors"]
    load = tiny.telemetry.load
    tiny.step_and_read(1.0)
    before = _if_columns(tiny, names)
    tiny.step(0.4)  # within the refresh: the same snapshot, but sysUpTime
    within = _if_columns(tiny, names)
    assert within.pop("sysUpTime") != before["sysUpTime"]
    assert within == {name: values for name, values in before.items() if name != "sysUpTime"}
    tiny.step(5.6)
    after = _if_columns(tiny, names)
    for port in TINY.ports:
        for name in HC:
            assert after[name][port] - before[name][port] == pytest.approx(
                _octets_in(6.0, load), abs=2), (name, port)
        assert after["ifInOctets"][port] == after["ifHCInOctets"][port] % 2**32
        assert after["ifOutOctets"][port] == after["ifHCOutOctets"][port] % 2**32
        for direction in ("In", "Out"):
            frames = {kind: after[f"ifHC{direction}{kind}Pkts"][port]
                      - before[f"ifHC{direction}{kind}Pkts"][port]
                      for kind in ("Ucast", "Multicast", "Broadcast")}
            if direction == "In":
                frames["Errors"] = after["ifInErrors"][port] - before["ifInErrors"][port]
            octets = after[f"ifHC{direction}Octets"][port] - before[f"ifHC{direction}Octets"][port]
            mean = octets / sum(frames.values())
            assert 2000 < mean < 4200, mean  # RoCE data frames of 4158 octets, and ACKs
            assert 0 < frames["Broadcast"] < frames["Multicast"] < frames["Ucast"] / 1000
    # a change of load shows from the moment it is made
    tiny.telemetry.set_load(0.25)
    tiny.step(4.0)
    later = _if_columns(tiny, HC)
    for port in TINY.ports:
        assert later["ifHCInOctets"][port] - after["ifHCInOctets"][port] == pytest.approx(
            _octets_in(4.0, 0.25), abs=2)


def test_a_port_counts_at_its_own_speed() -> None:
    """The traffic is the load times each port's ifSpeed (ifHighSpeed Mb/s)."""
    harness = AgentUnderTest(TINY, ports=[Interface(1, "Ethernet1", 1e9),
                                          Interface(2, "Ethernet2", 25e9)])
    try:
        before = _if_columns(harness, HC)
        harness.step(10.0)
        after = _if_columns(harness, HC)
        load = harness.telemetry.load
        for port, speed in ((1, 1e9), (2, 25e9)):
            assert after["ifHCOutOctets"][port] - before["ifHCOutOctets"][port] == \
                pytest.approx(_octets_in(10.0, load, speed), abs=2)
    finally:
        harness.close()


def test_a_dark_port_counts_nothing_until_its_light_is_back(tiny: AgentUnderTest) -> None:
    """Laser 1/1 feeds both lanes of port 1 (TINY): while it is off, port 1 is down and
    none of its counters moves; port 2 counts on. Back on, the laser ramps up and port
    1 counts again."""
    names = [*HC, "ifHCInUcastPkts", "ifHCOutUcastPkts", "ifHCInMulticastPkts",
             "ifInErrors", "ifOperStatus"]
    load = tiny.telemetry.load
    tiny.step_and_read(2.0)
    tiny.telemetry.faults.inject(Fault("els", target="1/1"))
    dark = _if_columns(tiny, names)
    assert dark["ifOperStatus"] == {1: 2, 2: 1}
    tiny.step(5.0)
    still = _if_columns(tiny, names)
    for name in names:
        assert still[name][1] == dark[name][1], name
    for name in HC:
        assert still[name][2] - dark[name][2] == pytest.approx(_octets_in(5.0, load), abs=2)
    tiny.telemetry.faults.clear("els", target="1/1")
    tiny.step(5.0)
    lit = _if_columns(tiny, names)
    assert lit["ifOperStatus"] == {1: 1, 2: 1}
    assert 0 < lit["ifHCInOctets"][1] - still["ifHCInOctets"][1] <= _octets_in(5.0, load)


def test_a_reboot_restarts_the_counters_and_a_clear_is_a_discontinuity(
        tiny: AgentUnderTest) -> None:
    """ifCounterDiscontinuityTime (RFC 2863): a clear of port 2's counters (the model's
    clear_counters) restarts them and sets it to sysUpTime at the clear; port 1's
    counters and time are untouched. An agent reboot restarts every counter with
    sysUpTime, and ifCounterDiscontinuityTime is 0 again: "if no such discontinuities
    have occurred since the last re-initialization of the local management subsystem,
    then this object contains a zero value"."""
    names = [*HC, "ifInOctets", "ifHCInUcastPkts", "ifCounterDiscontinuityTime"]
    load = tiny.telemetry.load
    tiny.step(10.0)
    tiny.telemetry.faults.inject(Fault("clear_counters", target="2"))
    tiny.step(2.0)
    cleared = _if_columns(tiny, names)
    assert not tiny.telemetry.faults.is_active("clear_counters")  # an event, not a state
    assert cleared["sysUpTime"] == {0: 1200}
    assert cleared["ifCounterDiscontinuityTime"] == {1: 0, 2: 1000}
    assert cleared["ifHCInOctets"][1] == pytest.approx(_octets_in(12.0, load), abs=2)
    assert cleared["ifHCInOctets"][2] == pytest.approx(_octets_in(2.0, load), abs=2)
    assert cleared["ifInOctets"][2] == cleared["ifHCInOctets"][2] % 2**32
    tiny.telemetry.faults.inject(Fault("reboot"))
    tiny.step(3.0)
    rebooted = _if_columns(tiny, names)
    assert rebooted["sysUpTime"] == {0: 300}
    assert rebooted["ifCounterDiscontinuityTime"] == {1: 0, 2: 0}
    for port in TINY.ports:
        for name in HC:  # counted from the boot
            assert rebooted[name][port] == pytest.approx(_octets_in(3.0, load), abs=2)
        assert 0 < rebooted["ifHCInUcastPkts"][port] < cleared["ifHCInUcastPkts"][1]
    with pytest.raises(ValueError, match="clear_counters"):
        tiny.telemetry.faults.inject(Fault("clear_counters", target="99"))


def test_in_errors_follow_the_ports_uncorrectable_codewords(tiny: AgentUnderTest) -> None:
    """A frame that overlaps an uncorrectable RS(544,514) codeword is in error
    (ifInErrors): none while port 1's lanes count no uncorrectable codeword, about the
    load times their number (a fifth more for codewords that straddle two frames) while
    they are few, never more than the frames received; port 2, whose SNR stays up,
    counts none."""
    lanes = mibs.table("MSO-CPC-MIB", "msoCpcLaneTable")
    uncorrectable = [lanes.instance("msoCpcLaneFecUncorrectable", (1, lane))
                     for lane in range(1, TINY.electrical_lanes_per_port + 1)]
    names = ["ifInErrors", "ifHCInUcastPkts", "ifHCInMulticastPkts", "ifHCInBroadcastPkts"]

    def read() -> tuple[int, dict[str, dict[int, int]]]:
        found = _if_columns(tiny, names, extra=tuple(uncorrectable))
        return sum(found.pop("extra").values()), found

    load = tiny.telemetry.load
    codewords_per_step = 39_062_500 * TINY.electrical_lanes_per_port * 6.0  # 6 s, 2 lanes
    tiny.telemetry.faults.inject(Fault("rising_ber", target="1", seconds=120.0))
    counted, before = read()
    few = 0
    for _ in range(20):
        tiny.step(6.0)
        now_counted, after = read()
        codewords = now_counted - counted
        errors = after["ifInErrors"][1] - before["ifInErrors"][1]
        frames = errors + sum(after[name][1] - before[name][1] for name in names[1:])
        assert after["ifInErrors"][2] == 0
        assert 0 <= errors <= frames
        if codewords == 0:
            assert errors == 0
        elif codewords >= 1000 and codewords / codewords_per_step < 1e-3:
            few += 1
            assert 0.8 * load * codewords < errors < 1.5 * load * codewords, (codewords, errors)
        counted, before = now_counted, after
    assert few >= 1  # the ramp passed through the few-errors regime
    assert errors > 0.9 * frames  # and at its bottom nearly every frame is hit


# --- SNMPv2-MIB snmp group ---------------------------------------------------------------


def _snmp_group(harness: AgentUnderTest) -> dict[str, str]:
    """SNMPv2-MIB's snmp group as net-snmp walks it by name (RFC 3418)."""
    completed = net_snmp("snmpbulkwalk", *v3_arguments(), f"127.0.0.1:{harness.agent.port}",
                         "SNMPv2-MIB::snmp")
    assert completed.returncode == 0 and our_stderr(completed) == [], completed.stderr
    found = {}
    for line in completed.stdout.splitlines():
        left, _, value = line.partition(" = ")
        if value.startswith("No more variables"):
            continue
        found[left.removeprefix("SNMPv2-MIB::").removesuffix(".0")] = value
    return found


def _count(found: dict[str, str], name: str) -> int:
    kind, _, value = found[name].partition(": ")
    assert kind == "Counter32", found[name]
    return int(value)


def test_the_snmp_group_counts_what_the_agent_took_in(shared: AgentUnderTest) -> None:
    """RFC 3418's snmpGroup and snmpCommunityGroup, read by name: every message counted
    in snmpInPkts, a message of no SNMP version in snmpInBadVersions, one that is not
    BER in snmpInASNParseErrs, an unknown community in snmpInBadCommunityNames, and a
    SET the community's view does not let it make in snmpInBadCommunityUses; no
    authenticationFailure trap is sent, so snmpEnableAuthenTraps is disabled."""
    before = _snmp_group(shared)
    assert set(before) == {"snmpInPkts", "snmpInBadVersions", "snmpInBadCommunityNames",
                           "snmpInBadCommunityUses", "snmpInASNParseErrs",
                           "snmpEnableAuthenTraps", "snmpSilentDrops", "snmpProxyDrops"}
    assert before["snmpEnableAuthenTraps"] == "INTEGER: disabled(2)"
    address = ("127.0.0.1", shared.agent.port)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as raw:
        raw.sendto(b"\x30\x03\x02\x01", address)  # cut short: not BER
        # version 7, which no SNMP is: SEQUENCE { INTEGER 7, community, GetRequest }
        raw.sendto(bytes.fromhex("3019020107040670")
                   + b"ublic" + bytes.fromhex("a00c020101020100020100300100"), address)
    wrong = net_snmp("snmpget", "-v2c", "-c", "not-the-community", "-t", "0.5", "-r", "0",
                     f"127.0.0.1:{shared.agent.port}", ".1.3.6.1.2.1.1.3.0")
    assert "Timeout" in wrong.stderr  # an unknown community gets no answer (RFC 3584 5.2.1)
    error, status, _, _ = _set(shared, (UP_TIME, rfc1902.TimeTicks(5)),
                               auth=CommunityData("public-test", mpModel=1))
    assert error is None and status == NO_ACCESS
    after = _snmp_group(shared)
    moved = {name: _count(after, name) - _count(before, name)
             for name in before if name != "snmpEnableAuthenTraps"}
    assert moved["snmpInASNParseErrs"] == 1 and moved["snmpInBadVersions"] == 1
    assert moved["snmpInBadCommunityNames"] == 1 and moved["snmpInBadCommunityUses"] == 1, moved
    # the two datagrams, the wrong community, the SET and the walk that read `after`
    assert moved["snmpInPkts"] >= 5
    assert moved["snmpSilentDrops"] == moved["snmpProxyDrops"] == 0


def test_sys_or_table_names_each_mib_module_the_agent_serves(tiny: AgentUnderTest) -> None:
    """RFC 3418's systemGroup includes sysORLastChange and sysORTable: one row per MIB
    module the agent implements, by its MODULE-IDENTITY (net-snmp names each), listed
    since the start (sysORUpTime and sysORLastChange 0); and the agent serves objects of
    every module it lists."""
    address = f"127.0.0.1:{tiny.agent.port}"
    completed = net_snmp("snmpbulkwalk", *v3_arguments(), address, "SNMPv2-MIB::system")
    assert completed.returncode == 0 and our_stderr(completed) == [], completed.stderr
    lines = completed.stdout.splitlines()
    assert "SNMPv2-MIB::sysORLastChange.0 = Timeticks: (0) 0:00:00.00" in lines
    listed = [line.partition(" = OID: ")[2] for line in lines
              if line.startswith("SNMPv2-MIB::sysORID.")]
    assert listed[:6] == ["SNMPv2-MIB::snmpMIB", "SNMP-FRAMEWORK-MIB::snmpFrameworkMIB",
                          "SNMP-USER-BASED-SM-MIB::snmpUsmMIB", "IF-MIB::ifMIB",
                          "MSO-CPO-MIB::msoCpoMIB", "MSO-CPC-MIB::msoCpcMIB"]
    assert sum(line.startswith("SNMPv2-MIB::sysORDescr.") for line in lines) == len(listed)
    assert [line.partition(" = ")[2] for line in lines
            if line.startswith("SNMPv2-MIB::sysORUpTime.")] == \
        ["Timeticks: (0) 0:00:00.00"] * len(listed)
    described = [line.partition(" = STRING: ")[2] for line in lines
                 if line.startswith(f"SNMPv2-MIB::sysORDescr.{listed.index('IF-MIB::ifMIB') + 1} ")]
    assert described and all(group in described[0] for group in (
        "ifGeneralInformationGroup", "ifVHCPacketGroup", "ifCounterDiscontinuityGroup"))
    everything = net_snmp("snmpbulkwalk", *v3_arguments(), address, ".1")
    served_modules = {line.partition("::")[0] for line in everything.stdout.splitlines()}
    assert {name.partition("::")[0] for name in listed} <= served_modules


def _usm_stats(harness: AgentUnderTest) -> dict[str, int]:
    """SNMP-USER-BASED-SM-MIB's usmStats as net-snmp walks them by name (RFC 3414)."""
    completed = net_snmp("snmpbulkwalk", *v3_arguments(), f"127.0.0.1:{harness.agent.port}",
                         "SNMP-USER-BASED-SM-MIB::usmStats")
    assert completed.returncode == 0 and our_stderr(completed) == [], completed.stderr
    found = {}
    for line in completed.stdout.splitlines():
        left, _, value = line.partition(" = Counter32: ")
        if value:
            found[left.removeprefix("SNMP-USER-BASED-SM-MIB::").removesuffix(".0")] = int(value)
    return found


def test_usm_counts_each_message_it_refused_by_reason(shared: AgentUnderTest) -> None:
    """RFC 3414 3.2: a message from an unknown user counts in usmStatsUnknownUserNames,
    one whose digest does not check in usmStatsWrongDigests, one asking for less
    security than the user has in usmStatsUnsupportedSecLevels; each refused, and the
    rest unmoved."""
    before = _usm_stats(shared)
    assert set(before) == {"usmStatsUnsupportedSecLevels", "usmStatsNotInTimeWindows",
                           "usmStatsUnknownUserNames", "usmStatsUnknownEngineIDs",
                           "usmStatsWrongDigests", "usmStatsDecryptionErrors"}
    address = f"127.0.0.1:{shared.agent.port}"
    quick = ("-t", "1", "-r", "0")
    wrong_key = net_snmp("snmpget", *v3_arguments(auth_key="not-the-passphrase"), *quick,
                         address, "SNMPv2-MIB::sysUpTime.0")
    assert wrong_key.returncode != 0
    unknown = net_snmp("snmpget", "-v3", "-l", "noAuthNoPriv", "-u", "nobody-here", *quick,
                       address, ".1.3.6.1.2.1.1.3.0")
    assert unknown.returncode != 0
    plain = net_snmp("snmpget", "-v3", "-l", "noAuthNoPriv", "-u", CREDENTIALS.user, *quick,
                     address, ".1.3.6.1.2.1.1.3.0")
    assert plain.returncode != 0
    after = _usm_stats(shared)
    moved = {name: after[name] - before[name] for name in before}
    assert moved["usmStatsWrongDigests"] == 1, moved
    assert moved["usmStatsUnknownUserNames"] == 1, moved
    assert moved["usmStatsUnsupportedSecLevels"] == 1, moved
    assert moved["usmStatsDecryptionErrors"] == 0, moved


# --- writable system objects ---------------------------------------------------------------

CONTACT, NAME, LOCATION = (scalar("SNMPv2-MIB", name)
                           for name in ("sysContact", "sysName", "sysLocation"))
WRONG_TYPE, WRONG_LENGTH, WRONG_VALUE = 7, 8, 10  # error-status, RFC 3416 section 3


def _system_texts(harness: AgentUnderTest) -> list[bytes]:
    error, var_binds = run(Client(harness).get(CONTACT, NAME, LOCATION))
    assert error is None, error
    return [bytes(value) for _, value in var_binds]


def test_sys_contact_name_and_location_are_set_together_and_read_back(
        tiny: AgentUnderTest) -> None:
    """RFC 3418: sysContact, sysName and sysLocation are read-write; a SET of all three
    answers noError with the request's bindings, and the next read has them."""
    texts = [b"noc@example.net, +1 555 0100", b"sw-t.campus-a", b"Campus A, hall 2, row 7"]
    pairs = [(oid, rfc1902.OctetString(text))
             for oid, text in zip((CONTACT, NAME, LOCATION), texts, strict=True)]
    error, status, index, var_binds = _set(tiny, *pairs)
    assert (error, status, index) == (None, 0, 0)
    assert var_binds == pairs
    assert _system_texts(tiny) == texts
    # and as net-snmp sets and reads it, by name
    address = f"127.0.0.1:{tiny.agent.port}"
    done = net_snmp("snmpset", *v3_arguments(), address, "SNMPv2-MIB::sysLocation.0", "s",
                    "Campus B")
    assert done.returncode == 0 and our_stderr(done) == [], done.stderr
    read = net_snmp("snmpget", *v3_arguments(), address, "SNMPv2-MIB::sysLocation.0")
    assert read.stdout.strip() == 'SNMPv2-MIB::sysLocation.0 = STRING: Campus B'


@pytest.mark.parametrize(("value", "status"), [
    (rfc1902.Integer32(1), WRONG_TYPE),
    (rfc1902.IpAddress("10.0.0.1"), WRONG_TYPE),
    (rfc1902.OctetString(b"x" * 256), WRONG_LENGTH),
    (rfc1902.OctetString(b"hall \x1b[2J"), WRONG_VALUE),  # an escape: no NVT ASCII
    (rfc1902.OctetString(b"line\rbreak"), WRONG_VALUE),  # a CR not followed by LF or NUL
    (rfc1902.OctetString("Z\u00fcrich".encode()), WRONG_VALUE),  # 8-bit octets
], ids=["integer", "ip address", "256 octets", "escape", "bare CR", "utf-8"])
def test_a_system_text_the_mib_does_not_take_is_refused_and_nothing_changes(
        tiny: AgentUnderTest, value: Any, status: int) -> None:
    """RFC 3416 4.2.5 (3) wrongType, (4) wrongLength, (6) wrongValue against the
    DisplayString (SIZE (0..255)) of RFC 3418 and RFC 2579, the binding named by its
    index; a SET is all or nothing, so the good first binding is not made either."""
    before = _system_texts(tiny)
    error, error_status, error_index, _ = _set(
        tiny, (NAME, rfc1902.OctetString(b"renamed")), (CONTACT, value))
    assert error is None and (error_status, error_index) == (status, 2)
    assert _system_texts(tiny) == before
    # 255 octets and a CR LF are fine
    assert _set(tiny, (CONTACT, rfc1902.OctetString(b"y" * 255)))[1] == 0
    assert _set(tiny, (CONTACT, rfc1902.OctetString(b"one\r\ntwo")))[1] == 0


def _aliases(harness: AgentUnderTest) -> list[bytes]:
    error, var_binds = run(Client(harness).get(*(IF_X.instance("ifAlias", (port,))
                                                 for port in harness.telemetry.spec.ports)))
    assert error is None, error
    return [bytes(value) for _, value in var_binds]


def test_if_alias_is_set_by_the_v3_user_and_kept_for_the_agents_life(
        tiny: AgentUnderTest) -> None:
    """RFC 2863: ifAlias is read-write, the zero-length string until a manager sets it,
    and kept "across all re-initializations/reboots of the network management system";
    a SET answers noError with the request's bindings, alone or with a system text."""
    alias = rfc1902.OctetString(b"spine-3 Ethernet17, circuit A-42")
    assert _aliases(tiny) == [b"", b""]
    error, status, index, var_binds = _set(tiny, (IF_X.instance("ifAlias", (1,)), alias))
    assert (error, status, index) == (None, 0, 0)
    assert var_binds == [(IF_X.instance("ifAlias", (1,)), alias)]
    assert _aliases(tiny) == [bytes(alias), b""]  # at once, in the same snapshot
    tiny.step(2.0)
    tiny.telemetry.faults.inject(Fault("reboot"))
    tiny.step(1.0)
    assert _aliases(tiny) == [bytes(alias), b""]
    pairs = [(LOCATION, rfc1902.OctetString(b"hall 3")),
             (IF_X.instance("ifAlias", (2,)), rfc1902.OctetString(b"z" * 64))]  # its SIZE
    assert _set(tiny, *pairs)[1:3] == (0, 0)
    assert _aliases(tiny) == [bytes(alias), b"z" * 64]
    # and as net-snmp sets and reads it, by name
    address = f"127.0.0.1:{tiny.agent.port}"
    done = net_snmp("snmpset", *v3_arguments(), address, "IF-MIB::ifAlias.2", "s",
                    "leaf-1 uplink")
    assert done.returncode == 0 and our_stderr(done) == [], done.stderr
    read = net_snmp("snmpget", *v3_arguments(), address, "IF-MIB::ifAlias.2")
    assert read.stdout.strip() == "IF-MIB::ifAlias.2 = STRING: leaf-1 uplink"


@pytest.mark.parametrize(("value", "status"), [
    (rfc1902.Integer32(1), WRONG_TYPE),
    (rfc1902.OctetString(b"x" * 65), WRONG_LENGTH),  # DisplayString (SIZE(0..64))
    (rfc1902.OctetString(b"uplink \x1b[2J"), WRONG_VALUE),  # an escape: no NVT ASCII
    (rfc1902.OctetString("Z\u00fcrich".encode()), WRONG_VALUE),  # 8-bit octets
], ids=["integer", "65 octets", "escape", "utf-8"])
def test_an_if_alias_the_mib_does_not_take_is_refused_and_nothing_changes(
        tiny: AgentUnderTest, value: Any, status: int) -> None:
    """RFC 3416 4.2.5 (3) wrongType, (4) wrongLength, (6) wrongValue against ifAlias's
    DisplayString (SIZE(0..64)), the binding named by its index; the good first binding
    (a system text) is not made either."""
    texts, aliases = _system_texts(tiny), _aliases(tiny)
    error, error_status, error_index, _ = _set(
        tiny, (LOCATION, rfc1902.OctetString(b"moved")),
        (IF_X.instance("ifAlias", (1,)), value))
    assert error is None and (error_status, error_index) == (status, 2)
    assert (_system_texts(tiny), _aliases(tiny)) == (texts, aliases)


def test_a_community_cannot_set_if_alias(shared: AgentUnderTest) -> None:
    """The v2c community reads only: noAccess, and ifAlias as it was."""
    before = _aliases(shared)
    community = CommunityData("public-test", mpModel=1)
    error, status, index, _ = _set(
        shared, (IF_X.instance("ifAlias", (1,)), rfc1902.OctetString(b"taken")),
        auth=community)
    assert error is None and (status, index) == (NO_ACCESS, 1)
    assert _aliases(shared) == before


def test_a_community_cannot_set_a_system_text(shared: AgentUnderTest) -> None:
    """The v2c community reads only (its VACM write view is empty): noAccess."""
    before = _system_texts(shared)
    community = CommunityData("public-test", mpModel=1)
    error, status, index, _ = _set(shared, (NAME, rfc1902.OctetString(b"taken")),
                                   auth=community)
    assert error is None and (status, index) == (NO_ACCESS, 1)
    assert _system_texts(shared) == before
