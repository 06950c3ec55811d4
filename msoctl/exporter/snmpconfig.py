"""CPO/CPC through Prometheus's snmp_exporter: its configuration and the recording rules.

For a fleet of switches, Prometheus's own snmp_exporter (Go) can read the CPO/CPC
tables instead of msoctl's probe. ``msoctl exporter snmp-config`` writes its
``snmp.yml`` from the MIBs (:mod:`drivers.snmp.mibs`), in the format of the version
Debian ships (0.21: modules at the top level, ``auth:`` inside each module, raw
integers: no DISPLAY-HINT scaling), three modules named after the MIBs,
``MSO-CPO-MIB``, ``MSO-CPC-MIB`` and ``ENTITY-SENSOR-MIB`` (0.21 takes one module per
scrape; the last reads the sensors real switches serve, :func:`entity_sensor_body`):

- only the columns msoctl's probe exports (:data:`COLUMNS`), walked by column,
  and sysUpTime.0;
- index labels named as msoctl names them (``engine``, ``lane``, ``module``,
  ``bin``), the port's ifIndex looked up in ifName as ``port`` (the ifIndex label
  dropped);
- enumerations as state sets, BITS as one series per bit;
- SNMPv3 authPriv (SHA-256 etc., AES-128) or v2c, from each switch's inventory
  ``snmp:`` section. Switches whose credentials differ get modules of their own,
  ``MSO-CPO-MIB@NAME`` (NAME the first such switch); :func:`module_names` says which.

Secrets: 0.21 reads credentials only from snmp.yml itself (no environment or file
references), so a file that works holds them. ``--out FILE`` writes it with mode
0600 (created so, then renamed into place); printed on stdout the secrets are
replaced by ``REDACTED(<reference>)`` unless ``--show-secrets`` is given.

The recording rules (:func:`recording_rules`, deploy/msoctl-cpo-recording.yml) turn
snmp_exporter's raw series into msoctl's metric names and units (:mod:`.cpo`):
fixed-point integers divided by 10^N (the DISPLAY-HINT ``d-N``), milli-units to base
units, log10 BER in thousandths to a ratio, counters renamed (their rates, CER and
FLR, are what the alert rules take of either path), state sets relabelled, so that
the alerts and the dashboard work on either path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from drivers.errors import ValidationError
from drivers.snmp import mibs
from drivers.snmp.collector import (
    CPC,
    CPO,
    IF_NAME,
    LOG10_BER_SYNTAX,
    SYS_UP_TIME,
    THRESHOLD,
)
from msoctl.exporter import cpo
from msoctl.inventory import Device, Inventory, SecretRef
from msoctl.outfile import write_output

ENTITY_SENSOR = "ENTITY-SENSOR-MIB"
MODULES = (CPO, CPC, ENTITY_SENSOR)
SENSOR_LABEL = "sensor"
SENSOR_COLUMNS = ("entPhySensorType", "entPhySensorScale", "entPhySensorPrecision",
                  "entPhySensorValue", "entPhySensorOperStatus")
"""What the ENTITY-SENSOR-MIB module reads of each sensor (the five columns every agent
serves), with the sensor's entPhysicalName and entPhysicalDescr as labels."""
ENTITY_VALUE = "msoctl_entity_sensor_value"
MAX_REPETITIONS = 50
PORT_LABEL = "port"
INDEX_LABELS: Mapping[str, str] = {
    "ifIndex": "ifIndex",  # looked up in ifName as ``port``, then dropped
    "msoCpoEngineIndex": "engine",
    "msoCpoLaneIndex": "lane",
    "msoCpoElsModuleIndex": "module",
    "msoCpoElsLaneIndex": "lane",
    "msoCpcLaneIndex": "lane",
    "msoCpcHistogramBin": "bin",
}
"""MIB index object -> the label msoctl's probe gives it."""
MSO_CPO = "mso-cpo"
IF_HIGH_SPEED = ("IF-MIB", "ifHighSpeed")
AUTH_PROTOCOLS = {"sha1": "SHA", "sha256": "SHA256", "sha384": "SHA384", "sha512": "SHA512"}
PRIV_PROTOCOLS = {"aes128": "AES"}
"""AES-128 only: the one privacy protocol whose name means the same key extension in
pysnmp, net-snmp and snmp_exporter; AES-192/256 differ between implementations."""


