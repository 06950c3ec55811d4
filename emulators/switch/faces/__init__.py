"""The data models the emulated deep-buffer switch serves over gNMI, one face each.

A face (:class:`emulators.gnmi.face.Face`) checks a configuration against a published
model, translates it into the chip's own configuration (the yang/msoctl-congestion.yang
tree :meth:`SwitchModel.apply_config` takes) and the chip's state back into the model:

- :mod:`.openconfig`: OpenConfig interfaces and QoS, with Arista's or this project's
  augments for what OpenConfig lacks (its schema restated in :mod:`.openconfig_schema`);
- :mod:`.sonic`: SONiC's CONFIG_DB tables and COUNTERS_DB (:mod:`.sonic_schema`).

This module holds what they share: :class:`ChipTree`, the chip's configuration as a face
builds it. Each leaf remembers the node of the face's model it came from, so that the
chip's own rules (the ``must`` statements and ranges of msoctl-congestion, which the
published models do not have) are refused at the node the client wrote, with
FAILED_PRECONDITION: a configuration the model allows and this switch cannot run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from emulators.gnmi.face import FaceError
from emulators.switch.config import (
    DEFAULT_CNP_PRIORITY,
    QUEUES_PER_PORT,
    ConfigError,
)
from emulators.switch.model import SwitchModel

ModelSource = SwitchModel | Callable[[], SwitchModel]
"""A face's switch: the model, or a callable giving the current one (a device's factory
reset builds a new model)."""

CHIP_SPEEDS = ("100G", "200G", "400G", "800G")
"""The chip's ``port-speed`` enumeration (msoctl-congestion)."""

DETECTION_MS = (1, 60_000)
RESTORATION_MS = (1, 600_000)
"""The chip's ranges of the watchdog's detection and restoration times (msoctl-congestion)."""


def model_getter(source: ModelSource) -> Callable[[], SwitchModel]:
    if isinstance(source, SwitchModel):
        return lambda: source
    return source


def failed(path: str | None, message: str) -> FaceError:
    return FaceError(message, path=path, code="FAILED_PRECONDITION")


def invalid(path: str | None, message: str) -> FaceError:
    return FaceError(message, path=path, code="INVALID_ARGUMENT")


