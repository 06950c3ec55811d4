"""The component table: prices, power and reach limits, as data.

A table is a YAML file (read with :mod:`drivers.yamlfile`: size and depth limits,
finite numbers, errors naming file and line). The shipped tables are in
``msoctl/design/tables/``: ``default`` (public and vendor figures, each with its
source beside it) and ``deepseek-v3`` (the assumptions of that paper's cost
comparison). A user's file of quotes is laid over one of them: it has the same
shape, any subset of it; a named entry it gives (a switch, a medium, a reach
class, a layout) replaces those fields of the entry, or adds the entry, which must
then be complete.

Sections (units in the field names):

- ``switches``: name -> ``ports``, ``speed_gbps``, ``usd``, ``watts``, ``latency_ns``;
- ``media``: name -> ``kind`` (dac, aec, aoc: one cable per link; dsp, lpo: one
  transceiver per optical end), ``speed_gbps``, ``reach_m``, ``usd``, ``watts`` (per
  cable, or per transceiver), optional ``max_loss_db`` (the channel insertion loss
  a transceiver tolerates);
- ``reach_classes``: name -> ``length_m`` (the longest link of that class);
- ``layout``: architecture -> link role -> reach class;
- ``fiber``: ``loss_db_per_km``, ``connector_loss_db``, ``propagation_ns_per_m``;
- ``ocs`` (optional): ``ports`` (duplex), ``usd_per_port``, ``watts_per_port``,
  ``insertion_loss_db``, ``connectors``;
- ``bigswitch`` (optional): ``max_external_ports`` (null: radix^2/2), ``chip_price_ratio``,
  ``chip_power_ratio`` (one chip inside, against the same chip as a switch box),
  ``chassis_usd_per_port``, ``chassis_watts_per_port``, ``internal_link_usd``,
  ``internal_link_watts``;
- ``selection``: ``baseline_kinds``, the media kinds a link may use before any what-if;
- ``scope``: ``endpoint_links`` (false: the NIC links are not counted in the cost).

Every entry may carry ``source``, ``reliability`` (high, medium, low, fitted,
assumption) and ``note``, which the study keeps but does not compute with.

Raises :class:`~drivers.yamlfile.YamlFileError` (one line with file and line).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from drivers.yamlfile import LinedDict, Section, YamlFileError, load_file, load_text, shown
from msoctl.design.architectures import NAMES as ARCHITECTURE_NAMES
from msoctl.design.fabric import LINK_ROLES
from msoctl.design.inputs import SPEEDS_GBPS

CABLE_KINDS = ("dac", "aec", "aoc")
MODULE_KINDS = ("dsp", "lpo")
KINDS = CABLE_KINDS + MODULE_KINDS
RELIABILITY = ("high", "medium", "low", "fitted", "assumption")
PROFILES = ("default", "deepseek-v3")

_NUMBER = (int, float)
_PROVENANCE: Mapping[str, Any] = {"source": str, "reliability": str, "note": str}
_SWITCH: Mapping[str, Any] = {"ports": int, "speed_gbps": int, "usd": _NUMBER, "watts": _NUMBER,
           "latency_ns": _NUMBER}
_MEDIUM: Mapping[str, Any] = {"kind": str, "speed_gbps": int, "reach_m": _NUMBER, "usd": _NUMBER,
           "watts": _NUMBER}
_MEDIUM_OPTIONAL: Mapping[str, Any] = {"max_loss_db": _NUMBER}
_REACH: Mapping[str, Any] = {"length_m": _NUMBER}
_FIBER: Mapping[str, Any] = {"loss_db_per_km": _NUMBER, "connector_loss_db": _NUMBER,
          "propagation_ns_per_m": _NUMBER}
_OCS: Mapping[str, Any] = {"ports": int, "usd_per_port": _NUMBER, "watts_per_port": _NUMBER,
        "insertion_loss_db": _NUMBER, "connectors": int}
_BIGSWITCH: Mapping[str, Any] = {"chip_price_ratio": _NUMBER, "chip_power_ratio": _NUMBER,
              "chassis_usd_per_port": _NUMBER, "chassis_watts_per_port": _NUMBER,
              "internal_link_usd": _NUMBER, "internal_link_watts": _NUMBER}
_BIGSWITCH_OPTIONAL: Mapping[str, Any] = {"max_external_ports": int}
_POSITIVE = frozenset({"ports", "speed_gbps", "reach_m", "length_m", "max_external_ports"})
_SECTIONS = {"version", "description", "switches", "media", "reach_classes", "layout",
             "fiber", "ocs", "bigswitch", "selection", "scope"}


@dataclass(frozen=True)
class Provenance:
    source: str | None = None
    reliability: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class SwitchModel:
    name: str
    ports: int
    speed_gbps: int
    usd: float
    watts: float
    latency_ns: float
    provenance: Provenance = field(default_factory=Provenance)


@dataclass(frozen=True)
class Medium:
    """A cable (priced per link) or a transceiver (priced per optical end)."""

    name: str
    kind: str
    speed_gbps: int
    reach_m: float
    usd: float
    watts: float
    max_loss_db: float | None = None
    provenance: Provenance = field(default_factory=Provenance)

    @property
    def per_end(self) -> bool:
        """True for transceivers (one per optical end), False for cables."""
        return self.kind in MODULE_KINDS


@dataclass(frozen=True)
class Fiber:
    loss_db_per_km: float
    connector_loss_db: float
    propagation_ns_per_m: float


@dataclass(frozen=True)
class OcsModel:
    ports: int
    usd_per_port: float
    watts_per_port: float
    insertion_loss_db: float
    connectors: int
    provenance: Provenance = field(default_factory=Provenance)


@dataclass(frozen=True)
class BigSwitchModel:
    chip_price_ratio: float
    chip_power_ratio: float
    chassis_usd_per_port: float
    chassis_watts_per_port: float
    internal_link_usd: float
    internal_link_watts: float
    max_external_ports: int | None = None
    provenance: Provenance = field(default_factory=Provenance)


@dataclass(frozen=True)
class ComponentTable:
    """A whole table, the profile with the user's quotes laid over it."""

    name: str
    switches: Mapping[str, SwitchModel]
    media: Mapping[str, Medium]
    reach_m: Mapping[str, float]
    layout: Mapping[str, Mapping[str, str]]
    fiber: Fiber
    baseline_kinds: tuple[str, ...]
    endpoint_links: bool
    ocs: OcsModel | None = None
    bigswitch: BigSwitchModel | None = None

    def switch(self, ports: int, speed_gbps: int) -> SwitchModel | None:
        """The switch of ``ports`` ports at ``speed_gbps``, None when the table has none."""
        for model in self.switches.values():
            if model.ports == ports and model.speed_gbps == speed_gbps:
                return model
        return None


