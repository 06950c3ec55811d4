"""SNMP engines whose MIB modules are run from bytecode compiled once (drivers/snmp/mibsource.py):
the same modules and symbols as pysnmp's own engine, no compiling after the first, an
edited module compiled afresh, and pysnmp's own reading where no cache is usable."""

from __future__ import annotations

import builtins
import marshal
import os
from pathlib import Path
from typing import Any

import pytest
from pysnmp.entity import engine
from pysnmp.smi import builder

from drivers.snmp import mibsource


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MSOCTL_MIB_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The file names that ``compile`` is called on from now on."""
    seen: list[str] = []
    original = builtins.compile

    def counting(source: Any, filename: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(filename))
        return original(source, filename, *args, **kwargs)

    monkeypatch.setattr(builtins, "compile", counting)
    return seen


def _symbols(snmp_engine: engine.SnmpEngine) -> dict[str, set[str]]:
    return {module: set(symbols)
            for module, symbols in snmp_engine.get_mib_builder().mibSymbols.items()}


def test_an_engine_has_pysnmps_modules_and_later_ones_compile_nothing(
        monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    theirs = engine.SnmpEngine(maxMessageSize=1500)
    ours = mibsource.new_engine(max_message_size=1500)
    assert _symbols(ours) == _symbols(theirs) and len(_symbols(ours)) > 5
    size, = ours.get_mib_builder().import_symbols("__SNMP-FRAMEWORK-MIB",
                                                  "snmpEngineMaxMessageSize")
    assert int(size.syntax) == 1500
    assert "SNMPv2-MIB.pyc" in {p.name for p in cache.rglob("*.pyc")}
    compiled = _compiles(monkeypatch)
    unmarshalled: list[str] = []

    def counted(name: str) -> Any:
        original = getattr(marshal, name)

        def counting(data: Any, *args: Any) -> Any:
            unmarshalled.append(name)
            return original(data, *args)

        return counting

    for name in ("load", "loads"):  # runpy reads a bytecode file with marshal.load
        monkeypatch.setattr(marshal, name, counted(name))
    again = mibsource.new_engine()
    assert compiled == []  # pysnmp's own compiles every module twice for every engine
    assert unmarshalled == []  # and runpy would read each bytecode file again
    assert _symbols(again) == _symbols(theirs)
    # its own engine, its own MIB objects: its message size is its own (not by its engine
    # ID, which pysnmp makes from the host, the pid and a list's address, and so two
    # engines of one process may share)
    size_again, = again.get_mib_builder().import_symbols("__SNMP-FRAMEWORK-MIB",
                                                         "snmpEngineMaxMessageSize")
    assert size_again is not size and int(size_again.syntax) == 65507
    assert int(size.syntax) == 1500


def _module(directory: Path, value: int) -> None:
    (directory / "TEST-MIB.py").write_text(
        # a class, as pysnmp names any other object it is given by its label
        f"mibBuilder.export_symbols('TEST-MIB', answer=type('Answer', (), {{'value': {value}}}))\n"
        + "# pad\n" * value)


def _answer(directory: Path) -> int:
    made = mibsource.new_builder()
    made.add_mib_sources(mibsource.CompiledMibSource(str(directory)))
    made.load_modules("TEST-MIB")
    answer, = made.import_symbols("TEST-MIB", "answer")
    return int(answer.value)


def test_an_edited_module_is_compiled_afresh(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "mibs"
    directory.mkdir()
    _module(directory, 1)
    assert _answer(directory) == 1
    compiled = _compiles(monkeypatch)
    assert _answer(directory) == 1 and compiled == []
    _module(directory, 2)
    assert _answer(directory) == 2
    assert [Path(name).name for name in compiled] == ["TEST-MIB.py"]  # once, not twice


def test_without_a_usable_cache_pysnmps_own_reading_is_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("MSOCTL_MIB_CACHE", str(blocker))
    directory = tmp_path / "mibs"
    directory.mkdir()
    _module(directory, 3)
    assert _answer(directory) == 3
    assert _symbols(mibsource.new_engine()) == _symbols(engine.SnmpEngine())


def test_a_damaged_bytecode_file_is_compiled_again(tmp_path: Path, cache: Path) -> None:
    directory = tmp_path / "mibs"
    directory.mkdir()
    _module(directory, 4)
    assert _answer(directory) == 4
    mibsource._codes.clear()  # as a new process would find it
    for compiled in cache.rglob("TEST-MIB.pyc"):
        compiled.write_bytes(compiled.read_bytes()[:20])
    assert _answer(directory) == 4


def test_only_pysnmps_directory_sources_are_replaced() -> None:
    sources = mibsource.new_builder().get_mib_sources()
    directories = [s for s in sources if isinstance(s, builder.DirMibSource)]
    assert directories and all(isinstance(s, mibsource.CompiledMibSource) for s in directories)
    assert {os.path.normpath(str(s.full_path())) for s in sources} == {
        os.path.normpath(str(s.full_path())) for s in builder.MibBuilder().get_mib_sources()}
