"""Compile the SMIv2 sources in mibs/ to pysmi's JSON documents, from local files only.

This is the only module that imports pysmi, and :mod:`drivers.snmp.mibs` imports it
only when its cache has no compiled copy of the current sources: a pysmi compiler
costs hundreds of milliseconds to build and has no place on a collector's hot path.
pysmi is given file sources alone (its default source is on the internet).
"""

from __future__ import annotations

from pathlib import Path

# pysmi never compiles these: the SMI macros and base types are built into it.
BASE_MODULES = frozenset({"SNMPv2-SMI", "SNMPv2-TC", "SNMPv2-CONF"})
SOURCE_SUFFIX = ".mib"
COMPILED_SUFFIX = ".json"


class MibCompileError(Exception):
    """A module in mibs/ does not compile, or imports a module that is not there."""


def source_modules(source: Path) -> list[str]:
    """The modules in ``source`` to compile: every ``NAME.mib`` but the SMI base modules."""
    return sorted(path.stem for path in source.glob(f"*{SOURCE_SUFFIX}")
                  if path.stem not in BASE_MODULES)


def compile_mibs(source: Path, destination: Path) -> dict[str, str]:
    """Compile every module in ``source`` into ``destination`` as ``NAME.json``.

    Returns pysmi's status for each module it touched (``compiled``, ``untouched``
    for the built-in base modules). Raises :class:`MibCompileError` naming each
    module that failed or is missing.
    """
    # Imported here, not at the top: see the module docstring.
    from pysmi.codegen.jsondoc import JsonCodeGen
    from pysmi.compiler import MibCompiler
    from pysmi.parser.dialect import smi_v2
    from pysmi.parser.smi import parserFactory
    from pysmi.reader.localfile import FileReader
    from pysmi.searcher.stub import StubSearcher
    from pysmi.writer.localfile import FileWriter

    writer = FileWriter(str(destination))
    writer.suffix = COMPILED_SUFFIX
    compiler = MibCompiler(parserFactory(**smi_v2)(), JsonCodeGen(), writer)
    compiler.add_sources(FileReader(str(source), recursive=False))
    compiler.add_searchers(StubSearcher(*JsonCodeGen.baseMibs))
    statuses = compiler.compile(*source_modules(source), rebuild=True, genTexts=True)
    failures = {name: status for name, status in statuses.items()
                if status not in ("compiled", "untouched")}
    if failures:
        # One broken module leaves the rest "unprocessed": name the broken one.
        failures = {name: status for name, status in failures.items()
                    if status in ("failed", "missing")} or failures
        detail = "; ".join(f"{name}: {status} {getattr(status, 'error', '') or ''}".strip()
                           for name, status in sorted(failures.items()))
        raise MibCompileError(f"MIBs in {source} do not compile: {detail}")
    return {name: str(status) for name, status in statuses.items()}
