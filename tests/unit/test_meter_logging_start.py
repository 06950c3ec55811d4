"""When the emulated power meter's logging starts (emulators/instruments/meter.py): every port
one program message starts logs from the moment the message reached the meter
(emulators.clock.COMMAND_READY_AT), as a real meter's do, microseconds apart; not from
whenever the emulator's interpreter got round to each port's command. Ports that started
apart on a loaded host put one switching at different sample numbers, and the
characterization, which times a port that was dark from the fall of the others' light,
read a 30 ms switch as 45 ms."""

from __future__ import annotations

import asyncio
import struct

from emulators.clock import SteppedClock, arrived_at
from emulators.instruments.testset import AcceptanceTestSet
from emulators.ocs.model import OcsDevice
from emulators.optics.model import OpticalModel

INTERVAL = 1e-4
SAMPLES = 600


def first_dark(samples: list[float]) -> int:
    """The first sample more than 30 dB below the first one."""
    return next(k for k, w in enumerate(samples) if w < samples[0] * 1e-3)


def test_ports_started_by_one_message_log_from_when_it_arrived() -> None:
    clock = SteppedClock()
    optics = OpticalModel(clock)
    ocs = OcsDevice("ocs-t", optics, size=4)
    bench = AcceptanceTestSet(optics, ocs)
    bench.laser.set_output(True)
    ocs.add((1, 2), (5, 6))  # lights meter ports 1 and 2
    clock.advance(2.0)
    meter = bench.meter
    for port in (1, 2):
        meter.set_logging(port, SAMPLES, INTERVAL)
    arrived = clock.now()
    clock.advance(0.002)
    with arrived_at(arrived):  # one message starting both; port 2's command handled late
        meter.start_logging(1)
        clock.advance(0.015)
        meter.start_logging(2)
    with arrived_at(clock.now()):
        ocs.only((1, 2), (6, 5))  # both ports go dark at once, then light again
    traces = {port: list(struct.unpack(f"<{SAMPLES}f",
                                       asyncio.run(meter.logging_result(port))))
              for port in (1, 2)}
    # dark from the switch's start, 17 ms after the message arrived, on both ports
    assert first_dark(traces[1]) == first_dark(traces[2]) == round(0.017 / INTERVAL)
