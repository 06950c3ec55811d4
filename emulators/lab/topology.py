"""Lab topology files: which devices exist and how fiber joins them.

Validated like inventories: every error names the file, the line and the field.
The built-in default (``default.yaml`` beside this module) is the two-campus
fabric that docs/architecture.md ("The lab") describes.

Fiber between OCSes comes in two words. A *span* (``spans:``) is a fiber pair
between two OCSes, one fiber each way, optionally amplified: what a link is carried
over. A *cable* (``cables:``) is the unit of failure: spans that run in one sheath
along one route, so one backhoe cuts every fiber of every one of them. A cable
gives the route's length and losses and a role (working, protection, spare); a span
names the cable it runs in (``cable: cable-3``), or, naming none, is in a cable of
its own named as the span. The older form, a ``cables:`` entry with ``fibers:``, is
still read: it is one span in a cable of its own, both named as the entry (so the
default topology's ``span-1`` is a span and a cable at once).

A switch (``switches:``) is one device with two faces: its NETCONF-managed
congestion model (ports ``Ethernet1..N``, a line rate, buffer sizes, and the
physical length of the fiber its long-haul ports reach the far campus over)
and its optics, a transceiver bank of the same name (``sw-a:tx1`` is
Ethernet1's transmitter) that :attr:`Topology.transceivers` lists too, so
patches name a switch's ports like any other transceivers'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from drivers.switch.link import PORT_SPEEDS_BPS
from drivers.yamlfile import LinedList, Section, YamlFileError, load_file, load_text
from emulators.lab.hostspec import HostSpec, parse_hosts

_NAME = re.compile(r"[a-z][a-z0-9-]{0,62}")  # matched whole
_PORT = re.compile(r"^(?P<element>[a-z][a-z0-9-]*):(?P<local>[A-Za-z]*)(?P<number>[0-9]{1,6})$")

PATCH_LENGTH_KM = 0.005
PATCH_CONNECTOR_LOSS_DB = 0.3
SWITCH_PORT_PREFIX = "Ethernet"
DEFAULT_SWITCH_BUFFER_BYTES = 8_000_000_000
DEFAULT_SWITCH_LOSSLESS_POOL_BYTES = 4_000_000_000
MAX_LENGTH_KM = 200.0
MAX_LOSS_DB_PER_KM = 10.0
MAX_CONNECTOR_LOSS_DB = 30.0
OLD_TEST_SETS_KEY = "bench"
"""The first name of the ``test_sets`` section, still read (one of the two, not both)."""
MAX_BOOT_SECONDS = 600.0
SWITCH_MANAGEMENT = ("netconf", "gnmi", "none")
SWITCH_MODELS = {"msoctl": "netconf", "openconfig": "gnmi", "sonic": "gnmi"}
"""The configuration model a lab switch speaks, and the management it is served over."""
ENTITY_LAYOUTS = ("sonic", "arista", "cisco", "shuffled")
"""The entity layouts a switch's SNMP agent can serve (emulators/cpo/entity.py's, named
here so that reading a topology does not import the agent)."""
DOM_MIBS = ("hh3c",)
SWITCH_AUGMENTS = ("arista", "msoctl")
"""An OpenConfig switch's augments: Arista's published PFC augments with the project's
fast CNP and headroom, or the project's alone."""
SPAN_ROLES = ("working", "protection", "spare")
MAX_FIBER_COUNT = 1024


@dataclass(frozen=True)
class OcsSpec:
    name: str
    size: int
    campus: str
    serial: str | None
    boot_seconds: float
    reply_form: str = "polatis"
    """How it answers: ``polatis`` (as real units: quoted PORT?, parenthesised power
    list) or ``bare`` (plain numbers and lists)."""
    power_monitors: bool = True
    """``false`` models a unit without power monitors (``:PMON:POW?`` undefined)."""
    error_queue: str = "per-client"
    """``per-client`` (each connection its own error queue and status registers) or
    ``shared`` (one for everybody, as on some real units)."""
    alarms: bool = True
    """``false`` models a unit without loss-of-light alarms (their headers undefined, no
    alarm connection)."""
    extensions: bool = True
    """``false`` models a unit without the project's LC extension (cell temperature,
    switching time, insertion-loss table) and without boot modes."""
    identity: str = "msoctl"
    """``*IDN?``: ``msoctl`` (``MegaScaleOut,LCOCS-64x64,...``) or ``polatis``
    (``Polatis,N-VST-64x64-HU1-DMHNV,...``)."""
    error_queries: str = "all"
    """``all``: SCPI-99's optional error queries (``:SYST:ERR:ALL?``, ``:COUN?``,
    ``:CODE?``) besides ``:SYST:ERR?``; ``next``: ``:SYST:ERR?`` only."""