@dataclass(frozen=True)
class Recorded:
    """One msoctl metric recorded from one MIB column: ``metric`` = column / ``divisor``,
    or, with ``log10``, 10^(column / ``divisor``); ``state`` names the label msoctl uses
    for a state set's states (the column's own label in snmp_exporter's series)."""

    metric: str
    module: str
    column: str
    divisor: int = 1
    log10: bool = False
    state: str | None = None
    source: str | None = None
    """The ``source`` label msoctl gives a metric that several surfaces can fill (the
    lanes' optics): here MSO-CPO-MIB's, ``mso-cpo``."""
    multiplier: int = 1
    """``metric`` = column × this (ifHighSpeed's Mb/s as bytes per second)."""


def _fixed(metric: str, module: str, column: str, *, milli: bool = False,
           source: str | None = None) -> Recorded:
    """A fixed-point column: divided by 10^decimals of its DISPLAY-HINT (and by 1000 more
    for a column in milli-units that msoctl gives in base units)."""
    decimals = mibs.mib_object(module, column).decimals
    return Recorded(metric, module, column, 10 ** (decimals + (3 if milli else 0)),
                    source=source)


def _table() -> tuple[Recorded, ...]:
    ber = mibs.mib_object(CPC, "msoCpcLanePreFecBer")
    assert ber.syntax == LOG10_BER_SYNTAX
    thousandths = 10 ** ber.decimals
    return (
        Recorded(cpo.AGENT_UPTIME.name, *SYS_UP_TIME, 100),  # TimeTicks: hundredths
        _fixed(cpo.ENGINE_TEMPERATURE.name, CPO, "msoCpoEngineTemperature"),
        _fixed(cpo.ENGINE_TEMPERATURE_HIGH.name, CPO, "msoCpoEngineTempHighThreshold"),
        _fixed(cpo.ENGINE_VOLTAGE.name, CPO, "msoCpoEngineSupplyVoltage"),
        Recorded(cpo.ENGINE_STATUS.name, CPO, "msoCpoEngineStatus", state="state"),
        _fixed(cpo.LANE_TX_POWER.name, CPO, "msoCpoLaneTxPower", source=MSO_CPO),
        _fixed(cpo.LANE_RX_POWER.name, CPO, "msoCpoLaneRxPower", source=MSO_CPO),
        _fixed(cpo.LANE_TX_BIAS.name, CPO, "msoCpoLaneTxBias", milli=True, source=MSO_CPO),
        _fixed(cpo.ELS_OUTPUT.name, CPO, "msoCpoElsOutputPower"),
        _fixed(cpo.ELS_BIAS.name, CPO, "msoCpoElsBiasCurrent", milli=True),
        _fixed(cpo.ELS_VOLTAGE.name, CPO, "msoCpoElsVoltage"),
        _fixed(cpo.ELS_TEMPERATURE.name, CPO, "msoCpoElsTemperature"),
        Recorded(cpo.ELS_STATE.name, CPO, "msoCpoElsState", state="state"),
        Recorded(cpo.ELS_MODE.name, CPO, "msoCpoElsControlMode", state="mode"),
        Recorded(cpo.ELS_FAULT.name, CPO, "msoCpoElsFaults", state="fault"),
        _fixed(cpo.CPC_SNR.name, CPC, "msoCpcLaneSnr"),
        Recorded(cpo.CPC_BER.name, CPC, "msoCpcLanePreFecBer", thousandths, log10=True),
        Recorded(cpo.CPC_CORRECTED.name, CPC, "msoCpcLaneFecCorrected"),
        Recorded(cpo.CPC_UNCORRECTABLE.name, CPC, "msoCpcLaneFecUncorrectable"),
        Recorded(cpo.CPC_HISTOGRAM.name, CPC, "msoCpcHistogramCodewords"),
        _fixed(cpo.CPC_INSERTION_LOSS.name, CPC, "msoCpcLaneInsertionLoss"),
        _fixed(cpo.CPC_EYE_HEIGHT.name, CPC, "msoCpcLaneEyeHeight", milli=True),
        _fixed(cpo.CPC_EYE_WIDTH.name, CPC, "msoCpcLaneEyeWidth"),
        Recorded(cpo.CPC_DEGRADE.name, *THRESHOLD, thousandths, log10=True),
        # the ports' speed: the FEC interleave the FLR alert follows
        Recorded(cpo.PORT_SPEED.name, *IF_HIGH_SPEED, multiplier=125_000, source=MSO_CPO),
    )