def profile_text(name: str) -> str:
    """The YAML of the shipped profile ``name``."""
    return resources.files("msoctl.design").joinpath(
        "tables", f"{name}.yaml").read_text(encoding="utf-8")


def load_table(profile: str = "default", overrides: Path | None = None) -> ComponentTable:
    """The shipped ``profile`` with the file ``overrides`` laid over it.

    Raises :class:`YamlFileError` for an unknown profile or any problem in either file.
    """
    if profile not in PROFILES:
        raise YamlFileError(f"component profile {profile!r}: one of {', '.join(PROFILES)}")
    source = f"component profile {profile}"
    base = load_text(profile_text(profile), source)
    _check_shape(base, source, partial=False)
    name = profile
    if overrides is not None:
        extra = load_file(overrides)
        _check_shape(extra, str(overrides), partial=True, base=base)
        base = _merge(base, extra)
        name = f"{profile} + {overrides}"
    return _build(base, name, source if overrides is None else name)


def _check_shape(data: Any, source: str, *, partial: bool,
                 base: Mapping[str, Any] | None = None) -> None:
    """Field names, types and ranges of one file; ``partial`` for a file of overrides
    (an entry that is new to ``base`` must still be complete)."""
    top = Section(data, source, "component table")
    top.reject_unknown(_SECTIONS)
    top.get("description", str, default=None)
    top.get("version", int, default=None)
    base = base or {}
    none: Mapping[str, Any] = {}
    for section, required, optional in (("switches", _SWITCH, none),
                                        ("media", _MEDIUM, _MEDIUM_OPTIONAL),
                                        ("reach_classes", _REACH, none)):
        entries = _mapping(top, section, required=not partial)
        old = base.get(section) or {}
        for name in entries:
            owner = f"{section} {shown(name)}"
            _entry(entries, name, source, owner, required, optional,
                   partial=partial and name in old)
    layout = _mapping(top, "layout", required=not partial)
    for arch, roles in layout.items():
        if arch not in ARCHITECTURE_NAMES:
            raise Section(layout, source, "layout").error(
                arch, f"no such architecture; one of {', '.join(ARCHITECTURE_NAMES)}")
        part = Section(roles, source, f"layout {shown(arch)}", line=layout.line_of(arch))
        part.reject_unknown(set(LINK_ROLES))
        for role in roles:
            part.get(role, str)
    for section, required, optional in (("fiber", _FIBER, none), ("ocs", _OCS, none),
                                        ("bigswitch", _BIGSWITCH, _BIGSWITCH_OPTIONAL)):
        if section in top.data and top.data[section] is not None:
            _entry(top.data, section, source, section, required, optional,
                   partial=partial and bool(base.get(section)))
        elif section == "fiber" and not partial:
            raise top.error(None, "field 'fiber' is required")
    if "selection" in top.data:
        selection = Section(top.data["selection"], source, "selection",
                            line=_line(top.data, "selection"))
        selection.reject_unknown({"baseline_kinds"})
        kinds = selection.get("baseline_kinds", list)
        if not kinds:
            raise selection.error("baseline_kinds", "name at least one media kind")
        for kind in kinds:
            if kind not in KINDS:
                raise selection.error("baseline_kinds", f"{shown(kind)}: one of {', '.join(KINDS)}")
    elif not partial:
        raise top.error(None, "field 'selection' is required")
    if "scope" in top.data:
        scope = Section(top.data["scope"], source, "scope", line=_line(top.data, "scope"))
        scope.reject_unknown({"endpoint_links"})
        scope.get("endpoint_links", bool)