@dataclass(frozen=True)
class TransceiverSpec:
    name: str
    count: int
    power_dbm: float
    campus: str


@dataclass(frozen=True)
class SwitchSpec:
    name: str
    campus: str
    ports: int
    speed: str
    cable_length_km: float
    """The fiber from each port to its partner at the far campus (patches, OCS, span)."""
    buffer_bytes: int
    lossless_pool_bytes: int
    power_dbm: float
    management: str = "netconf"
    """``netconf``: served over NETCONF with its CPO/CPC telemetry over SNMP; ``gnmi``:
    its configuration served over gNMI (no SNMP); ``none``: its optics only (a fabric of
    hundreds of switches whose management is not what the lab is for)."""
    model: str = "msoctl"
    """What its configuration speaks: ``msoctl`` (NETCONF), ``openconfig`` or ``sonic``
    (gNMI)."""
    augments: str = "arista"
    """An OpenConfig switch's augments (:data:`SWITCH_AUGMENTS`)."""
    entity_sensors: str | None = None
    """Its SNMP agent also serves its optics as ENTITY-MIB/ENTITY-SENSOR-MIB rows,
    numbered as this agent numbers them (``sonic``, ``arista``, ``cisco``, ``shuffled``)."""
    dom_mib: str | None = None
    """Its SNMP agent also serves a vendor DOM MIB (``hh3c``)."""
    host_ports: int = 0
    """Ports for servers' NICs, after the long-haul ones (``Ethernet<ports+1>`` on): the
    topology's hosts attach to them (emulators/lab/hostspec.py)."""

    @property
    def port_names(self) -> list[str]:
        """``Ethernet1..N``; port n's optics are the bank's ``txN`` and ``rxN``."""
        return [f"{SWITCH_PORT_PREFIX}{n}" for n in range(1, self.ports + 1)]

    @property
    def host_port_names(self) -> list[str]:
        """The ports servers' NICs attach to, after the long-haul ones."""
        return [f"{SWITCH_PORT_PREFIX}{n}"
                for n in range(self.ports + 1, self.ports + self.host_ports + 1)]


@dataclass(frozen=True)
class AmplifierSpec:
    name: str
    campus: str
    serial: str | None
    gain_min_db: float
    gain_max_db: float
    output_power_max_dbm: float
    vendor_page: bool = True
    """``false`` models a module without the project's vendor page B0h, identifying as
    another maker's part (the driver then reads the standard CMIS pages only)."""
    monitors: bool = True
    """``false`` models a module that advertises no module or lane monitor (page 01h
    bytes 159-160 00h: no temperature, Vcc or Rx power)."""


@dataclass(frozen=True)
class FiberSpec:
    name: str
    from_port: str
    to_port: str
    length_km: float
    loss_db_per_km: float
    connector_loss_db: float
    cable: str | None = None
    """The cable the fiber runs in (a span's fibers); ``None`` for a patch."""
    amplifier: str | None = None
    """An amplifier inserted at the far end: fiber out -> amplifier in, amplifier out -> to."""
    span: str | None = None
    """The span the fiber belongs to; ``None`` for a patch."""


@dataclass(frozen=True)
class SpanSpec:
    """Fibers between two OCSes that run side by side (a pair: one each way), in a cable."""

    name: str
    cable: str
    role: str
    length_km: float
    fibers: tuple[FiberSpec, ...]


@dataclass(frozen=True)
class CableSpec:
    """Spans that fail together: they run in one sheath along one route, so one cut
    darkens every fiber of every one of them."""

    name: str
    role: str
    length_km: float
    spans: tuple[str, ...]
    fibers: tuple[FiberSpec, ...]
    """Every fiber of its spans, in order."""