COLUMNS: tuple[Recorded, ...] = _table()
"""What snmp_exporter reads, and what each becomes: the reviewable part of this module.
Not recorded: the ``_info`` metrics (engine names, where a lane is), which msoctl's
probe alone gives."""


# ---- snmp.yml -----------------------------------------------------------------------------

def _metric(recorded: Recorded) -> dict[str, Any]:
    node = mibs.mib_object(recorded.module, recorded.column)
    base = node.base_type or ""
    entry: dict[str, Any] = {"name": node.name, "oid": node.dotted.lstrip("."),
                             "help": f"{node.name} ({recorded.module}), raw as the agent "
                                     f"sends it; msoctl records it as {recorded.metric}"}
    if node.enumeration:
        entry["type"] = "EnumAsStateSet"
        entry["enum_values"] = {number: name for name, number in node.enumeration.items()}
    elif base == "BITS":
        entry["type"] = "Bits"
        entry["enum_values"] = {bit: name for name, bit in node.bits.items()}
    elif base in ("Counter32", "Counter64"):
        entry["type"] = "counter"
    else:
        entry["type"] = "gauge"
    if node.kind == "column":
        layout = _layout(recorded.module, node.name)
        entry["indexes"] = [{"labelname": INDEX_LABELS[index.name], "type": "gauge"}
                            for index in layout.index]
        if any(index.name == "ifIndex" for index in layout.index):
            if_name = mibs.table(*IF_NAME[:2]).column(IF_NAME[2])
            entry["lookups"] = [
                {"labels": ["ifIndex"], "labelname": PORT_LABEL,
                 "oid": if_name.dotted.lstrip("."), "type": "DisplayString"},
                {"labels": [], "labelname": "ifIndex"},  # no oid: drops the label
            ]
    return entry


def _layout(module: str, column: str) -> mibs.MibTable:
    for node in mibs.load().objects(module):
        if node.kind == "table":
            layout = mibs.table(module, node.name)
            if any(each.name == column for each in layout.columns):
                return layout
    raise ValueError(f"{module}::{column} is not a column of a table")


def entity_sensor_body() -> dict[str, Any]:
    """ENTITY-SENSOR-MIB's module: entPhySensorTable's five columns, raw (0.21 cannot
    scale per row: the recording rule does), each sensor's entPhysicalName and
    entPhysicalDescr looked up as labels ``name`` and ``descr``, its entPhysicalIndex as
    ``sensor``."""
    sensors = mibs.table(ENTITY_SENSOR, "entPhySensorTable")
    physical = mibs.table("ENTITY-MIB", "entPhysicalTable")
    lookups = [{"labels": [SENSOR_LABEL], "labelname": label,
                "oid": physical.column(column).dotted.lstrip("."), "type": "DisplayString"}
               for label, column in (("name", "entPhysicalName"),
                                     ("descr", "entPhysicalDescr"))]
    metrics = [{"name": column,
                "oid": sensors.column(column).dotted.lstrip("."), "type": "gauge",
                "help": f"{column} (ENTITY-SENSOR-MIB), raw as the agent sends it",
                "indexes": [{"labelname": SENSOR_LABEL, "type": "gauge"}],
                "lookups": lookups}
               for column in SENSOR_COLUMNS]
    return {"walk": [*(lookup["oid"] for lookup in lookups),
                     *(metric["oid"] for metric in metrics)],
            "get": [], "metrics": metrics, "max_repetitions": MAX_REPETITIONS}


