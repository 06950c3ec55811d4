"""OpenConfig documents against Google's OpenConfig bindings (oc-config-validate).

oc-config-validate ships pyangbind bindings generated from openconfig/public
(``oc_config_validate.models.qos`` from openconfig-qos 2026-01-16,
``.interfaces`` from openconfig-interfaces 2024-12-05 with openconfig-if-ethernet):
written independently of this project, they refuse an unknown member and a value their
type does not take. :func:`load` loads a whole document into them.

The bindings know only OpenConfig's modules: :func:`openconfig_only` strips every member
whose module prefix is not an ``openconfig-*`` module (``msoctl-qos-augments:...``,
``arista-qos-augments:...``), with everything under it, before loading.

pyangbind takes a uint64 as a JSON number as readily as a string, where RFC 7951
(section 6.1) wants a string; so :func:`load` also checks each leaf's JSON value
against the YANG type the bindings give it (``_yang_type``): :func:`check_json_types`.

A missing oc-config-validate skips (fails with CI=true: :mod:`tests.support.peers`).
"""

from __future__ import annotations

from typing import Any

from tests.support.peers import require_module

Tree = dict[str, Any]

JSON_STRINGS = {"uint64", "int64", "decimal64", "oc-yang:counter64", "oc-yang:gauge64",
                "yang:counter64", "yang:gauge64", "string", "leafref", "identityref",
                "enumeration"}
JSON_NUMBERS = {"uint8", "uint16", "uint32", "int8", "int16", "int32", "oc-types:percentage",
                "oc-inet:dscp"}
JSON_BOOLEANS = {"boolean"}
"""The JSON value RFC 7951 (section 6) writes for each YANG type the bindings name."""

HOW_TO_INSTALL = "pip install oc-config-validate (in the dev extra)"


def bindings() -> tuple[Any, Any, Any]:
    """The qos and interfaces binding modules and pyangbind's JSON decoder."""
    qos = require_module("oc_config_validate.models.qos", how_to_install=HOW_TO_INSTALL)
    interfaces = require_module("oc_config_validate.models.interfaces",
                                how_to_install=HOW_TO_INSTALL)
    serialise = require_module("pyangbind.lib.serialise", how_to_install=HOW_TO_INSTALL)
    return qos, interfaces, serialise.pybindJSONDecoder


def openconfig_only(value: Any) -> Any:
    """``value`` without the members of modules other than openconfig-*."""
    if isinstance(value, list):
        return [openconfig_only(entry) for entry in value]
    if isinstance(value, dict):
        return {member: openconfig_only(child) for member, child in value.items()
                if ":" not in member or member.startswith("openconfig-")}
    return value


def load(doc: Tree) -> dict[str, Any]:
    """Load each top-level member of ``doc`` into its binding, and check its leaves' JSON
    forms; the loaded roots. Raises what pyangbind raises, or AssertionError."""
    qos, interfaces, decoder = bindings()
    roots: dict[str, Any] = {}
    for top, subtree in doc.items():
        root = {"openconfig-qos:qos": qos.openconfig_qos,
                "openconfig-interfaces:interfaces": interfaces.openconfig_interfaces}[top]()
        decoder.load_ietf_json({top: subtree}, None, None, obj=root)
        check_json_types({top: subtree}, root, "")
        roots[top] = root
    return roots


def _elements(binding: Any) -> dict[str, Any]:
    elements = (getattr(binding, attribute) for attribute in binding._pyangbind_elements)
    return {element._yang_name: element for element in elements}


def check_json_types(doc: Tree, binding: Any, path: str) -> None:
    """Every leaf of ``doc`` is the JSON value RFC 7951 writes for its type in the
    bindings (``binding`` is the loaded node ``doc`` describes)."""
    elements = _elements(binding)
    for member, value in doc.items():
        name = member.rsplit(":", 1)[-1]
        element = elements[name]
        where = f"{path}/{member}"
        if isinstance(value, dict):
            check_json_types(value, element, where)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            for entry in value:
                # _keyval is the key leaf's Python name (interface_id for interface-id)
                key_name = next(m for m in entry if m.replace("-", "_") == element._keyval)
                key = entry[key_name]
                check_json_types({m: v for m, v in entry.items() if m != key_name},
                                 element[key], f"{where}[{key_name}={key}]")
        else:
            _check_leaf(element._yang_type, value, where)


def _check_leaf(yang_type: str, value: Any, where: str) -> None:
    if yang_type in JSON_STRINGS:
        assert isinstance(value, str), f"{where}: {yang_type} as {value!r}, not a string"
    elif yang_type in JSON_NUMBERS:
        assert isinstance(value, int) and not isinstance(value, bool), \
            f"{where}: {yang_type} as {value!r}, not a number"
    elif yang_type in JSON_BOOLEANS:
        assert isinstance(value, bool), f"{where}: {yang_type} as {value!r}"
    else:
        raise AssertionError(f"{where}: the test knows no JSON form of {yang_type}")
