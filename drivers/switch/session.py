"""One way in to a switch's configuration, whatever its transport: :func:`open_session`.

A NETCONF target gets :class:`drivers.switch.netconf.SwitchSession` (the msoctl module),
a gNMI target :class:`drivers.switch.gnmi.GnmiSwitchSession` (OpenConfig, SONiC). Both
take a WANT as intent (:class:`drivers.switch.intent.Intent`) or as a first-round
``switch:`` tree, and offer plan, apply, verify, confirm, cancel and read_intent.
Each transport's library is imported when a switch of it is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from drivers.switch.gnmi import GnmiSwitchSession, GnmiSwitchTarget
    from drivers.switch.netconf import NetconfTarget, SwitchSession

    Target = NetconfTarget | GnmiSwitchTarget
    Session = SwitchSession | GnmiSwitchSession


def open_session(target: Target) -> Session:
    """A session to the switch ``target`` names (close it, or use it in ``with``)."""
    from drivers.switch.netconf import NetconfTarget, SwitchSession

    if isinstance(target, NetconfTarget):
        return SwitchSession(target)
    from drivers.switch.gnmi import GnmiSwitchSession

    return GnmiSwitchSession(target)