@dataclass(frozen=True)
class AcceptanceSpec:
    """An acceptance test set on an OCS: a tunable laser through a fan-out into its free
    ingress ports, its free egress ports each to a port of a multiport power meter."""

    ocs: str
    laser: str
    meter: str
    laser_range: bool = True
    """``false`` models a laser without MIN/MAX range queries (``:SOUR1:WAV? MIN`` is
    refused -108)."""
    meter_all_ports: bool = True
    """``false`` models a meter without the all-ports queries (``:READ:POW:ALL:CSV?``
    undefined)."""
    meter_logging: bool = True
    """``false`` models a meter without logging (its ``:SENS<n>:CHAN1:FUNC`` headers
    undefined)."""
    error_queries: str = "all"
    """``all``: both instruments answer SCPI-99's optional error queries besides
    ``:SYST:ERR?``; ``next``: ``:SYST:ERR?`` only."""


@dataclass(frozen=True)
class LinkSpec:
    """A fabric link between two switch ports, carried over a working cable (and a
    protection cable to fall back on)."""

    name: str
    a: str  # switch:EthernetN
    b: str
    working: str
    protection: str | None = None


@dataclass
class Topology:
    name: str
    source: str
    ocs: list[OcsSpec] = field(default_factory=list)
    transceivers: list[TransceiverSpec] = field(default_factory=list)
    """Every transceiver bank, a switch's optics included."""
    switches: list[SwitchSpec] = field(default_factory=list)
    amplifiers: list[AmplifierSpec] = field(default_factory=list)
    patches: list[FiberSpec] = field(default_factory=list)
    spans: list[SpanSpec] = field(default_factory=list)
    cables: list[CableSpec] = field(default_factory=list)
    links: list[LinkSpec] = field(default_factory=list)
    test_sets: list[AcceptanceSpec] = field(default_factory=list)
    hosts: list[HostSpec] = field(default_factory=list)
    _patch_index: tuple[int, dict[str, FiberSpec], dict[str, FiberSpec]] | None = field(
        default=None, repr=False, compare=False)

    def fibers(self) -> list[FiberSpec]:
        """Every fiber: the patches, then each span's."""
        return [*self.patches, *(f for span in self.spans for f in span.fibers)]

    def _patches_by_end(self) -> tuple[dict[str, FiberSpec], dict[str, FiberSpec]]:
        """Patches by the port they leave and by the port they feed (rebuilt when the
        patches change: thousands of link ends must not each scan them all)."""
        if self._patch_index is None or self._patch_index[0] != len(self.patches):
            self._patch_index = (len(self.patches), {f.from_port: f for f in self.patches},
                                 {f.to_port: f for f in self.patches})
        return self._patch_index[1], self._patch_index[2]

    def ocs_ports_of(self, switch_port: str) -> tuple[str, str] | None:
        """``sw-a:Ethernet1`` -> (the OCS ingress its transmitter is patched into, the OCS
        egress that feeds its receiver), as ``ocs:port``; None when not patched to an OCS."""
        switch, _, port = switch_port.partition(":")
        number = port.removeprefix(SWITCH_PORT_PREFIX)
        ocs_names = {o.name for o in self.ocs}
        leaving, feeding = self._patches_by_end()
        out, back = leaving.get(f"{switch}:tx{number}"), feeding.get(f"{switch}:rx{number}")
        tx = out.to_port if out and out.to_port.split(":")[0] in ocs_names else None
        rx = back.from_port if back and back.from_port.split(":")[0] in ocs_names else None
        return None if tx is None or rx is None else (tx, rx)

    def span_fibers(self, span: SpanSpec) -> tuple[FiberSpec, FiberSpec] | None:
        """A span that is one fiber each way between two OCSes, its two fibers; None for
        any other span."""
        ocs_names = {o.name for o in self.ocs}
        if len(span.fibers) != 2:
            return None
        first, second = span.fibers
        ends = [(f.from_port.split(":")[0], f.to_port.split(":")[0]) for f in span.fibers]
        if any(a not in ocs_names or b not in ocs_names or a == b for a, b in ends):
            return None
        if ends[0] != ends[1][::-1]:
            return None
        return first, second

    def span(self, name: str) -> SpanSpec | None:
        return next((s for s in self.spans if s.name == name), None)

    def cable(self, name: str) -> CableSpec | None:
        return next((c for c in self.cables if c.name == name), None)


def default_topology_text() -> str:
    return resources.files("emulators.lab").joinpath("default.yaml").read_text(encoding="utf-8")


def load_topology(path: Path | None = None) -> Topology:
    if path is None:
        return parse_topology(load_text(default_topology_text(), "<default topology>"),
                              "<default topology>")
    return parse_topology(load_file(path), str(path))


