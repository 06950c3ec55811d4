"""The OID table, compiled from the MIBs in mibs/: the one source of OIDs for SNMP.

The collector and the agent emulator ask this module for every OID, column,
enumeration, unit and fixed-point scale; nothing lists them by hand::

    from drivers.snmp import mibs
    mibs.oid("MSO-CPC-MIB", "msoCpcLaneSnr")     # (1, 3, 6, 1, 4, 1, 32473, 2, 2, 1, 1, 1, 2)
    lanes = mibs.table("MSO-CPC-MIB", "msoCpcLaneTable")
    lanes.instance("msoCpcLaneSnr", (7, 2))       # the column's OID + ifIndex 7, lane 2
    lanes.column("msoCpcLaneSnr").scaled(2350)    # 23.5 (dB, its UNITS)

How the table is made: the first use compiles mibs/ with pysmi into JSON
documents in a cache directory named by a digest of the sources, and every later
use (in any process) only reads that JSON, which takes milliseconds; pysmi is
not even imported then. Editing a MIB changes the digest and so compiles afresh.
The cache is ``$MSOCTL_MIB_CACHE`` when set, else ``$XDG_CACHE_HOME/msoctl/mibs``
(``~/.cache/msoctl/mibs``), else a directory under the system's temporary
directory. A compilation is written to a private directory and renamed into place,
so processes that start together never read half a cache. ``python -m
drivers.snmp.mibs`` compiles ahead of time and prints the table for review.

Scale: an Integer32 with a fraction has a textual convention whose DISPLAY-HINT
is ``d-N``; :attr:`MibObject.decimals` is that N, and :meth:`MibObject.scaled`
turns a raw integer into a value in the object's ``units``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

Oid = tuple[int, ...]

CACHE_ENVIRONMENT = "MSOCTL_MIB_CACHE"
# Part of the cache key: bump it when what the loader expects of the cache changes.
CACHE_FORMAT = 1
_MANIFEST = "manifest.json"
_SOURCE_SUFFIX = ".mib"
_COMPILED_SUFFIX = ".json"

# SMI base types as pysmi's JSON spells them, and the names used here.
_BASE_TYPES = {
    "Integer32": "Integer32",
    "INTEGER": "Integer32",
    "Unsigned32": "Unsigned32",
    "Gauge32": "Gauge32",
    "Counter32": "Counter32",
    "Counter64": "Counter64",
    "TimeTicks": "TimeTicks",
    "OCTET STRING": "OCTET STRING",
    "Bits": "BITS",
    "OBJECT IDENTIFIER": "OBJECT IDENTIFIER",
    "IpAddress": "IpAddress",
    "Opaque": "Opaque",
}
INTEGER_TYPES = frozenset({"Integer32", "Unsigned32", "Gauge32", "Counter32", "Counter64",
                           "TimeTicks"})

# pysmi builds SNMPv2-TC in rather than compiling it, so its conventions (RFC 2579,
# section 2) are given here: base type, DISPLAY-HINT and named numbers.
_SNMPV2_TC: dict[str, tuple[str, str | None, dict[str, int]]] = {
    "DisplayString": ("OCTET STRING", "255a", {}),
    "PhysAddress": ("OCTET STRING", "1x:", {}),
    "MacAddress": ("OCTET STRING", "1x:", {}),
    "TruthValue": ("Integer32", None, {"true": 1, "false": 2}),
    "TestAndIncr": ("Integer32", None, {}),
    "AutonomousType": ("OBJECT IDENTIFIER", None, {}),
    "InstancePointer": ("OBJECT IDENTIFIER", None, {}),
    "VariablePointer": ("OBJECT IDENTIFIER", None, {}),
    "RowPointer": ("OBJECT IDENTIFIER", None, {}),
    "RowStatus": ("Integer32", None, {"active": 1, "notInService": 2, "notReady": 3,
                                      "createAndGo": 4, "createAndWait": 5, "destroy": 6}),
    "TimeStamp": ("TimeTicks", None, {}),
    "TimeInterval": ("Integer32", None, {}),
    "DateAndTime": ("OCTET STRING", "2d-1d-1d,1d:1d:1d.1d,1a1d:1d", {}),
    "StorageType": ("Integer32", None, {"other": 1, "volatile": 2, "nonVolatile": 3,
                                        "permanent": 4, "readOnly": 5}),
    "TDomain": ("OBJECT IDENTIFIER", None, {}),
    "TAddress": ("OCTET STRING", None, {}),
}

_KINDS = {
    "moduleidentity": "module",
    "objectidentity": "node",
    "notificationtype": "notification",
    "objectgroup": "group",
    "notificationgroup": "group",
    "modulecompliance": "compliance",
}
_EMPTY: Mapping[str, int] = MappingProxyType({})
_FIXED_POINT = re.compile(r"d-(\d+)")


class MibError(Exception):
    """The MIBs do not compile, or a module or object asked for is not in them."""


@dataclass(frozen=True)
class MibObject:
    """One named node of a MIB module, with its syntax resolved to SMI terms.

    ``kind`` is one of module, node, scalar, table, row, column, notification,
    group, compliance. ``syntax`` is the type as declared (a textual convention's
    name, or a base type); ``base_type`` the SMI type on the wire (Integer32,
    Unsigned32, Gauge32, Counter32, Counter64, TimeTicks, OCTET STRING, BITS,
    OBJECT IDENTIFIER, IpAddress, Opaque). ``value_range`` is the integer range, or
    the size range of a string. ``index`` (rows) and ``members`` (notifications,
    groups, compliances) name other objects as ``(module, name)`` pairs; a row that
    AUGMENTS another names that row in ``augments`` and has no ``index`` of its own.
    """

    module: str
    name: str
    oid: Oid
    kind: str
    description: str = ""
    syntax: str | None = None
    base_type: str | None = None
    display_hint: str | None = None
    units: str | None = None
    max_access: str | None = None
    status: str | None = None
    value_range: tuple[int, int] | None = None
    enumeration: Mapping[str, int] = field(default_factory=lambda: _EMPTY)
    bits: Mapping[str, int] = field(default_factory=lambda: _EMPTY)
    index: tuple[tuple[str, str], ...] = ()
    members: tuple[tuple[str, str], ...] = ()
    augments: tuple[str, str] | None = None

    def __hash__(self) -> int:  # the mappings are not hashable; a node is its name
        return hash((self.module, self.name))

    @property
    def qualified_name(self) -> str:
        """``MODULE::name``, as net-snmp writes it."""
        return f"{self.module}::{self.name}"

    @property
    def dotted(self) -> str:
        """The OID in dotted form with a leading dot, as net-snmp prints it with -On."""
        return "." + ".".join(str(arc) for arc in self.oid)

    @property
    def decimals(self) -> int:
        """N of a ``d-N`` DISPLAY-HINT: the raw integer counts units of 10^-N; else 0."""
        match = _FIXED_POINT.fullmatch(self.display_hint or "")
        return int(match.group(1)) if match else 0

    def scaled(self, raw: int) -> float:
        """``raw`` in the object's ``units``: -123 of a ``d-2`` object is -1.23."""
        divisor: int = 10**self.decimals
        return raw / divisor

    def enum_name(self, value: int) -> str | None:
        """The name of ``value`` in the enumeration, ``None`` if it has none."""
        return next((name for name, number in self.enumeration.items() if number == value), None)

    def decode_bits(self, octets: bytes) -> frozenset[str]:
        """The names of the bits set in a BITS value (bit 0 is the first octet's high bit).

        A bit the MIB does not name is ignored: a newer agent may know more faults.
        """
        return frozenset(name for name, bit in self.bits.items()
                         if bit // 8 < len(octets) and octets[bit // 8] & (0x80 >> bit % 8))

    def encode_bits(self, names: Iterable[str]) -> bytes:
        """The BITS value with ``names`` set, as short as RFC 2578 allows (empty if none).

        Raises :class:`MibError` for a name the MIB does not define.
        """
        positions = []
        for name in names:
            if name not in self.bits:
                raise MibError(f"{self.qualified_name} has no bit named {name!r}")
            positions.append(self.bits[name])
        if not positions:
            return b""
        octets = bytearray(max(positions) // 8 + 1)
        for bit in positions:
            octets[bit // 8] |= 0x80 >> bit % 8
        return bytes(octets)


@dataclass(frozen=True)
class MibTable:
    """A conceptual table: its entry, its INDEX objects in order and its readable columns.

    Every index must be integer-valued (one sub-identifier each), as it is in the
    msoctl MIBs; :meth:`Mibs.table` refuses other tables.
    """

    table: MibObject
    entry: MibObject
    index: tuple[MibObject, ...]
    columns: tuple[MibObject, ...]

    @property
    def oid(self) -> Oid:
        return self.table.oid

    def column(self, name: str) -> MibObject:
        """The readable column ``name``; raises :class:`MibError` if the table has none."""
        for column in self.columns:
            if column.name == name:
                return column
        raise MibError(f"{self.table.qualified_name} has no readable column {name!r}")

    def instance(self, column: str, index: Sequence[int]) -> Oid:
        """The OID of ``column`` in the row ``index`` (one integer per INDEX object)."""
        if len(index) != len(self.index):
            raise MibError(f"{self.table.qualified_name} rows have {len(self.index)} "
                           f"index values, not {len(index)}")
        return self.column(column).oid + tuple(index)

    def parse_instance(self, oid: Sequence[int]) -> tuple[MibObject, tuple[int, ...]] | None:
        """Split an instance OID into its column and row index; ``None`` if it is not one."""
        oid = tuple(oid)
        prefix = len(self.entry.oid) + 1
        if len(oid) != prefix + len(self.index) or oid[:len(self.entry.oid)] != self.entry.oid:
            return None
        for column in self.columns:
            if column.oid == oid[:prefix]:
                return column, oid[prefix:]
        return None


class Mibs:
    """The compiled modules in one directory of pysmi JSON documents, read on demand."""

    def __init__(self, compiled: Path):
        self.directory = compiled
        self._documents: dict[str, dict[str, Any]] = {}
        self._modules: dict[str, dict[str, MibObject]] = {}
        self._lock = threading.RLock()

    @property
    def module_names(self) -> tuple[str, ...]:
        """Every compiled module."""
        return tuple(sorted(path.stem for path in self.directory.glob(f"*{_COMPILED_SUFFIX}")
                            if path.name != _MANIFEST))

    def objects(self, module: str) -> tuple[MibObject, ...]:
        """Every named node of ``module``, in OID order."""
        return tuple(sorted(self._module(module).values(), key=lambda node: node.oid))

    def object(self, module: str, name: str) -> MibObject:
        """The node ``name`` of ``module``; raises :class:`MibError` if there is none."""
        try:
            return self._module(module)[name]
        except KeyError:
            raise MibError(f"{module} defines no object {name!r}") from None

    def oid(self, module: str, name: str) -> Oid:
        return self.object(module, name).oid

    def table(self, module: str, name: str) -> MibTable:
        """The table ``name`` of ``module`` (raises :class:`MibError` if it is not a table)."""
        table = self.object(module, name)
        if table.kind != "table":
            raise MibError(f"{table.qualified_name} is a {table.kind}, not a table")
        nodes = self._module(module).values()
        entry = next(node for node in nodes
                     if node.kind == "row" and node.oid[:-1] == table.oid)
        row = entry
        while not row.index and row.augments is not None:  # AUGMENTS: the base row's index
            row = self.object(*row.augments)
        index = tuple(self.object(*part) for part in row.index)
        for part in index:
            if part.base_type not in INTEGER_TYPES:
                raise MibError(f"{table.qualified_name}: index {part.qualified_name} is "
                               f"{part.base_type}, and only integer indexes are supported")
        columns = tuple(sorted((node for node in nodes if node.kind == "column"
                                and node.oid[:-1] == entry.oid
                                and node.max_access != "not-accessible"),
                               key=lambda node: node.oid))
        return MibTable(table, entry, index, columns)

    def _module(self, module: str) -> dict[str, MibObject]:
        with self._lock:
            if module not in self._modules:
                document = self._document(module)
                self._modules[module] = {
                    name: self._node(module, name, node) for name, node in document.items()
                    if isinstance(node, dict) and "oid" in node}
            return self._modules[module]

    def _document(self, module: str) -> dict[str, Any]:
        """The module's JSON document, read once."""
        with self._lock:
            if module not in self._documents:
                path = self.directory / f"{module}{_COMPILED_SUFFIX}"
                try:
                    self._documents[module] = json.loads(path.read_text(encoding="utf-8"))
                except FileNotFoundError:
                    raise MibError(f"no MIB module {module} (compiled modules: "
                                   f"{', '.join(self.module_names)})") from None
            return self._documents[module]

    def _node(self, module: str, name: str, node: dict[str, Any]) -> MibObject:
        kind = node.get("nodetype") if node["class"] == "objecttype" else _KINDS[node["class"]]
        fields: dict[str, Any] = {}
        if "syntax" in node:
            fields = self._syntax(module, node["syntax"])
            fields["syntax"] = node["syntax"]["type"]
        return MibObject(
            module=module,
            name=name,
            oid=tuple(int(arc) for arc in node["oid"].split(".")),
            kind=str(kind),
            description=_paragraphs(node.get("description", "")),
            units=node.get("units"),
            max_access=node.get("maxaccess"),
            status=node.get("status"),
            index=tuple((part["module"], part["object"]) for part in node.get("indices", ())),
            members=tuple((part["module"], part["object"])
                          for part in node.get("objects", node.get("modulecompliance", ()))),
            augments=((node["augmention"]["module"], node["augmention"]["object"])
                      if "augmention" in node else None),
            **fields,
        )

    def _syntax(self, module: str, syntax: dict[str, Any], depth: int = 0) -> dict[str, Any]:
        """Resolve a syntax through its textual convention: base type, hint, constraints."""
        declared = syntax["type"]
        owner = self._imported_from(module, declared)
        resolved: dict[str, Any]
        if declared in _BASE_TYPES:
            resolved = {"base_type": _BASE_TYPES[declared], "display_hint": None}
        elif owner == "SNMPv2-TC" and declared in _SNMPV2_TC:
            base, hint, enumeration = _SNMPV2_TC[declared]
            resolved = {"base_type": base, "display_hint": hint,
                        "enumeration": MappingProxyType(enumeration)}
        else:
            convention = self._document(owner).get(declared) if owner != "SNMPv2-TC" else None
            if (not isinstance(convention, dict)
                    or convention.get("class") != "textualconvention" or depth > 2):
                raise MibError(f"{module}: cannot resolve the type {owner}::{declared}")
            resolved = self._syntax(owner, convention["type"], depth + 1)
            resolved["display_hint"] = convention.get("displayhint") or resolved["display_hint"]
        # The object's own constraints refine the convention's.
        constraints = syntax.get("constraints", {})
        bounds = constraints.get("range") or constraints.get("size")
        if bounds:
            resolved["value_range"] = (min(part["min"] for part in bounds),
                                       max(part["max"] for part in bounds))
        if "enumeration" in constraints:
            resolved["enumeration"] = MappingProxyType(dict(constraints["enumeration"]))
        if "bits" in syntax:
            resolved["bits"] = MappingProxyType(dict(syntax["bits"]))
        return resolved

    def _imported_from(self, module: str, symbol: str) -> str:
        """The module ``symbol`` comes from, as ``module`` imports it; itself if not imported."""
        for source, symbols in self._document(module).get("imports", {}).items():
            if source != "class" and symbol in symbols:
                return str(source)
        return module


def _paragraphs(text: str) -> str:
    """A DESCRIPTION with each paragraph's line breaks and indentation folded to spaces."""
    return "\n\n".join(" ".join(paragraph.split())
                       for paragraph in re.split(r"\n\s*\n", text) if paragraph.strip())


# --- the compile cache ------------------------------------------------------------


def source_directory() -> Path:
    """mibs/ as installed (the ``mibs`` package's data)."""
    import mibs as package

    return Path(str(package.directory()))


def source_digest(source: Path) -> str:
    """A SHA-256 over the names and bytes of the ``*.mib`` files and the cache format."""
    digest = hashlib.sha256(f"msoctl-mibs-{CACHE_FORMAT}\n".encode())
    for path in sorted(source.glob(f"*{_SOURCE_SUFFIX}")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_roots() -> list[Path]:
    """Where compiled MIBs may be kept, first choice first."""
    configured = os.environ.get(CACHE_ENVIRONMENT)
    if configured:
        return [Path(configured)]
    roots = []
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        roots.append(Path(xdg) / "msoctl" / "mibs")
    else:
        try:
            roots.append(Path.home() / ".cache" / "msoctl" / "mibs")
        except RuntimeError:  # no home directory to be found
            pass
    roots.append(_shared_temporary_root())
    return roots


def _shared_temporary_root() -> Path:
    return Path(tempfile.gettempdir()) / f"msoctl-mibs-{os.getuid()}"


def compiled_directory(source: Path | None = None) -> Path:
    """The directory holding the compiled JSON of ``source`` (mibs/), compiling if needed.

    Raises :class:`MibError` if the MIBs do not compile or no cache root is usable.
    """
    source = source or source_directory()
    digest = source_digest(source)
    problems = []
    for root in cache_roots():
        target = root / digest[:32]
        try:
            check_root(root)
            if (target / _MANIFEST).is_file():
                return target
            return _compile_into(source, digest, target)
        except OSError as error:
            problems.append(f"{root}: {error}")
    raise MibError("no usable directory for the compiled MIBs: " + "; ".join(problems))


def check_root(root: Path) -> None:
    """Create ``root``; in the shared temporary directory, trust it only if it is ours alone.

    Anyone can create a name in /tmp first, and compiled MIBs decide which OIDs we read.
    """
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    if root == _shared_temporary_root():
        status = root.lstat()
        if root.is_symlink() or status.st_uid != os.getuid() or status.st_mode & 0o022:
            raise OSError(f"{root} is not a private directory of this user")


def _compile_into(source: Path, digest: str, target: Path) -> Path:
    from drivers.snmp.mibcompile import MibCompileError, compile_mibs

    building = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
    try:
        try:
            statuses = compile_mibs(source, building)
        except MibCompileError as error:
            raise MibError(str(error)) from error
        manifest = {"format": CACHE_FORMAT, "source": str(source), "digest": digest,
                    "modules": statuses}
        (building / _MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
        try:
            building.rename(target)
        except OSError:
            # Another process published the same compilation first: use theirs.
            if not (target / _MANIFEST).is_file():
                raise
        return target
    finally:
        shutil.rmtree(building, ignore_errors=True)


_loaded: Mibs | None = None
_load_lock = threading.Lock()


def load() -> Mibs:
    """The compiled msoctl MIBs, compiled on first use and shared by the process."""
    global _loaded
    with _load_lock:
        if _loaded is None:
            _loaded = Mibs(compiled_directory())
        return _loaded


def oid(module: str, name: str) -> Oid:
    """The OID of ``module::name``, e.g. ``oid("MSO-CPC-MIB", "msoCpcLaneSnr")``."""
    return load().oid(module, name)


def mib_object(module: str, name: str) -> MibObject:
    """The node ``module::name`` with its syntax, units, scale and enumerations."""
    return load().object(module, name)


def table(module: str, name: str) -> MibTable:
    """The table ``module::name`` with its index and readable columns."""
    return load().table(module, name)


@dataclass(frozen=True)
class Column:
    """One column of a table whose MIB text this directory does not carry (a vendor's):
    its sub-identifier under the entry, name, SMI base type, and range or enumeration."""

    number: int
    name: str
    base_type: str
    value_range: tuple[int, int] | None = None
    enumeration: Mapping[str, int] = field(default_factory=lambda: _EMPTY)


def declared_table(module: str, name: str, table_oid: Oid, index: Sequence[MibObject],
                   columns: Sequence[Column]) -> MibTable:
    """A :class:`MibTable` declared from a vendor MIB's published text, column by column
    (entry ``table_oid.1``); ``index`` are the INDEX objects, in order."""
    entry = (*table_oid, 1)
    table_node = MibObject(module, name, tuple(table_oid), "table")
    entry_node = MibObject(module, name.removesuffix("Table") + "Entry", entry, "row",
                           index=tuple((part.module, part.name) for part in index))
    nodes = tuple(MibObject(module, column.name, (*entry, column.number), "column",
                            syntax=column.base_type, base_type=column.base_type,
                            max_access="read-only", value_range=column.value_range,
                            enumeration=MappingProxyType(dict(column.enumeration)))
                  for column in sorted(columns, key=lambda column: column.number))
    return MibTable(table_node, entry_node, tuple(index), nodes)


def index_object(module: str, name: str, node_oid: Oid) -> MibObject:
    """A not-accessible integer INDEX object of a declared table."""
    return MibObject(module, name, tuple(node_oid), "column", syntax="Integer32",
                     base_type="Integer32", max_access="not-accessible")


def main(argv: Sequence[str] | None = None) -> int:
    """Compile the MIBs (if not yet cached) and print the msoctl modules' objects."""
    modules = list(argv if argv is not None else sys.argv[1:]) or [
        "MSO-SMI", "MSO-TC", "MSO-CPO-MIB", "MSO-CPC-MIB"]
    try:
        compiled = load()
        print(f"# compiled MIBs: {compiled.directory}", file=sys.stderr)
        for module in modules:
            for node in compiled.objects(module):
                scale = f"1e-{node.decimals}" if node.decimals else ""
                print("\t".join((node.dotted, node.qualified_name, node.kind,
                                 node.syntax or "", node.base_type or "",
                                 node.units or "", scale)))
    except MibError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
