"""The switch driver over gNMI: congestion-control intent on OpenConfig and SONiC switches.

One :class:`GnmiSwitchSession` is one gNMI channel (:class:`drivers.transports.gnmi.GnmiClient`)
and one device model, chosen by the inventory (``model:``) or from the switch's
Capabilities (``auto``); the model's augments are the ones the switch announces.
It offers what :class:`drivers.switch.netconf.SwitchSession` offers, so the operator
layer drives both alike:

- :meth:`~GnmiSwitchSession.plan`: read the model's configuration trees (Get, type
  CONFIG), let the model write its edit, carry it out on a copy here, and diff: the
  changes in the device's own paths. Nothing is sent.
- :meth:`~GnmiSwitchSession.apply`: the same, shown to ``check`` first; then one
  SetRequest (one transaction on the switch: deletes, replaces, updates).

  - Where the switch announces the gNMI Commit extension and the caller gives a
    ``persist_id``: the Set carries ``commit`` with that id and a rollback duration;
    the change is running but pending. :meth:`confirm` or :meth:`cancel` (with the id,
    from any session) settle it; the switch rolls it back by itself when the duration
    passes. Without a ``persist_id``: commit, read back, confirm here.
  - Otherwise: Set, read back on a *new* channel (management survived the change),
    and when what was asked for is not there, a Set that puts back every tree the
    edit touched as it was before.
- :meth:`verify`: what the switch holds, parsed into intent, holds every field of
  the WANT (:func:`drivers.switch.intent.unmet`).

Errors are :mod:`drivers.errors`' (through the gNMI client); what the switch's model
has no place for is :class:`~drivers.errors.Unsupported`, raised before anything is
sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from drivers.errors import DeviceError, Unsupported, VerificationFailed
from drivers.switch.intent import Intent, as_intent, not_held, unmet
from drivers.switch.jsontree import DevicePath, Edit, Trees, path_text
from drivers.switch.models import build
from drivers.switch.models.base import (
    DeviceModel,
    counter_tree,
    model_changes,
    model_edit,
)
from drivers.switch.netconf import Applied, Plan, check_confirm_timeout
from drivers.switch.tree import Change
from drivers.transports.gnmi import CommitAction, GnmiCapabilities, GnmiClient, GnmiTarget

log = logging.getLogger(__name__)

Want = Intent | Mapping[str, Any]


@dataclass(frozen=True)
class GnmiSwitchTarget:
    """A switch reached over gNMI, and the model it speaks (``auto``: ask it)."""

    gnmi: GnmiTarget
    model: str = "auto"

    @property
    def name(self) -> str:
        return self.gnmi.name


class GnmiSwitchSession:
    """One gNMI channel to a switch; use it as a context manager."""

    def __init__(self, target: GnmiSwitchTarget):
        self.target = target
        self.name = target.name
        self.client = GnmiClient(target.gnmi)
        try:
            self.capabilities: GnmiCapabilities = self.client.capabilities()
            announced = {model.name for model in self.capabilities.models}
            self.model: DeviceModel = build(target.model, announced, device=self.name)
        except BaseException:
            self.client.close()
            raise

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> GnmiSwitchSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> list[str]:
        """What the session speaks, for ``-v`` and the journal."""
        found = [f"gnmi {self.capabilities.gnmi_version}", f"model {self.model.name}"]
        found += sorted(m.name for m in self.capabilities.models if "augments" in m.name)
        if self.capabilities.commit_confirmed:
            found.append("commit-confirmed")
        return found

    # ---- reading ----------------------------------------------------------------------

    def read(self, client: GnmiClient | None = None) -> Trees:
        """The model's configuration trees as the switch holds them now."""
        client = client or self.client
        texts = [path_text(where) for where in self.model.read_paths]
        trees: dict[DevicePath, Any] = {}
        for where, text in zip(self.model.read_paths, texts, strict=True):
            trees[where] = client.get_json(text, data_type="CONFIG")
        return Trees(trees, list_keys=self.model.list_keys)

    def read_intent(self) -> Intent:
        """The intent the switch's configuration holds (every port configured)."""
        return self.model.parse(self.read())

    def get_state(self, port: str | None = None) -> dict[str, Any]:
        """The congestion counters in the model's state, per port and queue, in the shape
        of the msoctl module's state tree (:func:`~drivers.switch.models.base.counter_tree`)."""
        return self._counters(self.read(), port)

    def read_intent_and_state(self) -> tuple[Intent, dict[str, Any]]:
        """:meth:`read_intent` and :meth:`get_state`, the configuration read once."""
        config = self.read()
        return self.model.parse(config), self._counters(config)

    def _counters(self, config: Trees, port: str | None = None) -> dict[str, Any]:
        state = self.client.get_json(path_text(self.model.state_path), data_type="ALL")
        return counter_tree(self.model.counters(config, state), port)

    # ---- changing ---------------------------------------------------------------------

    def _edit(self, want: Want, current: Trees, merge_only: bool) -> tuple[Edit, Trees]:
        edit = model_edit(self.model, as_intent(want), current, merge_only=merge_only)
        return edit, current.apply(edit)

    def _changes(self, before: Trees, after: Trees) -> list[Change]:
        return model_changes(self.model, before, after)

    def plan(self, want: Want, *, merge_only: bool = False) -> Plan:
        """What applying ``want`` would change, in the device's paths; sends nothing."""
        before = self.read()
        _, after = self._edit(want, before, merge_only)
        return Plan(before.by_text(), after.by_text(), self._changes(before, after), "local")

    def apply(self, want: Want, *, confirm_timeout_seconds: int = 120,
              persist_id: str | None = None, merge_only: bool = False,
              check: Callable[[list[Change]], None] | None = None) -> Applied:
        """Put ``want`` on the switch (see the module docstring for how it is confirmed)."""
        check_confirm_timeout(confirm_timeout_seconds, self.name)
        intent = as_intent(want)
        before = self.read()
        edit, after = self._edit(intent, before, merge_only)
        found = self._changes(before, after)
        if check is not None:
            check(found)
        if not found:
            return Applied([], "none", pending=False)
        if self.capabilities.commit_confirmed:
            token = persist_id or f"msoctl-{id(self):x}"
            self._set(edit, CommitAction(token, "commit", float(confirm_timeout_seconds)))
            if persist_id is not None:
                return Applied(found, "commit-confirmed", pending=True, persist_id=persist_id,
                               confirm_timeout_seconds=confirm_timeout_seconds)
            try:
                self.verify(intent)
            except BaseException:
                with suppress(DeviceError):
                    self.cancel(token)
                raise
            self.confirm(token)
            return Applied(found, "commit-confirmed", pending=False)
        self._set(edit)
        back = self._restore_edit(before, edit)
        try:
            self.verify(intent)
        except VerificationFailed:
            log.warning("%s: the change did not hold; putting back what it touched",
                        self.name)
            self._set(back)
            raise
        return Applied(found, "set", pending=False, undo=back)

    def _set(self, edit: Edit, commit: CommitAction | None = None) -> None:
        self.client.set(delete=[path_text(p) for p in edit.delete],
                        replace=[(path_text(p), v) for p, v in edit.replace],
                        update=[(path_text(p), v) for p, v in edit.update], commit=commit)

    @staticmethod
    def _restore_edit(before: Trees, edit: Edit) -> Edit:
        """The edit that puts back every node ``edit`` touches as it was ``before``."""
        touched = [*edit.delete, *(p for p, _ in edit.replace), *(p for p, _ in edit.update)]
        back = Edit()
        for where in dict.fromkeys(touched):
            value = before.get(where)
            if value is None:
                back.delete.append(where)
            else:
                back.replace.append((where, value))
        return back

    def undo(self, back: Edit) -> None:
        """Put back a change this process applied without the Commit extension
        (:attr:`Applied.undo <drivers.switch.netconf.Applied.undo>`), in one Set."""
        self._set(back)

    def verify(self, want: Want) -> None:
        """The switch holds every field of ``want``, read on a new channel, or
        :class:`VerificationFailed`."""
        with GnmiClient(self.target.gnmi) as fresh:
            have = self.model.parse(self.read(fresh))
        missing = unmet(as_intent(want), have)
        if missing:
            raise not_held("the switch", [d.describe() for d in missing], device=self.name)

    def confirm(self, persist_id: str) -> None:
        """Make a pending commit stay (the Commit extension's confirm)."""
        self._require_commit("confirm")
        self.client.set(commit=CommitAction(persist_id, "confirm"))

    def cancel(self, persist_id: str) -> None:
        """Roll a pending commit back now (the Commit extension's cancel)."""
        self._require_commit("cancel")
        self.client.set(commit=CommitAction(persist_id, "cancel"))

    def _require_commit(self, what: str) -> None:
        if not self.capabilities.commit_confirmed:
            raise Unsupported(f"{what} of a pending commit needs the gNMI Commit extension, "
                              "which the switch does not announce", device=self.name)