def module_body(module: str) -> dict[str, Any]:
    """One MIB's module without its ``auth`` (walks, gets, metrics)."""
    if module == ENTITY_SENSOR:
        return entity_sensor_body()
    mine = [recorded for recorded in COLUMNS if recorded.module == module]
    if module == CPO:  # the agent's uptime once per switch, with its optics
        mine += [recorded for recorded in COLUMNS if recorded.column == SYS_UP_TIME[1]]
    if module == CPC:  # the ports' speed, with the FEC counters whose FLR follows it
        mine += [recorded for recorded in COLUMNS if recorded.column == IF_HIGH_SPEED[1]]
    walk: list[str] = []
    get: list[str] = []
    for recorded in mine:
        node = mibs.mib_object(recorded.module, recorded.column)
        if node.kind == "column":
            walk.append(node.dotted.lstrip("."))
        else:
            get.append(".".join(map(str, (*node.oid, 0))))
    if any("lookups" in _metric(recorded) for recorded in mine):
        walk.insert(0, mibs.table(*IF_NAME[:2]).column(IF_NAME[2]).dotted.lstrip("."))
    return {"walk": walk, "get": get,
            "metrics": [_metric(recorded) for recorded in mine],
            "max_repetitions": MAX_REPETITIONS}


def _credentials(device: Device) -> tuple[Any, ...]:
    access = device.snmp
    assert access is not None
    refs = tuple(None if ref is None else (ref.reference, str(ref.base))
                 for ref in (access.auth_key, access.priv_key, access.community))
    return (access.version, access.user, access.auth_protocol, access.priv_protocol,
            access.timeout_seconds, access.retries, refs)


def _groups(inventory: Inventory) -> list[tuple[str, list[Device]]]:
    """Switches with an snmp section, grouped by credentials: (module suffix, devices)."""
    switches = sorted((d for d in inventory.devices.values()
                       if d.kind == "switch" and d.snmp is not None), key=lambda d: d.name)
    grouped: dict[tuple[Any, ...], list[Device]] = {}
    for device in switches:
        grouped.setdefault(_credentials(device), []).append(device)
    if len(grouped) <= 1:
        return [("", devices) for devices in grouped.values()]
    return [(f"@{devices[0].name}", devices) for devices in grouped.values()]


def module_names(inventory: Inventory) -> dict[str, tuple[str, ...]]:
    """Switch name -> the snmp_exporter modules that read it (CPO's, CPC's)."""
    return {device.name: tuple(f"{module}{suffix}" for module in MODULES)
            for suffix, devices in _groups(inventory) for device in devices}


def targets(inventory: Inventory) -> list[dict[str, Any]]:
    """file_sd target groups for snmp_exporter (``msoctl inventory sd --snmp-exporter``):
    per switch with an snmp section, one group per module, the agent's HOST:PORT as
    the target (snmp_exporter's ``target`` parameter), the switch's name in label
    ``device`` (deploy/prometheus-snmp.yml makes it the instance), ``kind: cpo`` and
    the module in ``__param_module``."""
    from msoctl.exporter.sd import label_name

    groups = []
    modules = module_names(inventory)
    for name, names in sorted(modules.items()):
        device = inventory.devices[name]
        access = device.snmp
        assert access is not None
        host = f"[{access.host}]" if ":" in access.host else access.host
        labels = {label_name(key): value for key, value in sorted(device.labels.items())
                  if label_name(key) != "device"}
        for module in names:
            groups.append({"targets": [f"{host}:{access.port}"],
                           "labels": {**labels, "device": name, "kind": "cpo",
                                      "__param_module": module}})
    return groups


def _auth(device: Device, show_secrets: bool) -> dict[str, Any]:
    access = device.snmp
    assert access is not None

    def secret(ref: SecretRef | None) -> str | None:
        if ref is None:
            return None
        return ref.resolve() if show_secrets else f"REDACTED({ref.reference})"

    if access.version == "2c":
        return {"community": secret(access.community)}
    if access.auth_protocol not in AUTH_PROTOCOLS:
        raise ValidationError(f"{device.name}: snmp_exporter has no auth protocol "
                              f"{access.auth_protocol}")
    if access.priv_protocol not in PRIV_PROTOCOLS:
        raise ValidationError(
            f"{device.name}: priv_protocol {access.priv_protocol}: only aes128 means the same "
            "key extension in snmp_exporter as in msoctl; use aes128 for this path")
    return {"username": access.user, "security_level": "authPriv",
            "password": secret(access.auth_key),
            "auth_protocol": AUTH_PROTOCOLS[access.auth_protocol],
            "priv_protocol": PRIV_PROTOCOLS[access.priv_protocol],
            "priv_password": secret(access.priv_key)}


