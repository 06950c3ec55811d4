"""Validation of a datastore against yang/msoctl-congestion.yang.

Two layers:

- :func:`check_structure` (always): every element is a configuration node of the
  module, every list entry has its keys, and every leaf value is of its type
  (ranges, enumerations, booleans), from the schema table in
  :mod:`emulators.netconf.yangdata` (another model's :class:`DataSchema` when given:
  emulators/netconf/openconfig.py). edit-config runs it on what it is given.
- The ``must`` rules, at validate and commit: with libyang (CESNET, the ``yang``
  extra) when it imports, the real YANG library evaluating the module itself;
  otherwise **the fallback** :class:`MustRules`, the module's six ``must`` rules
  written out in Python, so the emulator runs on a machine with only Python
  (``make demo``). Both answer ``operation-failed`` with the rule's
  error-app-tag at the path netconfd reports (tests/interop/test_yang.py); any change
  to a ``must`` rule in the module has to be made in :class:`MustRules` too,
  which tests/conformance/test_netconf_datastore.py checks against libyang on the same
  documents.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Protocol

from lxml import etree
from lxml.etree import _Element

from drivers.switch.schema import PREFIX
from emulators.netconf.messages import RpcError
from emulators.netconf.yangdata import (
    MSOCTL,
    PATH_NAMESPACES,
    DataSchema,
    clark,
    local_name,
)
from emulators.netconf.yangdata import Path as SchemaPath

YANG_DIRECTORY = Path(__file__).resolve().parents[2] / "yang"


class Validator(Protocol):
    name: str

    def must_errors(self, root: _Element) -> list[RpcError]:
        """The ``must`` violations of a whole configuration (``root`` holds ``<switch>``)."""


def _error(tag: str, message: str, element: _Element | None, *, path: str | None = None,
           app_tag: str | None = None, bad_element: str | None = None,
           schema: DataSchema = MSOCTL) -> RpcError:
    where = path if path is not None else (
        schema.instance_path(element) if element is not None else None)
    if where == "/":  # a top-level element: no path inside the module
        where = None
    return RpcError(tag, message, app_tag=app_tag, path=where,
                    path_namespaces=schema.namespaces_in(where) if where else None,
                    info={"bad-element": bad_element} if bad_element else None)


def check_structure(root: _Element, schema: DataSchema = MSOCTL) -> list[RpcError]:
    """Unknown elements, state data and bad leaf values under ``root`` (a ``<config>``)
    for the modules of ``schema``; one error per offending subtree."""
    errors: list[RpcError] = []
    _check_children(root, (), errors, schema)
    return errors


def _check_children(parent: _Element, path: SchemaPath, errors: list[RpcError],
                    schema: DataSchema) -> None:
    # Runs for every element of every datastore that is committed or validated: one
    # dict lookup by tag per element, the rest only where something is wrong.
    children = schema.children[path]
    for element in parent:
        tag = element.tag
        if not isinstance(tag, str):
            continue
        found = children.get(tag)
        if found is None:
            errors.append(_error("unknown-element", schema.unknown(element),
                                 element.getparent(), bad_element=local_name(element),
                                 schema=schema))
            continue
        child_path, node = found
        if not node.config:
            name = local_name(element)
            errors.append(_error("invalid-value", f"{name} is state data, not configuration",
                                 element, bad_element=name, schema=schema))
        elif node.kind in ("leaf", "leaf-list"):
            if not (element.text or "").strip() and \
                    element.get(OPERATION) in ("delete", "remove"):
                continue
            why = schema.value_error(child_path, node, element)
            if why is not None:
                name = local_name(element)
                errors.append(_error("invalid-value", f"{name}: {why}", element,
                                     bad_element=name, schema=schema))
        else:
            if node.kind == "list":
                missing_keys = schema.missing_keys(element, node)
                if missing_keys:  # RFC 7950 8.3.1: a list entry without all its keys
                    errors.append(_error("missing-element", f"{local_name(element)} needs "
                                         f"its key {', '.join(missing_keys)}", element,
                                         bad_element=missing_keys[0], schema=schema))
                    continue
            _check_children(element, child_path, errors, schema)


OPERATION = "{urn:ietf:params:xml:ns:netconf:base:1.0}operation"


class MustRules:
    """The fallback: the module's six ``must`` rules in Python.

    Each reads the tree as the XPath does and, like the module, never relies
    on default leaves being present (an absent fast-cnp ``enabled`` is false,
    an absent ``cnp-priority`` is 6).
    """

    name = "fallback"

    def must_errors(self, root: _Element) -> list[RpcError]:
        errors: list[RpcError] = []
        for switch in root.iterfind(clark("switch")):
            fast_cnp_on = _text(switch, "fast-cnp", "enabled") == "true"
            cnp_priority = _text(switch, "fast-cnp", "cnp-priority")
            for port in switch.iterfind(f"{clark('ports')}/{clark('port')}"):
                errors.extend(self._port(port, fast_cnp_on, cnp_priority))
        return errors

    def _port(self, port: _Element, fast_cnp_on: bool,
              cnp_priority: str | None) -> list[RpcError]:
        errors: list[RpcError] = []
        priorities = port.findall(clark("lossless-priorities"))
        for priority in priorities:
            value = (priority.text or "").strip()
            if fast_cnp_on and _number(value) == _number(cnp_priority or "6"):
                errors.append(_must(priority, "cnp-priority-lossless",
                                    "a lossless priority may not be the fast-cnp cnp-priority"))
        if priorities and _find(port, "pfc", "xoff-bytes") is None:
            errors.append(_must(port, "lossless-without-headroom",
                                "a port with lossless priorities needs pfc/xoff-bytes "
                                "(its PFC headroom)"))
        xon = _find(port, "pfc", "xon-bytes")
        xoff = _text(port, "pfc", "xoff-bytes")
        if xon is not None and xoff is not None and not _below(xon.text, xoff):
            errors.append(_must(xon, "pfc-xon-not-below-xoff",
                                "pfc xon-bytes must be below xoff-bytes"))
        for queue in port.iterfind(f"{clark('queues')}/{clark('queue')}"):
            errors.extend(self._queue(queue, port))
        return errors

    def _queue(self, queue: _Element, port: _Element) -> list[RpcError]:
        errors: list[RpcError] = []
        low = _find(queue, "wred", "min-threshold")
        high = _text(queue, "wred", "max-threshold")
        if low is not None and high is not None and not _below(low.text, high):
            errors.append(_must(low, "wred-min-not-below-max",
                                "wred min-threshold must be below max-threshold"))
        ecn = _find(queue, "wred", "enable-ecn")
        if ecn is not None and (ecn.text or "").strip() != "false" and (
                low is None or high is None):
            errors.append(_must(ecn, "ecn-without-thresholds",
                                "enable-ecn needs min-threshold and max-threshold"))
        enabled = _find(queue, "fast-cnp", "enabled")
        switch = port.getparent().getparent()
        if enabled is not None and (enabled.text or "").strip() != "false" and \
                _text(switch, "fast-cnp", "enabled") != "true":
            errors.append(_must(enabled, "fast-cnp-disabled-globally",
                                "fast-cnp on a queue needs fast-cnp enabled globally"))
        return errors


def _find(parent: _Element, *names: str) -> _Element | None:
    return parent.find("/".join(clark(name) for name in names))


def _text(parent: _Element, *names: str) -> str | None:
    element = _find(parent, *names)
    return None if element is None else (element.text or "").strip()


def _number(text: str | None) -> float:
    try:
        return float((text or "").strip())
    except ValueError:
        return float("nan")  # XPath's NaN: every comparison with it is false


def _below(low: str | None, high: str | None) -> bool:
    return _number(low) < _number(high)


def _must(element: _Element, app_tag: str, message: str) -> RpcError:
    return _error("operation-failed", message, element, app_tag=app_tag)


class LibyangValidator:
    """The ``must`` rules evaluated by libyang on the module itself."""

    name = "libyang"

    def __init__(self, libyang: Any) -> None:
        from _libyang import ffi, lib  # the C API: error items keep the app-tag

        lib.ly_set_log_clb(ffi.NULL, True)  # errors carry a path only with this
        self._ffi, self._lib, self._libyang = ffi, lib, libyang
        self.context = libyang.Context(str(YANG_DIRECTORY))
        self.context.load_module("msoctl-congestion")

    def must_errors(self, root: _Element) -> list[RpcError]:
        document = "".join(etree.tostring(child, encoding="unicode")
                           for child in root if isinstance(child.tag, str))
        if not document:
            return []
        items: list[tuple[str, str | None, str | None]] = []
        fold = self.context.error

        def record(message: str, *arguments: object) -> Exception:
            items.extend(self._items())
            return fold(message, *arguments)  # type: ignore[no-any-return]

        self.context.error = record
        try:
            tree = self.context.parse_data_mem(document, "xml", strict=True, no_state=True,
                                               validate_present=True)
        except self._libyang.LibyangError as error:
            return [self._to_rpc_error(message, path, app_tag)
                    for message, path, app_tag in items] or [
                RpcError("invalid-value", str(error))]
        finally:
            self.context.error = fold
        if tree is not None:
            tree.free()
        return []

    def _items(self) -> list[tuple[str, str | None, str | None]]:
        ffi, lib = self._ffi, self._lib
        found: list[tuple[str, str | None, str | None]] = []
        item = lib.ly_err_first(self.context.cdata)
        while item:
            found.append((
                ffi.string(item.msg).decode() if item.msg else "",
                ffi.string(item.path).decode() if item.path else None,
                ffi.string(item.apptag).decode() if item.apptag else None,
            ))
            item = item.next
        return found

    @staticmethod
    def _to_rpc_error(message: str, path: str | None, app_tag: str | None) -> RpcError:
        where = None if path is None else prefixed(_location(path))
        return RpcError("operation-failed" if app_tag else "invalid-value", message,
                        app_tag=app_tag, path=where,
                        path_namespaces=PATH_NAMESPACES if where else None)


def _location(path: str) -> str:
    """libyang 2.1 words its error paths ``Data location "/a/b".``; the path itself."""
    quoted = re.fullmatch(r'(?:Data|Schema) location "(.*)"\.?', path)
    return quoted.group(1) if quoted else path


def prefixed(path: str) -> str:
    """libyang's ``/msoctl-congestion:switch/ports/port[name='x']`` in the NETCONF
    form, every node and key in the module's prefix."""
    bare = re.sub(r"(?<=[/\[])[A-Za-z_][\w.-]*:", "", path)
    return re.sub(r"(?<=[/\[])(?=[A-Za-z_])", f"{PREFIX}:", bare)


def default_validator(*, use_libyang: bool = True) -> Validator:
    """libyang when it imports (and ``use_libyang``), else the fallback :class:`MustRules`."""
    if use_libyang:
        try:
            import libyang
        except ImportError:  # the fallback, documented above
            return MustRules()
        return LibyangValidator(libyang)
    return MustRules()

