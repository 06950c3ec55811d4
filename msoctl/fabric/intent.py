"""The fabric intent file: one YAML file for the whole fabric, checked with its lines.

::

    links:                          # which links are up, and on which of their spans
      link-1: {span: working}       # state: up (default) or down; span: working (default)
      link-2: {state: down}         #   or protection
    ocs:                            # optional: an OCS's whole map
      ocs-a:
        connections: ["3:67", "4:68"]   # exactly these, plus what the links above need
    amplifiers:                     # optional: settings per amplifier
      amp-1: {mode: gain, gain_db: 18.0, tilt_db: 0.0}   # and/or output_power_dbm
    switches:                       # optional: congestion control per switch
      sw-a: {want: want-cc.yaml}    # a WANT file (msoctl switch plan writes one),
      sw-b:                         #   relative to this file, or the tree inline
        want:
          switch: {...}
    verify:                         # optional: the end-to-end light check
      timeout_seconds: 10           # how long light may take to arrive (default 10)
      tolerance_db: 4               # a hop this far under its budget has lost it

Every name must be in the inventory, of the right kind; a link needs the span it is
put on; raw map connections are ``IN:OUT``; amplifier fields are numbers, checked
against the module's ranges when planned; a WANT tree is checked against the YANG
module. Each error names the file and the line. ALS is not part of the intent: the
fabric never changes it (``msoctl amp als`` does, with its safety override).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drivers.errors import ValidationError
from drivers.switch.intent import TOP as INTENT_TOP
from drivers.switch.intent import from_dict
from drivers.switch.tree import check
from drivers.yamlfile import (
    LinedDict,
    LinedList,
    Section,
    YamlFileError,
    load_text,
    read_text,
    shown,
)
from msoctl.fabric.lightpath import DEFAULT_TOLERANCE_DB
from msoctl.inventory import DEVICE_NAME, Inventory
from msoctl.links import LINK_NAME
from msoctl.ops.ocs import parse_pair
from msoctl.ops.switch import Want, load_want

DEFAULT_VERIFY_TIMEOUT_SECONDS = 10.0
AMP_MODES = ("gain", "power")


@dataclass(frozen=True)
class LinkIntent:
    name: str
    up: bool
    role: str  # working | protection (the span when up)
    line: int


@dataclass(frozen=True)
class OcsIntent:
    name: str
    connections: dict[int, int]
    lines: dict[int, int]  # ingress -> line of its connection
    line: int


@dataclass(frozen=True)
class AmpIntent:
    name: str
    mode: str | None
    gain_db: float | None
    output_power_dbm: float | None
    tilt_db: float | None
    line: int

    def settings(self) -> dict[str, Any]:
        return {k: v for k, v in (("mode", self.mode), ("gain_db", self.gain_db),
                                  ("output_power_dbm", self.output_power_dbm),
                                  ("tilt_db", self.tilt_db)) if v is not None}


@dataclass(frozen=True)
class SwitchIntent:
    name: str
    want: Want
    source: str  # the WANT file, or "INTENT:LINE" for an inline tree
    line: int


@dataclass
class FabricIntent:
    path: Path
    sha256: str
    links: dict[str, LinkIntent] = field(default_factory=dict)
    ocs: dict[str, OcsIntent] = field(default_factory=dict)
    amplifiers: dict[str, AmpIntent] = field(default_factory=dict)
    switches: dict[str, SwitchIntent] = field(default_factory=dict)
    verify_timeout_seconds: float = DEFAULT_VERIFY_TIMEOUT_SECONDS
    tolerance_db: float = DEFAULT_TOLERANCE_DB

    def where(self, line: int) -> str:
        return f"{self.path}:{line}" if line else str(self.path)


def _entries(top: Section, key: str) -> list[tuple[str, Any, int]]:
    """(name, value, line) of each entry of the mapping ``key``; every name is a device
    or link name as the inventory writes them."""
    value = top.data.get(key)
    if value is None:
        return []
    if not isinstance(value, dict):
        raise top.error(key, "must be a mapping of names, like 'link-1: {span: working}'")
    line_of = value.line_of if isinstance(value, LinedDict) else (lambda _: 0)
    pattern = LINK_NAME if key == "links" else DEVICE_NAME
    entries = []
    for name, item in value.items():
        text = str(name)
        if not pattern.fullmatch(text):
            where = f"{top.source}:{line_of(text)}" if line_of(text) else top.source
            raise YamlFileError(f"{where}: fabric intent: {key}: {shown(text)} is not a "
                                f"{'link' if key == 'links' else 'device'} name")
        entries.append((text, item, line_of(text)))
    return entries


def load_intent(path: Path, inventory: Inventory) -> FabricIntent:
    """Read and check a fabric intent file. Raises :class:`YamlFileError` or
    :class:`ValidationError`, the message naming file and line."""
    text = read_text(path)
    data = load_text(text, str(path))
    raw = text.encode("utf-8")
    source = str(path)
    if data is None:
        raise YamlFileError(f"{path}: empty: give links, ocs, amplifiers or switches")
    top = Section(data, source, "fabric intent")
    top.reject_unknown({"links", "ocs", "amplifiers", "switches", "verify"})
    intent = FabricIntent(path, hashlib.sha256(raw).hexdigest()[:16])

    def device(section: Section, name: str, kind: str) -> None:
        found = inventory.devices.get(name)
        if found is None:
            raise section.error(None, f"no device named {name!r} in the inventory "
                                f"({inventory.path})")
        if found.kind != kind:
            raise section.error(None, f"{name!r} is of kind {found.kind!r}, not {kind!r}")

    for name, item, line in _entries(top, "links"):
        section = Section(item, source, f"link {name!r}", line=line)
        section.reject_unknown({"state", "span"})
        if name not in inventory.links:
            known = ", ".join(sorted(inventory.links)) or "none"
            raise section.error(None, f"no such link in the inventory (links: {known})")
        state = section.get("state", str, default="up", choices=("up", "down"))
        role = section.get("span", str, default="working", choices=("working", "protection"))
        if state == "down" and "span" in section.data:
            raise section.error("span", "a link that is down is on no span")
        if role == "protection" and inventory.links[name].protection is None:
            raise section.error("span", f"link {name} has no protection span in the inventory")
        intent.links[name] = LinkIntent(name, state == "up", role, line)

    for name, item, line in _entries(top, "ocs"):
        section = Section(item, source, f"ocs {name!r}", line=line)
        section.reject_unknown({"connections"})
        device(section, name, "ocs")
        if section.data.get("connections") is None:
            raise section.error(None, "field 'connections' is required (the whole map; "
                                "'connections: []' for none but the links')")
        items = section.get("connections", list)
        lines = items.item_lines if isinstance(items, LinedList) else [line] * len(items)
        connections: dict[int, int] = {}
        connection_lines: dict[int, int] = {}
        feeders: dict[int, int] = {}
        for entry, entry_line in zip(items, lines, strict=True):
            where = intent.where(entry_line)
            if not isinstance(entry, str):
                raise YamlFileError(f"{where}: ocs {name!r}: a connection is written "
                                    f"\"IN:OUT\", got {entry!r}")
            try:
                ingress, egress = parse_pair(entry)
            except ValidationError as error:
                raise YamlFileError(f"{where}: ocs {name!r}: {error.message}") from None
            if ingress in connections or egress in feeders:
                raise YamlFileError(f"{where}: ocs {name!r}: connection {entry} uses a port "
                                    "another connection of this map uses")
            connections[ingress] = egress
            feeders[egress] = ingress
            connection_lines[ingress] = entry_line
        intent.ocs[name] = OcsIntent(name, connections, connection_lines, line)

    for name, item, line in _entries(top, "amplifiers"):
        section = Section(item, source, f"amplifier {name!r}", line=line)
        section.reject_unknown({"mode", "gain_db", "output_power_dbm", "tilt_db"})
        device(section, name, "amp")
        amp = AmpIntent(name, section.get("mode", str, default=None, choices=AMP_MODES),
                        section.get("gain_db", float, default=None),
                        section.get("output_power_dbm", float, default=None),
                        section.get("tilt_db", float, default=None), line)
        if not amp.settings():
            raise section.error(None, "give mode, gain_db, output_power_dbm or tilt_db")
        intent.amplifiers[name] = amp

    for name, item, line in _entries(top, "switches"):
        section = Section(item, source, f"switch {name!r}", line=line)
        section.reject_unknown({"want"})
        device(section, name, "switch")
        want = section.get("want", (str, dict))
        if isinstance(want, str):
            want_path = Path(want).expanduser()
            if not want_path.is_absolute():
                want_path = path.parent / want_path
            if not want_path.is_file():
                raise section.error("want", f"no such WANT file: {want_path}")
            tree, want_source = load_want(want_path), str(want_path)
        else:
            want_line = section.data.line_of("want") if isinstance(section.data, LinedDict) \
                else line
            want_source = intent.where(want_line)
            tree = (from_dict(want, source=want_source) if INTENT_TOP in want
                    else check(want, source=want_source))
        intent.switches[name] = SwitchIntent(name, tree, want_source, line)

    verify = top.data.get("verify")
    if verify is not None:
        section = Section(verify, source, "verify",
                          line=top.data.line_of("verify") if isinstance(top.data, LinedDict)
                          else 0)
        section.reject_unknown({"timeout_seconds", "tolerance_db"})
        intent.verify_timeout_seconds = section.get(
            "timeout_seconds", float, default=DEFAULT_VERIFY_TIMEOUT_SECONDS)
        if not 0 < intent.verify_timeout_seconds <= 600:
            raise section.error("timeout_seconds", "must be more than 0 and at most 600 s")
        intent.tolerance_db = section.get("tolerance_db", float, default=DEFAULT_TOLERANCE_DB)
        if not 0.1 <= intent.tolerance_db <= 30:
            raise section.error("tolerance_db", "must be 0.1..30 dB")

    if not (intent.links or intent.ocs or intent.amplifiers or intent.switches):
        raise top.error(None, "says nothing: give links, ocs, amplifiers or switches")
    return intent
