"""A passive 1xN fan-out (a PLC splitter with its output cords), as optical element.

It puts the laser on every OCS ingress port at once, so a whole permutation
is measured per switch step. Each output's loss is the ideal split,
``10 log10 N`` dB, plus an excess loss of 0.3-1.2 dB fixed per output (from
the serial number), cords and connectors included. The losses do not change
with time or wavelength; a reference measurement records them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable

from emulators.optics.model import Element, InputPower

EXCESS_LOSS_DB = (0.3, 1.2)


class FanOut(Element):
    """Input ``in``; outputs ``1``..``N``."""

    steady = True  # fixed losses

    def __init__(self, name: str, outputs: int, *, serial: str | None = None):
        super().__init__(name)
        if outputs < 1:
            raise ValueError("a fan-out needs at least one output")
        self.outputs = outputs
        self.serial = serial or f"FO-{name}"
        rng = random.Random(f"{self.serial}/excess")
        split = 10.0 * math.log10(outputs)
        self._loss_db = {str(n): round(split + rng.uniform(*EXCESS_LOSS_DB), 3)
                         for n in range(1, outputs + 1)}

    def loss_db(self, output: int) -> float:
        return self._loss_db[str(output)]

    def input_ports(self) -> Iterable[str]:
        return ("in",)

    def output_ports(self) -> Iterable[str]:
        return self._loss_db.keys()

    def output_power(self, port: str, input_power: InputPower, now: float) -> float:
        return input_power("in") - self._loss_db[port]