def _line(data: Any, key: str) -> int:
    return data.line_of(key) if isinstance(data, LinedDict) else 0


def _mapping(top: Section, key: str, *, required: bool) -> LinedDict:
    if key not in top.data or top.data[key] is None:
        if required:
            raise top.error(None, f"field {key!r} is required")
        empty = LinedDict()
        empty.key_lines = {}
        return empty
    value = top.data[key]
    if not isinstance(value, dict):
        raise top.error(key, "must be a mapping of named entries")
    return value  # type: ignore[return-value]


def _entry(parent: Any, name: str, source: str, owner: str, required: Mapping[str, Any],
           optional: Mapping[str, Any], *, partial: bool) -> None:
    """Check one entry: known fields, their types, no negative number, the ranges of
    ports, speeds and lengths. ``partial``: an override of an existing entry."""
    line = parent.line_of(name) if isinstance(parent, LinedDict) else 0
    entry = Section(parent[name], source, owner, line=line)
    entry.reject_unknown(set(required) | set(optional) | set(_PROVENANCE))
    values: dict[str, Any] = {}
    for key, kind in required.items():
        if not (partial and key not in entry.data):
            values[key] = entry.get(key, kind)
    for key, kind in optional.items():
        values[key] = entry.get(key, kind, default=None)
    for key, value in values.items():
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            raise entry.error(key, f"must not be negative, got {value}")
        if key in _POSITIVE and value is not None and value <= 0:
            raise entry.error(key, f"must be more than 0, got {value}")
    if values.get("speed_gbps") is not None and values["speed_gbps"] not in SPEEDS_GBPS:
        raise entry.error("speed_gbps", "one of " + ", ".join(map(str, SPEEDS_GBPS)))
    for key in _PROVENANCE:
        entry.get(key, str, default=None)
    entry.get("reliability", str, default=None, choices=RELIABILITY)
    if "kind" in values:
        entry.get("kind", str, choices=KINDS)


def _merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` laid over ``base``: mappings merge key by key, anything else replaces;
    an empty value (``key:`` alone) is no override."""
    merged = dict(base)
    for key, value in extra.items():
        if value is None:
            continue
        old = merged.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            merged[key] = _merge(old, value)
        else:
            merged[key] = value
    return merged


def _provenance(entry: Mapping[str, Any]) -> Provenance:
    return Provenance(entry.get("source"), entry.get("reliability"), entry.get("note"))


def _build(data: Mapping[str, Any], name: str, source: str) -> ComponentTable:
    switches = {key: SwitchModel(key, int(e["ports"]), int(e["speed_gbps"]), float(e["usd"]),
                                 float(e["watts"]), float(e["latency_ns"]), _provenance(e))
                for key, e in data["switches"].items()}
    seen: dict[tuple[int, int], str] = {}
    for model in switches.values():
        other = seen.setdefault((model.ports, model.speed_gbps), model.name)
        if other != model.name:
            raise YamlFileError(f"{source}: switches {other!r} and {model.name!r} are both "
                                f"{model.ports} ports of {model.speed_gbps}G; keep one")
    media = {key: Medium(key, str(e["kind"]), int(e["speed_gbps"]), float(e["reach_m"]),
                         float(e["usd"]), float(e["watts"]),
                         None if e.get("max_loss_db") is None else float(e["max_loss_db"]),
                         _provenance(e))
             for key, e in data["media"].items()}
    reach = {key: float(e["length_m"]) for key, e in data["reach_classes"].items()}
    layout = {arch: dict(roles) for arch, roles in data["layout"].items()}
    for arch, roles in layout.items():
        for role, reach_class in roles.items():
            if reach_class not in reach:
                raise YamlFileError(f"{source}: layout {arch!r} {role!r}: reach class "
                                    f"{reach_class!r} is not one of {', '.join(reach)}")
    fiber = data["fiber"]
    ocs = data.get("ocs")
    big = data.get("bigswitch")
    return ComponentTable(
        name=name, switches=switches, media=media, reach_m=reach, layout=layout,
        fiber=Fiber(float(fiber["loss_db_per_km"]), float(fiber["connector_loss_db"]),
                    float(fiber["propagation_ns_per_m"])),
        baseline_kinds=tuple(data["selection"]["baseline_kinds"]),
        endpoint_links=bool((data.get("scope") or {}).get("endpoint_links", True)),
        ocs=None if not ocs else OcsModel(
            int(ocs["ports"]), float(ocs["usd_per_port"]), float(ocs["watts_per_port"]),
            float(ocs["insertion_loss_db"]), int(ocs["connectors"]), _provenance(ocs)),
        bigswitch=None if not big else BigSwitchModel(
            float(big["chip_price_ratio"]), float(big["chip_power_ratio"]),
            float(big["chassis_usd_per_port"]), float(big["chassis_watts_per_port"]),
            float(big["internal_link_usd"]), float(big["internal_link_watts"]),
            None if big.get("max_external_ports") is None else int(big["max_external_ports"]),
            _provenance(big)))
