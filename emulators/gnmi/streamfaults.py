"""Faults of a gNMI target's Subscribe stream (:mod:`emulators.faults`' interface).

Two device-level kinds a gNMI switch takes besides the transport ones, carried out by
the server on each SubscribeResponse that holds a notification (ONCE, POLL and STREAM):

| kind        | target                          | effect                                   |
|-------------|---------------------------------|------------------------------------------|
| malformed   | ``nan``, ``string``,            | each notification carries bad samples:   |
|             | ``unsubscribed``, or none (all) | ``nan``: its first numeric value becomes |
|             |                                 | NaN; ``string``: its last numeric value  |
|             |                                 | becomes text; ``unsubscribed``: one more |
|             |                                 | update, for :data:`UNSUBSCRIBED_PATH`,   |
|             |                                 | which no client subscribes to            |
| stream_stop | none                            | the call sends the first half of the     |
|             |                                 | notification's updates and ends with     |
|             |                                 | UNAVAILABLE, as a target that dies in    |
|             |                                 | the middle of a stream; a new call is    |
|             |                                 | cut alike while the fault stays          |

``count`` consumes one notification each. A numeric value is a scalar TypedValue's
number, or in a JSON value the first leaf (depth first, in member order) that is a JSON
number or a string spelling one. Nothing here knows a data model.

This module imports gnmi_pb2 only when it spoils a response, so that a device that
registers the kinds (:func:`register`) without serving gNMI does not load it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from emulators.faults import Fault, FaultInjector

MALFORMED = "malformed"
STREAM_STOP = "stream_stop"
STREAM_FAULTS = (MALFORMED, STREAM_STOP)
MALFORMED_TARGETS = ("nan", "string", "unsubscribed")
UNSUBSCRIBED_PATH = ("emulator-fault", "unsubscribed-leaf")
GARBLED_TEXT = "garbled"


def register(faults: FaultInjector) -> None:
    """Let ``faults`` take the stream kinds (the server carries them out)."""
    for kind in STREAM_FAULTS:
        if kind not in faults.kinds():
            faults.handle(kind, _check)


def _check(fault: Fault) -> None:
    from emulators.faults import FaultError

    if fault.kind == MALFORMED and fault.target not in (None, *MALFORMED_TARGETS):
        raise FaultError(f"a malformed fault takes a target of {', '.join(MALFORMED_TARGETS)} "
                         f"or none, not {fault.target!r}")
    if fault.kind == STREAM_STOP and fault.target is not None:
        raise FaultError("a stream_stop fault takes no target")


def spoiled(response: Any, faults: FaultInjector) -> tuple[Any, bool]:
    """``response`` (a SubscribeResponse) with the active stream faults carried out, and
    whether the call must end after it (stream_stop)."""
    if response.WhichOneof("response") != "update":
        return response, False
    from gnmi_pb import gnmi_pb2

    stop = faults.consume(STREAM_STOP) is not None
    malformed = None if stop else faults.consume(MALFORMED)
    if not stop and malformed is None:
        return response, False
    spoilt = gnmi_pb2.SubscribeResponse()
    spoilt.CopyFrom(response)
    notification = spoilt.update
    if stop:
        kept = list(notification.update)[:len(notification.update) // 2]
        del notification.update[:]
        notification.update.extend(kept)
        return spoilt, True
    assert malformed is not None
    kinds = MALFORMED_TARGETS if malformed.target is None else (malformed.target,)
    for kind in kinds:
        if kind == "unsubscribed":
            notification.update.append(gnmi_pb2.Update(
                path=gnmi_pb2.Path(elem=[gnmi_pb2.PathElem(name=name)
                                         for name in UNSUBSCRIBED_PATH]),
                val=gnmi_pb2.TypedValue(uint_val=1)))
            continue
        # NaN in the first numeric value, text in the last one not already NaN
        updates = list(notification.update)
        for update in updates if kind == "nan" else reversed(updates):
            if _spoil_value(update.val, kind, gnmi_pb2):
                break
    return spoilt, False


def _spoil_value(value: Any, kind: str, gnmi_pb2: Any) -> bool:
    """Make the first numeric value of ``value`` NaN or text; False when it has none."""
    field = value.WhichOneof("value")
    if field == "double_val" and math.isnan(value.double_val):
        return False  # spoilt already
    if field in ("double_val", "float_val", "int_val", "uint_val", "decimal_val"):
        value.CopyFrom(gnmi_pb2.TypedValue(double_val=math.nan) if kind == "nan"
                       else gnmi_pb2.TypedValue(string_val=GARBLED_TEXT))
        return True
    if field not in ("json_val", "json_ietf_val"):
        return False
    try:
        tree = json.loads(getattr(value, field))
    except ValueError:
        return False
    replacement = math.nan if kind == "nan" else GARBLED_TEXT
    changed, tree = _replace_first_number(tree, replacement, backwards=kind != "nan")
    if changed:
        setattr(value, field, json.dumps(tree).encode("utf-8"))
    return changed


def _replace_first_number(node: Any, replacement: Any, *,
                          backwards: bool = False) -> tuple[bool, Any]:
    """The first numeric leaf (the last, ``backwards``) of ``node`` replaced; NaN leaves
    are passed over."""
    if isinstance(node, dict | list):
        slots = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        for slot, child in reversed(slots) if backwards else slots:
            changed, new = _replace_first_number(child, replacement, backwards=backwards)
            if changed:
                node[slot] = new
                return True, node
        return False, node
    if isinstance(node, bool) or (isinstance(node, float) and math.isnan(node)):
        return False, node
    if isinstance(node, int | float):
        return True, replacement
    if isinstance(node, str):
        try:
            float(node)
        except ValueError:
            return False, node
        return True, replacement
    return False, node