class ChipTree:
    """The chip's configuration being built, leaf by leaf, each with the face's path of
    the node it came from (its *origin*).

    Leaves are named by their path under a port (``pfc/xoff-bytes``), a queue
    (``wred/min-threshold``) or the switch-wide ``fast-cnp``. A leaf set twice to
    different values (two of the face's nodes saying different things of one chip
    setting) is refused at the second origin.
    """

    def __init__(self, ports: Iterable[str]):
        self._physical = frozenset(ports)
        self._fast_cnp: dict[str, Any] = {}
        self._ports: dict[str, dict[str, Any]] = {}
        self._queues: dict[tuple[str, int], dict[str, Any]] = {}
        self._origins: dict[str, str] = {}

    # ---- building -------------------------------------------------------------------

    def port(self, name: str, origin: str) -> None:
        """Configure port ``name``; refused where the chip has no such port."""
        if name not in self._physical:
            raise failed(origin, f"the switch has no port {name!r}")
        if name not in self._ports:
            self._ports[name] = {}
            self._origins[f"port[{name}]"] = origin

    def fast_cnp(self, leaf: str, value: Any, origin: str) -> None:
        self._set(self._fast_cnp, f"fast-cnp/{leaf}", leaf, value, origin)

    def port_leaf(self, port: str, leaf: str, value: Any, origin: str) -> None:
        self.port(port, origin)
        self._set(self._ports[port], f"port[{port}]/{leaf}", leaf, value, origin)

    def queue_leaf(self, port: str, queue_id: int, leaf: str, value: Any, origin: str) -> None:
        self.port(port, origin)
        if not 0 <= queue_id < QUEUES_PER_PORT:
            raise failed(origin, f"the chip's ports have queues 0..{QUEUES_PER_PORT - 1}, "
                                 f"not {queue_id}")
        node = self._queues.setdefault((port, queue_id), {})
        self._set(node, f"port[{port}]/queue[{queue_id}]/{leaf}", leaf, value, origin)

    def _set(self, node: dict[str, Any], key: str, leaf: str, value: Any, origin: str) -> None:
        *parents, name = leaf.split("/")
        for parent in parents:
            node = node.setdefault(parent, {})
        if name in node and node[name] != value:
            raise failed(origin, f"sets the chip's {leaf} to {value!r}, which "
                                 f"{self._origins[key]} sets to {node[name]!r}")
        if name not in node:
            node[name] = value
            self._origins[key] = origin

    # ---- reading --------------------------------------------------------------------

    def get(self, key: str) -> Any:
        """The value at ``key`` (``fast-cnp/enabled``, ``port[P]/pfc/xoff-bytes``,
        ``port[P]/queue[Q]/wred/enable-ecn``), or None."""
        node: Any = {"fast-cnp": self._fast_cnp,
                     **{f"port[{p}]": self._port_node(p) for p in self._ports}}
        for part in key.split("/"):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def origin(self, key: str) -> str | None:
        return self._origins.get(key)

    def _port_node(self, port: str) -> dict[str, Any]:
        return {**self._ports[port], **{f"queue[{q}]": node for (p, q), node
                                        in self._queues.items() if p == port}}

    def tree(self) -> dict[str, Any]:
        """The tree :meth:`SwitchModel.apply_config` takes."""
        ports = []
        for name, leaves in self._ports.items():
            queues = [{"queue-id": queue_id, **node} for (port, queue_id), node
                      in sorted(self._queues.items()) if port == name]
            ports.append({"name": name, **leaves,
                          **({"queues": {"queue": queues}} if queues else {})})
        switch: dict[str, Any] = {"ports": {"port": ports}}
        if self._fast_cnp:
            switch["fast-cnp"] = self._fast_cnp
        return {"switch": switch}

    # ---- the chip's rules -----------------------------------------------------------

    def check(self) -> None:
        """Refuse what msoctl-congestion's ``must`` statements and ranges refuse, at the
        origin of the offending leaf (each rule's error-app-tag in the message)."""
        fast_cnp_on = self.get("fast-cnp/enabled") is True
        cnp_priority = self.get("fast-cnp/cnp-priority")
        cnp_priority = DEFAULT_CNP_PRIORITY if cnp_priority is None else cnp_priority
        for port in self._ports:
            at = f"port[{port}]"
            lossless = self.get(f"{at}/lossless-priorities") or []
            xoff, xon = self.get(f"{at}/pfc/xoff-bytes"), self.get(f"{at}/pfc/xon-bytes")
            if lossless and xoff is None:
                raise failed(self.origin(f"{at}/lossless-priorities"),
                             f"lossless priorities of {port} need its PFC headroom "
                             "(xoff) as well (lossless-without-headroom)")
            if xon is not None and xoff is not None and not xon < xoff:
                raise failed(self.origin(f"{at}/pfc/xon-bytes"),
                             f"xon ({xon} B) must be below xoff ({xoff} B) "
                             "(pfc-xon-not-below-xoff)")
            if fast_cnp_on and cnp_priority in lossless:
                raise failed(self.origin(f"{at}/lossless-priorities"),
                             f"priority {cnp_priority} carries the switch's CNPs and may not "
                             "be lossless (cnp-priority-lossless)")
            self._check_watchdog(at)
            for queue_id in range(QUEUES_PER_PORT):
                self._check_queue(f"{at}/queue[{queue_id}]", fast_cnp_on)

    def _check_watchdog(self, at: str) -> None:
        for leaf, (low, high) in (("detection-time-ms", DETECTION_MS),
                                  ("restoration-time-ms", RESTORATION_MS)):
            value = self.get(f"{at}/pfc/watchdog/{leaf}")
            if value is not None and not low <= value <= high:
                raise failed(self.origin(f"{at}/pfc/watchdog/{leaf}"),
                             f"the chip's watchdog takes {low}..{high} ms, not {value} ms")

    def _check_queue(self, at: str, fast_cnp_on: bool) -> None:
        low, high = self.get(f"{at}/wred/min-threshold"), self.get(f"{at}/wred/max-threshold")
        if low is not None and high is not None and not low < high:
            raise failed(self.origin(f"{at}/wred/min-threshold"),
                         f"WRED's minimum threshold ({low} B) must be below its maximum "
                         f"({high} B) (wred-min-not-below-max)")
        if self.get(f"{at}/wred/enable-ecn") is True and (low is None or high is None):
            raise failed(self.origin(f"{at}/wred/enable-ecn"),
                         "ECN marking needs both thresholds (ecn-without-thresholds)")
        if self.get(f"{at}/fast-cnp/enabled") is True and not fast_cnp_on:
            raise failed(self.origin(f"{at}/fast-cnp/enabled"),
                         "fast CNP on a queue needs it enabled switch-wide "
                         "(fast-cnp-disabled-globally)")

    def apply(self, model: SwitchModel) -> None:
        """Check the chip's rules, then make this the chip's configuration."""
        self.check()
        try:
            model.apply_config(self.tree())
        except ConfigError as error:
            raise failed(None, f"the chip refused the configuration: {error}") from None