def _items(top: Section, key: str) -> list[tuple[Any, int]]:
    value = top.get(key, list, default=[])
    lines = value.item_lines if isinstance(value, LinedList) else [0] * len(value)
    return list(zip(value, lines, strict=True))


def _unit_kind(section: Section) -> dict[str, Any]:
    """What kind of unit an ``ocs`` entry is: ``plain: true`` is a unit of the family as
    found on site (no project extensions, no alarms, the Polatis identity); each of
    ``alarms``, ``extensions``, ``identity`` and ``error_queries`` given beside it wins."""
    plain = section.get("plain", bool, default=False)
    return {
        "alarms": section.get("alarms", bool, default=not plain),
        "extensions": section.get("extensions", bool, default=not plain),
        "identity": section.get("identity", str, default="polatis" if plain else "msoctl",
                                choices=("msoctl", "polatis")),
        "error_queries": section.get("error_queries", str, default="all",
                                     choices=("all", "next")),
    }


def _amplifier_kind(section: Section) -> dict[str, Any]:
    """What kind of module an ``amplifiers`` entry is: ``plain: true`` is a plain CMIS
    module (no vendor page, another maker's identity, no monitor advertised); each of
    ``vendor_page`` and ``monitors`` given beside it wins."""
    plain = section.get("plain", bool, default=False)
    return {
        "vendor_page": section.get("vendor_page", bool, default=not plain),
        "monitors": section.get("monitors", bool, default=not plain),
    }


def _number(section: Section, key: str, default: float, low: float, high: float,
            unit: str) -> float:
    """A finite number field within ``low``..``high`` (YamlFileError naming the line)."""
    value: float = section.get(key, float, default=default)
    if not low <= value <= high:
        raise section.error(key, f"must be {low:g}..{high:g} {unit}")
    return value


def _expand_port(section: Section, key: str, offset: int, ports: dict[str, set[str]]) -> str:
    text = section.get(key, str)
    match = _PORT.match(text)
    if not match:
        raise section.error(key, f"must be element:port (like ocs-a:65 or sw-a:tx1), got {text!r}")
    element = match["element"]
    port = f"{match['local']}{int(match['number']) + offset}"
    if element not in ports:
        raise section.error(key, f"no device {element!r} in this topology")
    if port not in ports[element]:
        raise section.error(key, f"{element} has no port {port}")
    return f"{element}:{port}"


