"""SNMP engines whose MIB modules are compiled once, not twice for every engine.

Each pysnmp ``SnmpEngine`` has its own MIB builder, which loads a dozen of pysnmp's
MIB modules (SNMPv2-MIB, SNMP-USER-BASED-SM-MIB, ...) as Python code: it compiles
each module's source, then (as ``__debug__`` is on in any ordinary ``python``) throws
that away and runs the file with ``runpy``, which compiles it again. pysnmp looks for
bytecode beside the sources in a layout no Python has written since 3.2, so neither
compilation is ever cached: an engine costs about 0.1 s of CPU, most of it
compiling, and every agent, collector and CLI command makes at least one.

:func:`new_engine` makes the engine with a builder whose directory sources are
:class:`CompiledMibSource`: each module is compiled once into ordinary bytecode files
(``py_compile``, checked against the source's size and time as Python checks its own
``__pycache__``) in a private cache directory, read once per process, and pysnmp's
``runpy.run_path`` of that file runs the code already in memory (:class:`_RunServedCode`:
the same globals, without reading and unmarshalling the file again for every engine).
An engine then costs about 7 ms of CPU. Where no cache directory is usable, the
source is read as pysnmp reads it: slower, never wrong.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import py_compile
import runpy
import struct
import threading
from pathlib import Path
from types import CodeType
from typing import Any

from pysnmp.entity import engine
from pysnmp.proto.rfc3412 import MsgAndPduDispatcher
from pysnmp.smi import builder, instrum

from drivers.snmp import usmkey

_BYTECODE = ".pyc"
_HEADER = struct.Struct("<4sIII")  # magic, flags, source mtime, source size (PEP 552)
_codes: dict[tuple[str, int, int], CodeType] = {}
_served_code: dict[str, CodeType] = {}  # bytecode file -> the code read() last gave from it
_lock = threading.Lock()


def _cache_directory(source: str) -> Path | None:
    """Where the bytecode of the MIB modules in ``source`` is kept (None: nowhere)."""
    from drivers.snmp.mibs import cache_roots, check_root

    tag = hashlib.sha256(f"{source}\0{importlib.util.MAGIC_NUMBER.hex()}".encode())
    for root in cache_roots():
        directory = root / "pysnmp" / tag.hexdigest()[:32]
        try:
            check_root(root)
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            return directory
        except OSError:
            continue
    return None


class CompiledMibSource(builder.DirMibSource):  # type: ignore[misc]  # pysnmp is untyped
    """A directory of MIB modules as Python source, run from bytecode compiled once."""

    def __init__(self, directory: str):
        super().__init__(directory)
        self._cache: Path | None = None
        self._cache_known = False
        self._served: set[str] = set()  # the modules this source gave from its bytecode

    def _compiled(self, name: str) -> Path | None:
        if not self._cache_known:
            self._cache = _cache_directory(os.path.normpath(self._srcName))
            self._cache_known = True
        return None if self._cache is None else self._cache / f"{name}{_BYTECODE}"

    def read(self, f: str) -> tuple[Any, str]:
        source = os.path.join(self._srcName, f"{f}.py")
        try:
            found = os.stat(source)
        except OSError:
            return self._as_pysnmp_reads(f)  # not here as source: pysnmp's own search
        compiled = self._compiled(f)
        if compiled is None:
            return self._as_pysnmp_reads(f)
        key = (str(compiled), found.st_mtime_ns, found.st_size)  # an edited source: anew
        with _lock:
            code = _codes.get(key)
            if code is None:
                try:
                    code = _load(compiled, found) or _compile(source, compiled, found)
                except (OSError, py_compile.PyCompileError):
                    return self._as_pysnmp_reads(f)
                _codes[key] = code
            _served_code[str(compiled)] = code
        self._served.add(f)
        return code, _BYTECODE

    def _as_pysnmp_reads(self, f: str) -> tuple[Any, str]:
        found: tuple[Any, str] = super().read(f)
        return found

    def full_path(self, f: str = "", sfx: str = "") -> str:
        # What pysnmp hands to runpy: the bytecode file, so that runpy does not compile.
        if f in self._served and sfx == _BYTECODE:
            compiled = self._compiled(f)
            if compiled is not None:
                return str(compiled)
        return str(super().full_path(f, sfx))


def _load(compiled: Path, source: os.stat_result) -> CodeType | None:
    """The code in ``compiled`` if it was made from the source as it is now."""
    try:
        data = compiled.read_bytes()
    except FileNotFoundError:
        return None
    if len(data) < _HEADER.size:
        return None
    magic, flags, mtime, size = _HEADER.unpack_from(data)
    if (magic != importlib.util.MAGIC_NUMBER or flags != 0
            or mtime != int(source.st_mtime) & 0xFFFFFFFF
            or size != source.st_size & 0xFFFFFFFF):
        return None
    try:
        code = marshal.loads(data[_HEADER.size:])
    except (EOFError, ValueError, TypeError):  # a damaged file: compiled again
        return None
    return code if isinstance(code, CodeType) else None


def _compile(source: str, compiled: Path, found: os.stat_result) -> CodeType:
    # py_compile writes through a temporary file and a rename: processes compiling
    # the same module at once each publish a whole file.
    py_compile.compile(source, cfile=str(compiled), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    code = _load(compiled, found)
    if code is None:
        raise OSError(f"{compiled} does not hold what was just compiled into it")
    return code


class _RunServedCode:
    """What pysnmp's builder calls as ``runpy``: ``run_path`` of a bytecode file this
    module served runs the code already in memory, as ``runpy.run_path`` would run
    that file (the same globals), without reading and unmarshalling it again for every
    engine; any other path goes to ``runpy`` itself."""

    def run_path(self, path_name: str, init_globals: dict[str, Any] | None = None,
                 run_name: str | None = None) -> dict[str, Any]:
        with _lock:
            code = _served_code.get(str(path_name))
        if code is None:
            ran: dict[str, Any] = runpy.run_path(path_name, init_globals, run_name)
            return ran
        namespace: dict[str, Any] = {
            "__name__": run_name or "<run_path>", "__file__": str(path_name),
            "__cached__": None, "__doc__": None, "__loader__": None, "__package__": None,
            "__spec__": None, **(init_globals or {})}
        exec(code, namespace)  # pysnmp's own MIB module, compiled from its file
        return namespace

    def __getattr__(self, name: str) -> Any:
        return getattr(runpy, name)


_RUN_SERVED_CODE = _RunServedCode()


def new_builder() -> builder.MibBuilder:
    """A MIB builder with pysnmp's search path, its directories run from bytecode."""
    builder.runpy = _RUN_SERVED_CODE
    made = builder.MibBuilder()
    made.set_mib_sources(*[
        CompiledMibSource(str(source.full_path()))
        if type(source) is builder.DirMibSource else source
        for source in made.get_mib_sources()])
    return made


def new_engine(*, max_message_size: int = 65507, engine_id: Any = None) -> engine.SnmpEngine:
    """``SnmpEngine(snmpEngineID=engine_id, maxMessageSize=max_message_size)``, on a
    builder from :func:`new_builder`, with USM's master keys from :mod:`.usmkey`."""
    usmkey.install()
    dispatcher = MsgAndPduDispatcher(instrum.MibInstrumController(new_builder()))
    return engine.SnmpEngine(snmpEngineID=engine_id, maxMessageSize=max_message_size,
                             msgAndPduDsp=dispatcher)