def snmp_config(inventory: Inventory, *, show_secrets: bool) -> dict[str, Any]:
    """The snmp.yml document (0.21 format) for the inventory's switches; secrets resolved
    (``show_secrets``) or redacted. Raises ValidationError (a protocol snmp_exporter
    cannot share with the agent, no switch with an snmp section) and InventoryError (a
    secret that cannot be read)."""
    groups = _groups(inventory)
    if not groups:
        raise ValidationError(f"{inventory.path}: no switch has an snmp section: nothing "
                              "for snmp_exporter to read")
    document: dict[str, Any] = {}
    for suffix, devices in groups:
        first = devices[0]
        access = first.snmp
        assert access is not None
        for module in MODULES:
            body = module_body(module)
            body.update(version=2 if access.version == "2c" else 3,
                        retries=access.retries, timeout=f"{access.timeout_seconds:g}s",
                        auth=_auth(first, show_secrets))
            document[f"{module}{suffix}"] = body
    return document


def render(document: dict[str, Any], *, show_secrets: bool) -> str:
    head = ("# snmp_exporter (0.21 format) configuration for the CPO/CPC tables, from "
            "`msoctl exporter snmp-config`.\n")
    if not show_secrets:
        head += ("# The SNMP secrets are REDACTED: write the file with --out FILE (mode "
                 "0600), or print them with --show-secrets.\n")
    return head + yaml.safe_dump(document, sort_keys=False, width=100)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` with mode 0600 from the first byte (a temporary file in
    the same directory, renamed into place; a device or FIFO written into:
    :mod:`msoctl.outfile`). Raises OSError."""
    write_output(path, text, private=True)


# ---- recording rules ----------------------------------------------------------------------

def _expression(recorded: Recorded) -> str:
    raw = recorded.column
    if recorded.state is not None:
        # snmp_exporter names a state set's label after the column; msoctl calls it
        # state (mode, fault): copy it over, then drop the column's own
        return (f'sum without ({raw}) (label_replace({raw}, "{recorded.state}", "$1", '
                f'"{raw}", "(.*)"))')
    scaled = raw if recorded.divisor == 1 else f"{raw} / {recorded.divisor}"
    if recorded.multiplier != 1:
        scaled = f"{raw} * {recorded.multiplier}"
    if recorded.source is not None:
        return f'label_replace({scaled}, "source", "{recorded.source}", "", "")'
    return f"10 ^ ({scaled})" if recorded.log10 else scaled


ENTITY_VALUE_EXPRESSION = (
    'entPhySensorValue * 10 ^ (3 * (entPhySensorScale - 9) - entPhySensorPrecision) '
    'and entPhySensorOperStatus == 1')
"""Each sensor's value in its type's unit (watts, amperes, °C, volts ...), RFC 3433's
scale and precision applied row by row (the five columns of a sensor carry the same
labels, so they match one to one); a sensor not ``ok`` (1) has none. Its labels
(``sensor``, ``name``, ``descr``) say what it measures, as the agent names it."""


def recording_rules() -> dict[str, Any]:
    """The recording rules' document (deploy/msoctl-cpo-recording.yml)."""
    return {"groups": [{
        "name": "msoctl-cpo-from-snmp-exporter",
        "rules": [*({"record": recorded.metric, "expr": _expression(recorded)}
                    for recorded in COLUMNS),
                  {"record": ENTITY_VALUE, "expr": ENTITY_VALUE_EXPRESSION}]}]}


def render_rules() -> str:
    return ("# Generated by `python -m msoctl.exporter.snmpconfig --rules` from the MIBs and\n"
            "# msoctl's CPO/CPC metric table; tests check that this file is what it prints.\n"
            "# snmp_exporter's raw CPO/CPC series (modules MSO-CPO-MIB, MSO-CPC-MIB of\n"
            "# `msoctl exporter snmp-config`) under the names and units of msoctl's probe.\n"
            + yaml.safe_dump(recording_rules(), sort_keys=False, width=100))


def main(argv: list[str] | None = None) -> int:
    import sys

    arguments = sys.argv[1:] if argv is None else argv
    if arguments != ["--rules"]:
        print("usage: python -m msoctl.exporter.snmpconfig --rules", file=sys.stderr)
        return 2
    sys.stdout.write(render_rules())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
