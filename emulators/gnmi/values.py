"""TypedValue <-> JSON value (gNMI 2.2.3, 2.3).

The server answers in ``json_ietf_val`` (JSON_IETF) or ``json_val`` (JSON): the subtree
at the path, or the bare value of a leaf; a telemetry leaf the face names a kind for
(``Face.leaf_kind``) goes as that scalar instead (:func:`leaf_value`: a decimal64 as
``double_val``, as targets stream them). A Set's value may come as either JSON field or
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


SCALAR_SENDS = frozenset({"double_val", "uint_val", "int_val", "string_val", "bool_val"})
"""The TypedValue fields a face may ask a leaf to be sent in (``Face.leaf_kind``)."""


def leaf_value(value: Any, kind: str | None, encoding: int) -> gnmi_pb2.TypedValue:
    """A leaf's value as a scalar of ``kind`` (a decimal64 or 64-bit integer leaf's JSON
    string converted to the number it spells); JSON as :func:`encoded` when there is no
    kind, the value is not a leaf or does not convert."""
    if kind not in SCALAR_SENDS or isinstance(value, dict | list) or value is None:
        return encoded(value, encoding)
    try:
        if kind == "double_val":
            return gnmi_pb2.TypedValue(double_val=float(value))
        if kind in ("uint_val", "int_val"):
            number = int(value)
            if kind == "uint_val" and not 0 <= number < 2 ** 64:
                return encoded(value, encoding)
            return gnmi_pb2.TypedValue(**{kind: number})
        if kind == "bool_val" and isinstance(value, bool):
            return gnmi_pb2.TypedValue(bool_val=value)
        if kind == "string_val" and isinstance(value, str):
            return gnmi_pb2.TypedValue(string_val=value)
    except (TypeError, ValueError, OverflowError):
        pass
    return encoded(value, encoding)


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
