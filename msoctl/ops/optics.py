"""A switch's port optics from the most standard surface it serves (its inventory
``telemetry:`` list, or ``auto``): over gNMI, OpenConfig's platform-transceiver paths or
SONiC's STATE_DB; over SNMP, ENTITY-SENSOR-MIB, a vendor DOM MIB, else MSO-CPO-MIB."""

from __future__ import annotations

from drivers.errors import ValidationError
from drivers.optics.readings import OpticsReading
from msoctl.access import Devices, gnmi_target
from msoctl.inventory import AUTO, GNMI_SURFACES, Device


def read_optics(devices: Devices, entry: Device, surface: str | None,
                budget: float) -> OpticsReading:
    """Switch ``entry``'s optics from ``surface`` (or the most standard it serves),
    within ``budget`` seconds."""
    listed = tuple(name for name in entry.telemetry if name != AUTO)
    wanted = (surface,) if surface else listed
    over_gnmi = [name for name in wanted if name in GNMI_SURFACES]
    if over_gnmi or (not wanted and entry.snmp is None):
        if entry.gnmi is None:
            raise ValidationError(f"{entry.name} is not reached over gNMI; its optics over "
                                  "SNMP need an snmp section in the inventory")
        from drivers.optics import gnmi as optics_gnmi
        from drivers.switch.gnmi import GnmiSwitchSession

        with GnmiSwitchSession(gnmi_target(entry, at_most_seconds=budget)) as session:
            model = session.model.name
            if over_gnmi and model != over_gnmi[0]:
                raise ValidationError(f"{entry.name} speaks {model}, not {over_gnmi[0]}")
            if model not in GNMI_SURFACES:
                raise ValidationError(f"{entry.name}'s model {model} has no optics paths")
            return optics_gnmi.read(session.client, model)
    from drivers.snmp import surfaces  # its vendor tables load the compiled MIBs
    from drivers.snmp.session import run

    snmp = tuple(name for name in wanted if name not in GNMI_SURFACES) or (AUTO,)
    target = devices.snmp_target(entry.name)
    found = run(surfaces.collect(target, surfaces=snmp, budget_seconds=budget))
    assert found.optics is not None
    return found.optics
