"""The device models of the switch driver, one module each, behind one interface
(:class:`drivers.switch.models.base.DeviceModel`).

| model          | transport | module                                                |
|----------------|-----------|-------------------------------------------------------|
| ``openconfig`` | gNMI      | :mod:`.openconfig` (Arista's augments, the project's) |
| ``sonic``      | gNMI      | :mod:`.sonic` (CONFIG_DB)                             |
| ``msoctl``     | NETCONF   | :mod:`.msoctl` (the first rounds' own module)         |

``auto`` picks one from what the switch announces (:func:`detect`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from drivers.errors import Unsupported
from drivers.switch.models.base import DeviceModel
from drivers.switch.models.openconfig import ARISTA, MSOCTL, QOS_MODULE, OpenConfig
from drivers.switch.models.sonic import Sonic

MODEL_NAMES = ("openconfig", "sonic", "msoctl", "auto")
SONIC_MODELS = ("sonic-db",)


def detect(announced: Iterable[str], *, device: str) -> str:
    """The model of a switch from the names of the models (gNMI) or modules (NETCONF)
    it announces: OpenConfig QoS first, then SONiC's databases, then msoctl's module."""
    names = set(announced)
    if QOS_MODULE in names:
        return "openconfig"
    if names & set(SONIC_MODELS):
        return "sonic"
    if "msoctl-congestion" in names:
        return "msoctl"
    raise Unsupported("the switch announces none of the models msoctl speaks "
                      "(openconfig-qos, sonic-db, msoctl-congestion)", device=device)


REQUIRED = {"openconfig": (QOS_MODULE,), "sonic": SONIC_MODELS}
"""What a switch must announce to be spoken to in each model."""

BUILDERS: dict[str, Callable[[frozenset[str], str], DeviceModel]] = {
    "openconfig": lambda announced, device: OpenConfig(
        frozenset(announced) & {ARISTA, MSOCTL}, device=device),
    "sonic": lambda announced, device: Sonic(device=device),
}
"""The models spoken over gNMI, built from the model names the switch announced."""


def build(name: str, announced: Iterable[str], *, device: str) -> DeviceModel:
    """Model ``name`` (or the one :func:`detect` finds, for ``auto``) for one session."""
    names = frozenset(announced)
    if name == "auto":
        name = detect(names, device=device)
    builder = BUILDERS.get(name)
    if builder is None:
        raise Unsupported(f"model {name!r} is not spoken over gNMI", device=device)
    needed = REQUIRED[name]
    if not names & set(needed):
        shown = ", ".join(sorted(names)[:6]) or "none"
        raise Unsupported(f"the inventory says model {name}, but the switch announces none "
                          f"of {', '.join(needed)} (it announces {shown}); fix model: in "
                          "the inventory, or use auto", device=device)
    return builder(names, device)
