"""TypedValue <-> JSON value (gNMI 2.2.3, 2.3).

The server answers in ``json_ietf_val`` (JSON_IETF) or ``json_val`` (JSON): the subtree
at the path, or the bare value of a leaf. A Set's value may come as either JSON field or
as a scalar (string, int, uint, bool, double, the deprecated float and decimal64, a
leaf-list of scalars); ``bytes_val`` becomes base64 text (RFC 7951 6.6). ASCII, protobuf
(``any_val``, ``proto_bytes``) are UNIMPLEMENTED. Without a schema an ``int_val`` is
stored as a JSON number, whatever RFC 7951 says of 64-bit integers.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from gnmi_pb import gnmi_pb2

from emulators.gnmi.errors import GnmiError

ENCODINGS = {"JSON": gnmi_pb2.JSON, "JSON_IETF": gnmi_pb2.JSON_IETF}
"""The encodings this server can answer in (a face lists those it offers)."""


def encoding_name(encoding: int) -> str:
    return str(gnmi_pb2.Encoding.Name(encoding)) if encoding in gnmi_pb2.Encoding.values() \
        else str(encoding)


def encoded(value: Any, encoding: int) -> gnmi_pb2.TypedValue:
    text = json.dumps(value, separators=(",", ":")).encode("utf-8")
    if encoding == gnmi_pb2.JSON:
        return gnmi_pb2.TypedValue(json_val=text)
    return gnmi_pb2.TypedValue(json_ietf_val=text)


def decoded(value: gnmi_pb2.TypedValue, where: str) -> Any:
    """The JSON value a Set's TypedValue carries."""
    kind = value.WhichOneof("value")
    if kind in ("json_ietf_val", "json_val"):
        raw = getattr(value, kind)
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise GnmiError("INVALID_ARGUMENT", f"{where}: the value is not JSON: {error}") \
                from error
    if kind in ("string_val", "int_val", "uint_val", "bool_val", "double_val", "float_val"):
        return getattr(value, kind)
    if kind == "decimal_val":
        return value.decimal_val.digits / 10 ** value.decimal_val.precision
    if kind == "bytes_val":
        return base64.b64encode(value.bytes_val).decode("ascii")
    if kind == "leaflist_val":
        return [decoded(element, where) for element in value.leaflist_val.element]
    if kind is None:
        raise GnmiError("INVALID_ARGUMENT", f"{where}: the update carries no value")
    raise GnmiError("UNIMPLEMENTED", f"{where}: values in {kind} are not implemented; "
                                     "send json_ietf_val")