def parse_topology(data: Any, source: str) -> Topology:
    top = Section(data, source, "topology")
    top.reject_unknown({"name", "ocs", "transceivers", "switches", "amplifiers", "patches",
                        "spans", "cables", "links", "test_sets", "hosts", OLD_TEST_SETS_KEY})
    topology = Topology(name=top.get("name", str, default="lab"), source=source)
    names: set[str] = set()
    inputs: dict[str, set[str]] = {}
    outputs: dict[str, set[str]] = {}

    def claim(section: Section) -> str:
        name: str = section.get("name", str)
        if not _NAME.fullmatch(name):
            raise section.error("name", "must be lower-case letters, digits and '-'")
        if name in names:
            raise section.error("name", f"{name!r} is defined twice")
        names.add(name)
        return name

    for item, line in _items(top, "ocs"):
        section = Section(item, source, "ocs entry", line=line)
        section.reject_unknown({"name", "size", "campus", "serial", "boot_seconds",
                                "reply_form", "power_monitors", "error_queue", "alarms",
                                "plain", "extensions", "identity", "error_queries"})
        name = claim(section)
        section.owner = f"ocs {name!r}"
        size = section.get("size", int, default=64)
        if not 1 <= size <= 512:
            raise section.error("size", "must be 1..512")
        spec = OcsSpec(name, size, section.get("campus", str, default=""),
                       section.get("serial", str, default=None),
                       _number(section, "boot_seconds", 2.0, 0.0, MAX_BOOT_SECONDS, "s"),
                       reply_form=section.get("reply_form", str, default="polatis",
                                              choices=("polatis", "bare")),
                       power_monitors=section.get("power_monitors", bool, default=True),
                       error_queue=section.get("error_queue", str, default="per-client",
                                               choices=("per-client", "shared")),
                       **_unit_kind(section))
        topology.ocs.append(spec)
        inputs[name] = {str(p) for p in range(1, size + 1)}
        outputs[name] = {str(p) for p in range(size + 1, 2 * size + 1)}

    for item, line in _items(top, "transceivers"):
        section = Section(item, source, "transceivers entry", line=line)
        section.reject_unknown({"name", "count", "power_dbm", "campus"})
        name = claim(section)
        section.owner = f"transceivers {name!r}"
        count = section.get("count", int)
        if not 1 <= count <= 1024:
            raise section.error("count", "must be 1..1024")
        power = section.get("power_dbm", float, default=1.0)
        if not -20.0 <= power <= 20.0:
            raise section.error("power_dbm", "must be -20..20 dBm")
        topology.transceivers.append(
            TransceiverSpec(name, count, power, section.get("campus", str, default=""))
        )
        inputs[name] = {f"rx{n}" for n in range(1, count + 1)}
        outputs[name] = {f"tx{n}" for n in range(1, count + 1)}

    for item, line in _items(top, "switches"):
        section = Section(item, source, "switches entry", line=line)
        section.reject_unknown({"name", "campus", "ports", "speed", "cable_length_km",
                                "buffer_bytes", "lossless_pool_bytes", "power_dbm",
                                "management", "model", "augments", "entity_sensors",
                                "dom_mib", "host_ports"})
        name = claim(section)
        section.owner = f"switch {name!r}"
        count = section.get("ports", int, default=8)
        if not 1 <= count <= 1024:
            raise section.error("ports", "must be 1..1024")
        speed = section.get("speed", str, default="400G", choices=tuple(PORT_SPEEDS_BPS))
        length = section.get("cable_length_km", float)
        if not 0 < length <= 200:
            raise section.error("cable_length_km", "must be more than 0 and at most 200 km")
        buffer = section.get("buffer_bytes", int, default=DEFAULT_SWITCH_BUFFER_BYTES)
        if not 1_000_000 <= buffer <= 2**48:
            raise section.error("buffer_bytes", "must be 1 MB..256 TB (1000000..2^48)")
        pool = section.get("lossless_pool_bytes", int,
                           default=min(DEFAULT_SWITCH_LOSSLESS_POOL_BYTES, buffer // 2))
        if not 0 <= pool <= buffer:
            raise section.error("lossless_pool_bytes",
                                f"must be 0..buffer_bytes ({buffer})")
        power = section.get("power_dbm", float, default=1.0)
        if not -20.0 <= power <= 20.0:
            raise section.error("power_dbm", "must be -20..20 dBm")
        campus = section.get("campus", str, default="")
        model = section.get("model", str, default="msoctl", choices=tuple(SWITCH_MODELS))
        management = section.get("management", str, default=SWITCH_MODELS[model],
                                 choices=SWITCH_MANAGEMENT)
        if management not in (SWITCH_MODELS[model], "none"):
            raise section.error("management", f"a {model} switch is managed over "
                                f"{SWITCH_MODELS[model]} (or none)")
        augments = section.get("augments", str, default="arista", choices=SWITCH_AUGMENTS)
        if "augments" in section.data and model != "openconfig":
            raise section.error("augments", "only an openconfig switch has augments")
        entity_sensors = section.get("entity_sensors", str, default=None,
                                     choices=ENTITY_LAYOUTS)
        dom_mib = section.get("dom_mib", str, default=None, choices=DOM_MIBS)
        for key in ("entity_sensors", "dom_mib"):
            if key in section.data and management != "netconf":
                raise section.error(key, "only a switch whose telemetry is served over SNMP "
                                    "(management: netconf) has an SNMP agent")
        host_ports = section.get("host_ports", int, default=0)
        if not 0 <= host_ports <= 1024 - count:
            raise section.error("host_ports", f"must be 0..{1024 - count} (at most 1024 ports "
                                "in all)")
        topology.switches.append(SwitchSpec(name, campus, count, speed, length, buffer, pool,
                                            power, management, model, augments,
                                            entity_sensors, dom_mib, host_ports))
        topology.transceivers.append(TransceiverSpec(name, count, power, campus))
        inputs[name] = {f"rx{n}" for n in range(1, count + 1)}
        outputs[name] = {f"tx{n}" for n in range(1, count + 1)}

    for item, line in _items(top, "amplifiers"):
        section = Section(item, source, "amplifiers entry", line=line)
        section.reject_unknown({"name", "campus", "serial", "gain_min_db", "gain_max_db",
                                "output_power_max_dbm", "plain", "vendor_page", "monitors"})
        name = claim(section)
        section.owner = f"amplifier {name!r}"
        gain_min = section.get("gain_min_db", float, default=5.0)
        gain_max = section.get("gain_max_db", float, default=25.0)
        if not 0.0 <= gain_min <= 40.0:
            raise section.error("gain_min_db", "must be 0..40 dB")
        if not gain_min < gain_max <= 40.0:
            raise section.error("gain_max_db", f"must be more than gain_min_db ({gain_min}) "
                                "and at most 40 dB")
        output_max = section.get("output_power_max_dbm", float, default=20.0)
        if not -10.0 <= output_max <= 30.0:
            raise section.error("output_power_max_dbm", "must be -10..30 dBm")
        topology.amplifiers.append(AmplifierSpec(
            name, section.get("campus", str, default=""), section.get("serial", str, default=None),
            gain_min, gain_max, output_max, **_amplifier_kind(section)))
    amplifier_names = {a.name for a in topology.amplifiers}
    placed: set[str] = set()

    fed: set[str] = set()

    def fiber(section: Section, defaults: dict[str, float], cable: str | None) -> list[FiberSpec]:
        count = section.get("count", int, default=1)
        if not 1 <= count <= MAX_FIBER_COUNT:
            raise section.error("count", f"must be 1..{MAX_FIBER_COUNT}")
        length_km = _number(section, "length_km", defaults["length_km"], 0.0, MAX_LENGTH_KM,
                            "km")
        loss_db_per_km = _number(section, "loss_db_per_km", defaults["loss_db_per_km"], 0.0,
                                 MAX_LOSS_DB_PER_KM, "dB/km")
        connector_loss_db = _number(section, "connector_loss_db",
                                    defaults["connector_loss_db"], 0.0, MAX_CONNECTOR_LOSS_DB,
                                    "dB")
        made = []
        for offset in range(count):
            start = _expand_port(section, "from", offset, outputs)
            end = _expand_port(section, "to", offset, inputs)
            if end in fed:
                raise section.error("to", f"{end} is already fed by another fiber")
            fed.add(end)
            made.append(FiberSpec(
                name=f"{start}>{end}".replace(":", "."),
                from_port=start,
                to_port=end,
                length_km=length_km,
                loss_db_per_km=loss_db_per_km,
                connector_loss_db=connector_loss_db,
                cable=cable,
            ))
        return made

    patch_defaults = {"length_km": PATCH_LENGTH_KM, "loss_db_per_km": 0.4,
                      "connector_loss_db": PATCH_CONNECTOR_LOSS_DB}
    fiber_fields = {"from", "to", "count", "length_km", "loss_db_per_km", "connector_loss_db"}
    for item, line in _items(top, "patches"):
        section = Section(item, source, "patch", line=line)
        section.reject_unknown(fiber_fields)
        topology.patches.extend(fiber(section, patch_defaults, None))

    def route(section: Section) -> dict[str, float]:
        """A cable's length and its fibers' default losses (a route's figures)."""
        length = section.get("length_km", float)
        if not 0 < length <= MAX_LENGTH_KM:
            raise section.error("length_km", "must be more than 0 and at most 200 km")
        return {
            "length_km": length,
            "loss_db_per_km": _number(section, "loss_db_per_km", 0.22, 0.0, MAX_LOSS_DB_PER_KM,
                                      "dB/km"),
            "connector_loss_db": _number(section, "connector_loss_db", 0.5, 0.0,
                                         MAX_CONNECTOR_LOSS_DB, "dB"),
        }

    def span(section: Section, name: str, cable: str, role: str, defaults: dict[str, float],
             owner: str) -> SpanSpec:
        span_fibers: list[FiberSpec] = []
        for sub, sub_line in _items(section, "fibers"):
            fiber_section = Section(sub, source, f"{owner} fiber", line=sub_line)
            fiber_section.reject_unknown({"from", "to", "connector_loss_db", "loss_db_per_km",
                                          "amplifier"})
            amplifier = fiber_section.get("amplifier", str, default=None)
            if amplifier is not None:
                if amplifier not in amplifier_names:
                    raise fiber_section.error("amplifier", f"no amplifier {amplifier!r} in the "
                                              "amplifiers section")
                if amplifier in placed:
                    raise fiber_section.error("amplifier", f"{amplifier} is already on "
                                              "another fiber")
                placed.add(amplifier)
            for made in fiber(fiber_section, defaults, cable):
                span_fibers.append(replace(made, name=f"{name}/{len(span_fibers) + 1}",
                                           amplifier=amplifier, span=name))
        if not span_fibers:
            raise section.error("fibers", "a cable needs at least one fiber")
        made_span = SpanSpec(name, cable, role, defaults["length_km"], tuple(span_fibers))
        topology.spans.append(made_span)
        return made_span

    def role_of(section: Section) -> str:
        role: str = section.get("role", str, default="working", choices=SPAN_ROLES)
        return role

    # ``cables:`` names the groups of spans that fail together (a name, a route's length
    # and losses, a role); an entry with ``fibers:`` is the older form, a span in a cable
    # of its own. ``spans:`` are the fiber pairs, each in the cable it names, or in one of
    # its own (named as the span) when it names none.
    declared: dict[str, tuple[Section, dict[str, float], str]] = {}
    order: list[str] = []  # cables in the order the file gives them
    spans_in: dict[str, list[SpanSpec]] = {}
    for item, line in _items(top, "cables"):
        section = Section(item, source, "cable", line=line)
        section.reject_unknown({"name", "role", "length_km", "loss_db_per_km",
                                "connector_loss_db", "fibers"})
        name = claim(section)
        section.owner = f"cable {name!r}"
        defaults = route(section)
        role = role_of(section)
        order.append(name)
        if "fibers" in section.data:
            spans_in[name] = [span(section, name, name, role, defaults, f"cable {name!r}")]
        else:
            declared[name] = (section, defaults, role)
            spans_in[name] = []
    for item, line in _items(top, "spans"):
        section = Section(item, source, "span", line=line)
        section.reject_unknown({"name", "cable", "role", "length_km", "loss_db_per_km",
                                "connector_loss_db", "fibers"})
        name = claim(section)
        section.owner = f"span {name!r}"
        cable = section.get("cable", str, default=None)
        if cable is None:
            role, defaults = role_of(section), route(section)
            cable = name
            order.append(name)
            spans_in[name] = []
        else:
            if cable not in declared:
                raise section.error("cable", f"no cable {cable!r} among the cables without "
                                    "fibers of the cables section")
            for key in ("length_km", "role"):
                if key in section.data:
                    raise section.error(key, f"a span in a cable has its cable's {key} "
                                        f"(given for {cable})")
            _, cable_defaults, role = declared[cable]
            defaults = {
                "length_km": cable_defaults["length_km"],
                "loss_db_per_km": _number(section, "loss_db_per_km",
                                          cable_defaults["loss_db_per_km"], 0.0,
                                          MAX_LOSS_DB_PER_KM, "dB/km"),
                "connector_loss_db": _number(section, "connector_loss_db",
                                             cable_defaults["connector_loss_db"], 0.0,
                                             MAX_CONNECTOR_LOSS_DB, "dB"),
            }
        spans_in[cable].append(span(section, name, cable, role, defaults, f"span {name!r}"))
    for name in order:
        members = spans_in[name]
        if not members:
            raise declared[name][0].error(None, "no span runs in it: a cable needs at least "
                                          "one fiber (give it fibers:, or name it in the "
                                          "cable: of a span)")
        topology.cables.append(CableSpec(
            name, members[0].role, members[0].length_km, tuple(s.name for s in members),
            tuple(f for s in members for f in s.fibers)))

    if not topology.ocs:
        raise YamlFileError(f"{source}: topology: at least one ocs is needed")
    _parse_links(top, source, topology, names)
    _parse_test_sets(top, source, topology, names)
    topology.hosts = parse_hosts(top, source, {s.name: s for s in topology.switches}, claim)
    return topology


def _parse_test_sets(top: Section, source: str, topology: Topology, names: set[str]) -> None:
    ocs_names = {o.name for o in topology.ocs}
    tested: set[str] = set()
    key = "test_sets"
    if OLD_TEST_SETS_KEY in top.data:  # the section's first name, still read
        if key in top.data:
            raise top.error(OLD_TEST_SETS_KEY, f"is the old name of {key}: give one of them")
        key = OLD_TEST_SETS_KEY
    for item, line in _items(top, key):
        section = Section(item, source, "test set entry", line=line)
        section.reject_unknown({"ocs", "laser", "meter", "plain", "laser_range",
                                "meter_all_ports", "meter_logging", "error_queries"})
        ocs = section.get("ocs", str)
        if ocs not in ocs_names:
            raise section.error("ocs", f"no ocs {ocs!r} in the ocs section")
        if ocs in tested:
            raise section.error("ocs", f"{ocs} has another test set already")
        tested.add(ocs)
        section.owner = f"test set on {ocs!r}"
        instruments = []
        for key in ("laser", "meter"):
            name = section.get(key, str)
            if not _NAME.fullmatch(name):
                raise section.error(key, "must be lower-case letters, digits and '-'")
            if name in names:
                raise section.error(key, f"{name!r} is defined twice")
            names.add(name)
            instruments.append(name)
        topology.test_sets.append(AcceptanceSpec(ocs, *instruments,
                                                 **_instrument_kind(section)))


def _instrument_kind(section: Section) -> dict[str, Any]:
    """What kind of instruments a ``test_sets`` entry has: ``plain: true`` is a laser and
    a meter without any optional feature the drivers use (no range queries, no
    all-ports reading, no logging, ``:SYST:ERR?`` only); each of ``laser_range``,
    ``meter_all_ports``, ``meter_logging`` and ``error_queries`` given beside it wins."""
    plain = section.get("plain", bool, default=False)
    return {
        "laser_range": section.get("laser_range", bool, default=not plain),
        "meter_all_ports": section.get("meter_all_ports", bool, default=not plain),
        "meter_logging": section.get("meter_logging", bool, default=not plain),
        "error_queries": section.get("error_queries", str, default="next" if plain else "all",
                                     choices=("all", "next")),
    }


def _parse_links(top: Section, source: str, topology: Topology, names: set[str]) -> None:
    spans = {s.name: s for s in topology.spans}
    switches = {s.name: s for s in topology.switches}
    used: set[str] = set()
    carried: dict[str, str] = {}  # working span -> its link
    for item, line in _items(top, "links"):
        section = Section(item, source, "link", line=line)
        section.reject_unknown({"name", "a", "b", "working", "protection"})
        name = section.get("name", str)
        if not _NAME.fullmatch(name):
            raise section.error("name", "must be lower-case letters, digits and '-'")
        if name in names:
            raise section.error("name", f"{name!r} is defined twice")
        names.add(name)
        section.owner = f"link {name!r}"
        ocs_of: dict[str, str] = {}
        for key in ("a", "b"):
            end = section.get(key, str)
            switch, _, port = end.partition(":")
            spec = switches.get(switch)
            if spec is None or port not in spec.port_names:
                raise section.error(key, f"{end!r} is not a switch port (like sw-a:Ethernet1)")
            if end in used:
                raise section.error(key, f"{end} is on another link already")
            used.add(end)
            found = topology.ocs_ports_of(end)
            if found is None:
                raise section.error(key, f"{end} is not patched to an OCS both ways")
            ocs_of[key] = found[0].split(":")[0]
        roles: dict[str, SpanSpec | None] = {}
        for role in ("working", "protection"):
            span_name = (section.get(role, str) if role == "working"
                         else section.get(role, str, default=None))
            if span_name is None:
                roles[role] = None
                continue
            span = spans.get(span_name)
            fibers = None if span is None else topology.span_fibers(span)
            if span is None or fibers is None:
                raise section.error(role, f"{span_name!r} is not a cable or span of one fiber "
                                    "each way between two OCSes")
            ends = {fibers[0].from_port.split(":")[0], fibers[0].to_port.split(":")[0]}
            if ends != {ocs_of["a"], ocs_of["b"]}:
                raise section.error(role, f"{span_name} joins {' and '.join(sorted(ends))}, "
                                    f"not the OCSes of the link's ends")
            roles[role] = span
        working, protection = roles["working"], roles["protection"]
        assert working is not None
        if working.name in carried:
            raise section.error("working", f"{working.name} already carries link "
                                f"{carried[working.name]!r} (one link per fiber pair; links "
                                "may share a protection span)")
        carried[working.name] = name
        if protection is not None and protection.name == working.name:
            raise section.error("protection", "must be another span, on another cable than "
                                "the working one")
        if protection is not None and protection.cable == working.cable:
            raise section.error("protection", f"{protection.name} is in {working.cable} with "
                                f"the working span {working.name}: it must be on another "
                                "cable than the working one (one cut would darken both)")
        topology.links.append(LinkSpec(name, section.get("a", str), section.get("b", str),
                                       working.name, None if protection is None
                                       else protection.name))
