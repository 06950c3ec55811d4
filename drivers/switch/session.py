"""One way in to a switch's configuration, whatever its transport: :func:`open_session`.

A NETCONF target gets :class:`drivers.switch.netconf.SwitchSession` (the msoctl module)
or :class:`drivers.switch.netconf_models.ModelNetconfSession` (OpenConfig; for ``auto``,
when the hello does not name the msoctl module: a second session), a gNMI target
:class:`drivers.switch.gnmi.GnmiSwitchSession` (OpenConfig, SONiC). All
take a WANT as intent (:class:`drivers.switch.intent.Intent`) or as a first-round
``switch:`` tree, and offer plan, apply, verify, confirm, cancel and read_intent.
Each transport's library is imported when a switch of it is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from drivers.switch.gnmi import GnmiSwitchSession, GnmiSwitchTarget
    from drivers.switch.netconf import NetconfTarget, SwitchSession
    from drivers.switch.netconf_models import ModelNetconfSession

    Target = NetconfTarget | GnmiSwitchTarget
    Session = SwitchSession | ModelNetconfSession | GnmiSwitchSession


def open_session(target: Target) -> Session:
    """A session to the switch ``target`` names (close it, or use it in ``with``)."""
    from drivers.errors import ProtocolError
    from drivers.switch.netconf import NetconfTarget, SwitchSession

    if isinstance(target, NetconfTarget):
        from drivers.switch.netconf_models import ModelNetconfSession

        if target.model == "msoctl":
            return SwitchSession(target)
        if target.model != "auto":
            return ModelNetconfSession(target, target.model)
        try:
            return SwitchSession(target)
        except ProtocolError:  # not the msoctl module: a model the hello names
            return ModelNetconfSession(target, "auto")
    from drivers.switch.gnmi import GnmiSwitchSession

    return GnmiSwitchSession(target)
