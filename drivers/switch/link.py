"""Facts about a long-haul Ethernet link that the headroom planner and the switch
emulator both rely on: the light's velocity in fiber as SONiC's buffer manager takes
it for PFC headroom, and the pause quanta of IEEE 802.3 annex 31B (31B.3.7); see
docs/dialects/netconf.md.

A spec table, not logic: one place to check them against their sources.
"""

from __future__ import annotations

FIBER_VELOCITY_M_PER_S = 1.98e8
"""Light in fiber, as the open switch OS's PFC headroom formula takes it."""

PAUSE_QUANTUM_BITS = 512
"""One PFC pause quantum is 512 bit times."""

PEER_RESPONSE_QUANTA_400G = 905
"""IEEE 802.3 allowance for the link partner to stop after a pause frame, at 400G
(57,920 B); other speeds are taken to keep the same time (about 1.16 us; verify)."""

PORT_SPEEDS_BPS: dict[str, float] = {"100G": 100e9, "200G": 200e9, "400G": 400e9,
                                     "800G": 800e9}
"""The port speeds of the data model (yang/msoctl-congestion.yang)."""

PEER_RESPONSE_SECONDS = PEER_RESPONSE_QUANTA_400G * PAUSE_QUANTUM_BITS / PORT_SPEEDS_BPS["400G"]
