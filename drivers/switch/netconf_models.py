"""The switch driver over NETCONF for the device models written as JSON trees (OpenConfig).

:class:`ModelNetconfSession` is :class:`~drivers.switch.netconf.SwitchSession` (the same
SSH session, RPCs, errors, locks, confirmed commits and persist tokens) speaking a
device model of :mod:`drivers.switch.models` instead of the msoctl module: the model
writes its edit as paths and JSON, :mod:`drivers.switch.xmljson` puts it in XML with
the model's namespaces, and the candidate and running trees come back the same way,
so the plan is the server's own diff in the device's paths.

It needs ``:candidate`` (every OpenConfig NETCONF server of the field has it); with
``:confirmed-commit:1.1`` and a persist id a change is left pending, as with the
msoctl module; verification reads running back in a new session, as intent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from drivers.errors import Unsupported
from drivers.switch.intent import Intent, as_intent, not_held, unmet
from drivers.switch.jsontree import Edit, Trees
from drivers.switch.models import build
from drivers.switch.models.base import (
    DeviceModel,
    counter_tree,
    model_changes,
    model_edit,
)
from drivers.switch.models.openconfig import XML_SHAPE
from drivers.switch.netconf import (
    Applied,
    NetconfTarget,
    Plan,
    SwitchSession,
    check_confirm_timeout,
)
from drivers.switch.tree import Change
from drivers.switch.xmljson import edit_config, read_trees, subtree_filter

SHAPES = {"openconfig": XML_SHAPE}
"""The models spoken over NETCONF, and what their XML needs (namespaces, lists, types)."""

Want = Intent | Mapping[str, Any]


class ModelNetconfSession(SwitchSession):
    """One NETCONF session to a switch of a JSON model; use it as a context manager."""

    def __init__(self, target: NetconfTarget, model: str = "openconfig"):
        self.model_name = model
        super().__init__(target)

    def _check_model(self) -> None:
        name = self.model_name
        model = build(name, self.announced_modules, device=self.name)
        shape = SHAPES.get(model.name)
        if shape is None:
            raise Unsupported(f"model {model.name} is not spoken over NETCONF here",
                              device=self.name)
        if not self.capabilities.candidate:
            raise Unsupported("a switch of a device model is configured through its "
                              ":candidate datastore, which this server does not offer",
                              device=self.name)
        self.model: DeviceModel = model
        self.shape = shape

    def describe(self) -> list[str]:
        return ["netconf", f"model {self.model.name}", *sorted(
            m for m in self.announced_modules if "augments" in m),
            *self.capabilities.describe()]

    # ---- reading ----------------------------------------------------------------------

    def read(self, source: str = "running") -> Trees:
        """The model's trees in datastore ``source``."""
        data = self._data(f"get-config {source}", self._manager.get_config, source=source,
                          filter=subtree_filter(self.model.read_paths, self.shape))
        return Trees(read_trees(data, self.model.read_paths, self.shape),
                     list_keys=self.model.list_keys)

    def read_intent(self, source: str = "running") -> Intent:
        """The intent datastore ``source`` holds (every port configured)."""
        return self.model.parse(self.read(source))

    def get_state(self, port: str | None = None) -> dict[str, Any]:
        """The congestion counters in the model's state (``<get>``), per port and queue, in
        the shape of the msoctl module's state tree."""
        return self._counters(self.read(), port)

    def read_intent_and_state(self) -> tuple[Intent, dict[str, Any]]:
        """:meth:`read_intent` and :meth:`get_state`, running read once."""
        config = self.read()
        return self.model.parse(config), self._counters(config)

    def _counters(self, config: Trees, port: str | None = None) -> dict[str, Any]:
        where = self.model.state_path
        data = self._data("get", self._manager.get, filter=subtree_filter((where,), self.shape))
        state = read_trees(data, (where,), self.shape)[where]
        return counter_tree(self.model.counters(config, state), port)

    def get_config(self, source: str = "running") -> dict[str, Any]:
        """The model's trees in ``source``, by path (not the msoctl module's tree)."""
        return self.read(source).by_text()

    # ---- changing ---------------------------------------------------------------------

    def _changes(self, before: Trees, after: Trees) -> list[Change]:
        return model_changes(self.model, before, after)

    def _edit_for(self, want: Want, before: Trees, merge_only: bool) -> Edit:
        return model_edit(self.model, as_intent(want), before, merge_only=merge_only)

    def plan(self, want: Want, *, merge_only: bool = False) -> Plan:
        """The server's own diff of running and a candidate holding ``want``; changes
        nothing."""
        with self._candidate_locked():
            before = self.read("running")
            self._edit("candidate", edit_config(self._edit_for(want, before, merge_only),
                                                self.shape))
            try:
                self._validate()
                after = self.read("candidate")
            finally:
                self._rpc("discard-changes", self._manager.discard_changes)
        return Plan(before.by_text(), after.by_text(), self._changes(before, after),
                    "candidate")

    def apply(self, want: Want, *, confirm_timeout_seconds: int = 120,
              persist_id: str | None = None, merge_only: bool = False,
              check: Callable[[list[Change]], None] | None = None) -> Applied:
        """As :meth:`SwitchSession.apply`, in the device's model."""
        check_confirm_timeout(confirm_timeout_seconds, self.name)
        with self._candidate_locked():
            before = self.read("running")
            config = edit_config(self._edit_for(want, before, merge_only), self.shape)
            return self._commit_candidate(
                want, config, lambda: self._changes(before, self.read("candidate")), check,
                confirm_timeout_seconds, persist_id)

    def verify(self, want: Want) -> None:
        """Running, read in this session, holds every field of ``want`` as intent."""
        missing = unmet(as_intent(want), self.read_intent())
        if missing:
            raise not_held("running", [d.describe() for d in missing], device=self.name)
