"""Which module may import which: read from the sources (ast), nothing is imported.

The layers (docs/architecture.md): ``msoctl`` (the operator layer) uses ``drivers``;
``drivers`` use neither ``msoctl`` nor ``emulators``; ``emulators`` use nothing of
``msoctl`` and no driver logic, only the drivers' declarative spec tables
(:data:`SPEC_TABLES`), which are the spec itself and are checked against golden
vectors written from the standards (tests/vectors/). Within ``msoctl`` only
``msoctl.lab`` (``msoctl lab up``, the demo and the lab's client) imports emulators.

An import counts wherever it is written: at module level or inside a function (a lazy
import is a dependency all the same), and the CLI's registry of command modules
(``COMMANDS`` in msoctl/cli/__init__.py, imported by name) counts as imports of the
root. Imports under ``if TYPE_CHECKING:`` never run, so they make no import cycle, but
they do count for the directions above. Importing ``a.b.c`` also runs the ``__init__``
of ``a`` and ``a.b``; those side effects are not counted as dependencies of the module.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import ROOT

PACKAGES = ("msoctl", "drivers", "emulators")

SPEC_TABLES: dict[str, str] = {
    "drivers.ocs.commands": "the OCS's SCPI command set and its enumerations",
    "drivers.instruments.commands": "the laser's and power meter's SCPI command sets",
    "drivers.scpi.table": "the row type of those tables and a header's short form "
                          "(SCPI-99 vol. 1 §6.2.1)",
    "drivers.scpi.common": "IEEE 488.2 common commands and status register bits",
    "drivers.scpi.codes": "the SCPI-99 error codes and messages",
    "drivers.cmis.fields": "the field type of the CMIS memory-map tables",
    "drivers.cmis.codes": "CMIS code tables (value -> name)",
    "drivers.cmis.pages.lower": "CMIS lower page fields",
    "drivers.cmis.pages.page00": "CMIS page 00h fields",
    "drivers.cmis.pages.page01": "CMIS page 01h fields",
    "drivers.cmis.pages.page02": "CMIS page 02h fields",
    "drivers.cmis.pages.page10": "CMIS page 10h fields",
    "drivers.cmis.pages.page11": "CMIS page 11h fields",
    "drivers.amp.vendor_page": "the amplifier's vendor page fields (the project's dialect)",
    "drivers.snmp.mibs": "OIDs and objects of the project's MIBs (mibs/, compiled)",
    "drivers.snmp.mibcompile": "compiles mibs/ into what drivers.snmp.mibs reads",
    "drivers.snmp.mibsource": "pysnmp's own MIB modules compiled once, not twice per engine "
                              "(plumbing of the SNMP library, no device logic)",
    "drivers.snmp.usmkey": "RFC 3414's password-to-key for pysnmp in one hash call "
                           "(plumbing of the SNMP library, no device logic)",
    "drivers.switch.schema": "the switch's data model from yang/ (namespace, nodes)",
    "drivers.switch.link": "facts of long Ethernet links (pause quanta, port speeds)",
    "drivers.yamlfile": "not a device table but no device logic either: the one bounded "
                        "YAML reader, so a lab topology is read within the inventory's limits",
}
"""The only driver modules an emulator may import, and why each is allowed."""


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    typing_only: bool  # under ``if TYPE_CHECKING:``


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module ``name`` imports: itself, or the longest prefix that is one."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in MODULES:
            return candidate
        parts.pop()
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, typing_only: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for item in child.body:
                yield item, True
                yield from _walk(item, True)
            for item in child.orelse:
                yield item, typing_only
                yield from _walk(item, typing_only)
            continue
        yield child, typing_only
        yield from _walk(child, typing_only)


def _imports(module: str, path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node, typing_only in _walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # ``from a import b``: a.b when it is a module, else a itself
            names = [f"{base}.{alias.name}" if _resolve(f"{base}.{alias.name}") ==
                     f"{base}.{alias.name}" else base for alias in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "Command" and module == "msoctl.cli" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names = [node.args[0].value]  # the registry: imported by name when used
        for name in names:
            target = _resolve(name)
            if target is not None and target != module:
                yield Import(module, target, getattr(node, "lineno", 0), typing_only)


@functools.cache
def imports() -> list[Import]:
    """Every import of every module, read once, when the first test asks (not while
    pytest collects: each of the suite's processes collects this module)."""
    return [found for module, path in MODULES.items() for found in _imports(module, path)]


def _top(name: str) -> str:
    return name.split(".")[0]


def _where(found: Import) -> str:
    return f"{MODULES[found.source].relative_to(ROOT)}:{found.line} imports {found.target}"


def _cycle(prefix: str) -> list[str] | None:
    """A cycle of runtime imports among the modules named ``prefix``..., or None."""
    edges: dict[str, set[str]] = {}
    for found in imports():
        if (not found.typing_only and found.source.startswith(prefix)
                and found.target.startswith(prefix)):
            edges.setdefault(found.source, set()).add(found.target)
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for successor in sorted(edges.get(node, ())):
            if state.get(successor) == 1:
                return [*path[path.index(successor):], successor]
            if successor not in state and (cycle := visit(successor)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def test_the_sources_are_read() -> None:
    """The check sees every package, and the CLI's registry of command modules."""
    assert {_top(name) for name in MODULES} == set(PACKAGES)
    registry = {f.target for f in imports() if f.source == "msoctl.cli"}
    assert {"msoctl.cli.ocs", "msoctl.cli.lab", "msoctl.cli.switch"} <= registry


@pytest.mark.parametrize("prefix", ["msoctl.", "emulators.lab."])
def test_no_import_cycle(prefix: str) -> None:
    cycle = _cycle(prefix)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_drivers_import_neither_msoctl_nor_emulators() -> None:
    wrong = [_where(f) for f in imports()
             if _top(f.source) == "drivers" and _top(f.target) in ("msoctl", "emulators")]
    assert not wrong, wrong


def test_only_the_lab_client_and_demo_import_emulators() -> None:
    wrong = [_where(f) for f in imports() if _top(f.source) == "msoctl"
             and _top(f.target) == "emulators" and not f.source.startswith("msoctl.lab.")]
    assert not wrong, wrong


def test_emulators_import_nothing_of_msoctl() -> None:
    wrong = [_where(f) for f in imports()
             if _top(f.source) == "emulators" and _top(f.target) == "msoctl"]
    assert not wrong, wrong


def test_emulators_import_only_the_drivers_spec_tables() -> None:
    wrong = [_where(f) for f in imports() if _top(f.source) == "emulators"
             and _top(f.target) == "drivers" and f.target not in SPEC_TABLES]
    assert not wrong, wrong


def test_the_spec_tables_are_tables_all_the_way_down() -> None:
    """What a spec table imports of the drivers is a spec table too: no driver logic
    comes in behind one."""
    wrong = [_where(f) for f in imports() if f.source in SPEC_TABLES
             and _top(f.target) == "drivers" and f.target not in SPEC_TABLES]
    assert not wrong, wrong
    assert set(SPEC_TABLES) <= set(MODULES), set(SPEC_TABLES) - set(MODULES)
