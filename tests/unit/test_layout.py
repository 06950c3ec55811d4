"""The test tree's layout, read from the sources (nothing is imported): each test module in
the folder of its kind, no test module imported by another, a marker per folder applied by
its conftest.py and registered in pyproject.toml (docs/testing.md)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from tests.support.paths import ROOT, TESTS

KINDS = ("unit", "conformance", "interop", "e2e", "bench")


def _test_modules() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports, by its dotted name (``from a import b`` gives ``a``
    and ``a.b``, since b may be a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the importing module's package, level - 1 up
                package = path.relative_to(ROOT).parent.parts
                base = package[:len(package) - node.level + 1]
                module = ".".join((*base, *filter(None, [node.module])))
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def test_every_test_module_lives_in_the_folder_of_its_kind() -> None:
    misplaced = [str(p.relative_to(TESTS)) for p in _test_modules()
                 if p.relative_to(TESTS).parts[0] not in KINDS]
    assert not misplaced, f"test modules outside tests/<kind>/: {misplaced}"
    assert _test_modules(), "no test module found"


def test_no_module_of_the_tree_imports_a_test_module() -> None:
    """Helpers live in tests/support; a test module that imported another would run (and
    collect fixtures from) the other's module body."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for name in _imported(path):
            if name.startswith("tests.") and name.rpartition(".")[2].startswith("test_"):
                found.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not found, found


def test_each_kind_has_its_folder_conftest_applying_its_registered_marker() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    registered = {m.partition(":")[0] for m in options["ini_options"]["markers"]}
    assert "--strict-markers" in options["ini_options"]["addopts"]
    for kind in KINDS:
        conftest = TESTS / kind / "conftest.py"
        assert conftest.is_file(), f"tests/{kind}/conftest.py is missing"
        assert f'item.add_marker("{kind}")' in conftest.read_text(), conftest
        assert kind in registered, f"marker {kind} is not registered in pyproject.toml"


def test_support_is_a_package_of_helpers_with_no_tests() -> None:
    support = TESTS / "support"
    assert (support / "__init__.py").is_file()
    assert not list(support.rglob("test_*.py"))


def test_every_journaled_action_is_of_a_kind_history_knows() -> None:
    """``history --kind`` refuses a kind no action has (msoctl/cli/history.py): every
    ``action=`` the code passes (to the journal, a lock, a refusal) must start with one
    of its kinds."""
    from msoctl.cli.history import ACTION_KINDS

    kinds: dict[str, str] = {}
    for path in (ROOT / "msoctl").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named: list[ast.AST] = []  # what is given or kept as an action
            given = isinstance(node, ast.keyword) and node.arg == "action"
            kept = isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "action" for t in node.targets)
            if given or kept:
                named.append(node.value)  # type: ignore[attr-defined]
            elif isinstance(node, ast.Dict):
                named += [v for k, v in zip(node.keys, node.values, strict=True)
                          if isinstance(k, ast.Constant) and k.value == "action"]
            for value in named:
                for part in ast.walk(value):
                    if isinstance(part, ast.Constant) and isinstance(part.value, str) \
                            and "." in part.value and " " not in part.value:
                        kinds[part.value.split(".")[0]] = path.name
    from msoctl.fabric.plan import ACTION as FABRIC_APPLY
    from msoctl.linkstate import DRAIN
    from msoctl.ops.switch import APPLY as SWITCH_APPLY

    for constant in (FABRIC_APPLY, DRAIN, SWITCH_APPLY):  # kept in module constants
        kinds[constant.split(".")[0]] = constant
    assert len(kinds) >= 5, kinds
    unknown = {kind: where for kind, where in kinds.items() if kind not in ACTION_KINDS}
    assert not unknown, unknown
