"""The traffic each port of a switch carries, counted as IF-MIB (RFC 2863) counts it.

Per port (figures chosen by this emulator):

- **Rate.** While the port is up (its light, :func:`.interfaces.lit`), it carries
  the switch's load (0..1) times its nominal speed in each direction, as MAC frame
  octets (destination address through FCS: what ifInOctets and ifOutOctets count
  on an Ethernet port, RFC 3635), so the octet counters grow by exactly
  ``load × speed / 8`` a second, the fraction of an octet carried to the next update.
  A port that goes down or comes up between two updates is taken as up for the
  half of the interval (the two ends' states averaged, as the copper model takes its
  SNR linear between updates); a dark port counts nothing.
- **Frames.** A RoCEv2 fabric's mix (:data:`FRAME_MIX`, by frame count): mostly
  MTU-sized RDMA data frames (4096 octets of payload), some shorter last segments of
  a message, and small ACK/NAK and congestion notification frames. Frames are the
  octets over the mix's mean frame size, the fraction carried likewise. Of those,
  :data:`MULTICAST_FRACTION` are multicast (LLDP, PFC pause frames, IPv6 neighbour
  discovery) and :data:`BROADCAST_FRACTION` broadcast (ARP), drawn binomially from
  the seeded generator at each update, the rest unicast.
- **Errors.** A received frame that overlaps an uncorrectable RS(544,514) codeword
  is a frame in error (ifInErrors: IEEE 802.3's RS-FEC marks every block of such a
  codeword bad), not delivered (so not in ifInUcastPkts). The fraction ``q`` of the
  port's codewords that were uncorrectable in the interval is what its electrical
  lanes counted (MSO-CPC-MIB's msoCpcLaneFecUncorrectable, over all the codewords
  they received); a frame of ``s`` octets overlaps ``8 s / 5140 + 1`` codewords on
  average (5,140 data bits a codeword, and wherever it starts), so it is in error
  with probability ``1 - (1 - q) ** that``, averaged over :data:`FRAME_MIX`; the
  errored frames are drawn binomially from the unicast ones. For few uncorrectable
  codewords, that is about the load times their number (the codewords that carried
  frame data), a fifth more for the codewords that straddle two frames; when most
  codewords are uncorrectable, nearly every frame. The octets of errored frames
  were received, and stay in ifInOctets. Nothing is
  discarded (no congestion is modelled), no protocol is unknown, and nothing fails
  to be sent: ifInDiscards, ifOutDiscards, ifInUnknownProtos and ifOutErrors stay 0.
- **Discontinuities.** Counters restart from 0 with the agent (no discontinuity
  recorded since, ifCounterDiscontinuityTime 0, as the MIB says of a
  re-initialization) or at a counter clear (the ``clear_counters`` fault of
  :mod:`.model`), whose device time is then the discontinuity's.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from emulators.cpo import physics

ETHERNET_OVERHEAD_OCTETS = 14 + 4  # MAC header (addresses, EtherType) and FCS
ROCE_HEADERS_OCTETS = 20 + 8 + 12 + 4  # IPv4, UDP, InfiniBand BTH, ICRC
ROCE_MTU_PAYLOAD = 4096  # the RoCE path MTU a fabric's NICs use
ROCE_DATA_FRAME = ETHERNET_OVERHEAD_OCTETS + ROCE_HEADERS_OCTETS + ROCE_MTU_PAYLOAD  # 4,158
ROCE_SHORT_FRAME = ETHERNET_OVERHEAD_OCTETS + ROCE_HEADERS_OCTETS + 1024  # a last segment
ROCE_ACK_FRAME = ETHERNET_OVERHEAD_OCTETS + ROCE_HEADERS_OCTETS + 4  # BTH + AETH: 66
FRAME_MIX: tuple[tuple[int, float], ...] = (
    (ROCE_DATA_FRAME, 0.78), (ROCE_SHORT_FRAME, 0.04), (ROCE_ACK_FRAME, 0.18))
"""(frame size in octets, fraction of the frames) of a port's traffic."""
MEAN_FRAME_OCTETS = sum(size * share for size, share in FRAME_MIX)
"""About 3,299 octets."""
CODEWORD_DATA_BITS = physics.RS_K * physics.RS_SYMBOL_BITS  # 5,140
MULTICAST_FRACTION = 2e-4
BROADCAST_FRACTION = 1e-5
assert abs(sum(share for _, share in FRAME_MIX) - 1.0) < 1e-12


