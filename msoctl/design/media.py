"""Which cable or transceiver each link gets, by reach, speed and the what-ifs.

The layout gives each link role of an architecture a reach class, the class a
length (the longest link of the class). A link group then gets the cheapest medium
(per link: one cable, or one transceiver per optical end) at its speed among the
table's ``baseline_kinds`` that reaches that length, ties broken by power and name.
Through an OCS the light travels twice the class length, only transceivers can be
used, and the transceiver's channel insertion-loss budget (``max_loss_db``) must
cover the fiber, the OCS's insertion loss and its connectors.

What-ifs, applied to that choice:

- ``aec``: an optical link (AOC or transceivers) no longer than the AEC's reach gets
  the AEC instead (not through an OCS: copper cannot cross one);
- ``lpo``: a link on DSP transceivers gets LPO transceivers where their reach and
  loss budget suffice.

A what-if applies whether or not it lowers the cost: the table's prices decide.
Raises :class:`DesignError` when no medium fits or a what-if has no entry at a
link's speed (a missing price).
"""

from __future__ import annotations

from dataclasses import dataclass

from msoctl.design.components import MODULE_KINDS, ComponentTable, Medium
from msoctl.design.fabric import LinkGroup
from msoctl.design.inputs import DesignError, speed_text

AEC, LPO = "aec", "lpo"
WHAT_IFS = (AEC, LPO)
_OPTICAL = ("aoc", *MODULE_KINDS)


@dataclass(frozen=True)
class Span:
    """What a link group must carry: its reach class, the class length, the distance
    end to end (class length x segments) and, through an OCS, the optical loss (dB)."""

    reach_class: str
    length_m: float
    distance_m: float
    loss_db: float | None = None


def span_of(group: LinkGroup, architecture: str, table: ComponentTable) -> Span:
    """The span of ``group`` in ``architecture`` by the table's layout. Raises
    :class:`DesignError` when the layout does not place this role."""
    roles = table.layout.get(architecture)
    if roles is None or group.role not in roles:
        raise DesignError(f"the component table ({table.name}) has no layout for the "
                          f"{group.role} links of {architecture} (layout: {architecture}: "
                          f"{{{group.role}: CLASS}})")
    reach_class = roles[group.role]
    length = table.reach_m[reach_class]
    distance = length * group.segments
    loss = None
    if group.through_ocs and table.ocs is not None:
        loss = (distance / 1000 * table.fiber.loss_db_per_km + table.ocs.insertion_loss_db
                + table.ocs.connectors * table.fiber.connector_loss_db)
    return Span(reach_class, length, distance, loss)


def units(medium: Medium, group: LinkGroup) -> int:
    """Cables, or transceivers, the group takes of ``medium``."""
    return group.count * (group.optical_ends if medium.per_end else 1)


def _per_link(medium: Medium, group: LinkGroup) -> tuple[float, float, str]:
    ends = group.optical_ends if medium.per_end else 1
    return medium.usd * ends, medium.watts * ends, medium.name


def _fits(medium: Medium, group: LinkGroup, span: Span) -> bool:
    if medium.reach_m < span.distance_m:
        return False
    if not group.through_ocs:
        return True
    return (medium.per_end and medium.max_loss_db is not None
            and span.loss_db is not None and medium.max_loss_db >= span.loss_db)


def _what(group: LinkGroup, span: Span) -> str:
    through = f" through an OCS ({span.loss_db:.1f} dB)" if span.loss_db is not None else ""
    return (f"a {speed_text(group.speed_gbps)} {group.role} link of {span.distance_m:g} m "
            f"({span.reach_class}){through}")


def choose(group: LinkGroup, span: Span, table: ComponentTable,
           what_if: frozenset[str]) -> Medium:
    """The medium of ``group`` (see the module docstring). Raises :class:`DesignError`."""
    at_speed = [m for m in table.media.values() if m.speed_gbps == group.speed_gbps]
    usable = [m for m in at_speed if m.kind in table.baseline_kinds and _fits(m, group, span)]
    if not usable:
        raise DesignError(f"no medium in the component table ({table.name}) of kind "
                          f"{', '.join(table.baseline_kinds)} carries {_what(group, span)}; "
                          "add one under media:")
    chosen = min(usable, key=lambda m: _per_link(m, group))
    for kind, replaces in ((AEC, _OPTICAL), (LPO, ("dsp",))):
        if kind not in what_if or chosen.kind not in replaces:
            continue
        if kind == AEC and group.through_ocs:
            continue
        offered = [m for m in at_speed if m.kind == kind]
        if not offered:
            raise DesignError(f"what-if {kind}: the component table ({table.name}) has no "
                              f"{kind.upper()} at {speed_text(group.speed_gbps)} (no price)")
        reaching = [m for m in offered if _fits(m, group, span)]
        if reaching:
            chosen = min(reaching, key=lambda m: _per_link(m, group))
    return chosen