@dataclass(frozen=True)
class PortTrafficReading:
    """A port's counters at one reading, from 0 at the last discontinuity (no modulus)."""

    port: int  # ifIndex
    in_octets: int
    in_ucast: int
    in_multicast: int
    in_broadcast: int
    in_errors: int
    out_octets: int
    out_ucast: int
    out_multicast: int
    out_broadcast: int
    discontinuity_at: float | None  # device time of the last counter clear, if any


def frame_error_probability(uncorrectable_fraction: float) -> float:
    """The probability that a frame of :data:`FRAME_MIX` overlaps an uncorrectable
    codeword, ``uncorrectable_fraction`` of them being so (see the module)."""
    if uncorrectable_fraction <= 0.0:
        return 0.0
    if uncorrectable_fraction >= 1.0:
        return 1.0
    clean = math.log1p(-uncorrectable_fraction)  # log of a codeword's chance to be correct
    return sum(share * -math.expm1(clean * (8.0 * size / CODEWORD_DATA_BITS + 1.0))
               for size, share in FRAME_MIX)


class _Direction:
    """The frames one direction of a port carried, counted."""

    __slots__ = ("broadcast", "frame_carry", "multicast", "octet_carry", "octets", "ucast")

    def __init__(self) -> None:
        self.octets = self.ucast = self.multicast = self.broadcast = 0
        self.octet_carry = self.frame_carry = 0.0

    def carry(self, octets_exact: float, rng: random.Random) -> int:
        """Count ``octets_exact`` more octets; the unicast frames among them."""
        arrived = octets_exact + self.octet_carry
        octets = math.floor(arrived)
        self.octet_carry = arrived - octets
        self.octets += octets
        frames_exact = octets_exact / MEAN_FRAME_OCTETS + self.frame_carry
        frames = math.floor(frames_exact)
        self.frame_carry = frames_exact - frames
        multicast = physics.binomial(rng, frames, MULTICAST_FRACTION)
        broadcast = physics.binomial(rng, frames - multicast,
                                     BROADCAST_FRACTION / (1.0 - MULTICAST_FRACTION))
        self.multicast += multicast
        self.broadcast += broadcast
        return frames - multicast - broadcast


class PortTraffic:
    """One port's counters, stepped by :meth:`advance`."""

    def __init__(self, port: int, speed_bps: float):
        self.port = port
        self.speed_bps = speed_bps
        self.discontinuity_at: float | None = None
        self.reset_counters(None)

    def reset_counters(self, now: float | None) -> None:
        """Zero the counters; ``now`` is the discontinuity's time (None: a fresh agent)."""
        self.received = _Direction()
        self.sent = _Direction()
        self.in_errors = 0
        self.discontinuity_at = now

    def advance(self, seconds: float, busy: float, uncorrectable_fraction: float,
                rng: random.Random) -> None:
        """Count ``seconds`` at ``busy`` (load × the fraction of them the port was up),
        in which ``uncorrectable_fraction`` of the port's codewords were uncorrectable."""
        if seconds <= 0.0 or busy <= 0.0:
            return
        octets = busy * self.speed_bps / 8.0 * seconds
        unicast = self.received.carry(octets, rng)
        errors = physics.binomial(rng, unicast, frame_error_probability(uncorrectable_fraction))
        self.received.ucast += unicast - errors
        self.in_errors += errors
        self.sent.ucast += self.sent.carry(octets, rng)

    def read(self) -> PortTrafficReading:
        received, sent = self.received, self.sent
        return PortTrafficReading(
            port=self.port, in_octets=received.octets, in_ucast=received.ucast,
            in_multicast=received.multicast, in_broadcast=received.broadcast,
            in_errors=self.in_errors, out_octets=sent.octets, out_ucast=sent.ucast,
            out_multicast=sent.multicast, out_broadcast=sent.broadcast,
            discontinuity_at=self.discontinuity_at)
