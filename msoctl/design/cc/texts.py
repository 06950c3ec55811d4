"""Texts of ``msoctl design cc``'s command line: durations, sizes, sweeps. Each bad one
raises :class:`~drivers.errors.ValidationError` with the text it could not read."""

from __future__ import annotations

import re

from drivers.errors import ValidationError
from msoctl.design.cc.scenario import MAX_DURATION_SECONDS, MAX_FLOWS
from msoctl.ops.headroom import parse_distance
from msoctl.ops.switch_plan import parse_size

MAX_SWEEP_POINTS = 64
DEFAULT_SWEEP_POINTS = 8
_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(us|ms|s)\s*", re.IGNORECASE)
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_duration(text: str) -> float:
    """``100ms``, ``2s``, ``500us`` -> seconds (the unit is required)."""
    match = _DURATION.fullmatch(text)
    if not match:
        raise ValidationError(f"duration {text!r}: write it like 100ms, 2s or 500us")
    seconds = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if not 0 < seconds <= MAX_DURATION_SECONDS:
        raise ValidationError(f"duration {text!r}: more than 0, at most "
                              f"{MAX_DURATION_SECONDS:g} s")
    return seconds


def parse_sizes(text: str) -> tuple[int, ...]:
    """``1MB,16MB`` -> bytes, in the order given."""
    sizes = tuple(parse_size(item.strip()) for item in text.split(",") if item.strip())
    if not sizes or any(size <= 0 for size in sizes) or len(sizes) > 8:
        raise ValidationError(f"flow sizes {text!r}: 1 to 8 sizes above 0, like 1MB,16MB")
    return sizes


def parse_sweep(text: str) -> tuple[str, list[float]]:
    """``distance=1km..120km`` (8 points, or ``/N``), ``flows=2,8,64``, ``kmin=1MB..8MB``,
    ``pmax=1%..50%`` -> (parameter, values in metres, flows, bytes or fractions)."""
    name, equals, spec = text.partition("=")
    name = name.strip().lower()
    if not equals or not spec.strip():
        raise ValidationError(f"--sweep {text!r}: write NAME=LOW..HIGH[/N] or NAME=V,V,...")
    read = {"distance": parse_distance, "flows": _flows, "kmin": parse_size,
            "kmax": parse_size, "pmax": _percent}.get(name)
    if read is None:
        raise ValidationError(f"--sweep {name!r}: one of distance, flows, kmin, kmax, pmax")
    spec, slash, count_text = spec.partition("/")
    if ".." in spec:
        low_text, _, high_text = spec.partition("..")
        low, high = float(read(low_text)), float(read(high_text))
        count = DEFAULT_SWEEP_POINTS
        if slash:
            if not count_text.strip().isdigit():
                raise ValidationError(f"--sweep {text!r}: /N is a whole number of points")
            count = int(count_text)
        if not 2 <= count <= MAX_SWEEP_POINTS or not low < high:
            raise ValidationError(f"--sweep {text!r}: LOW below HIGH, 2..{MAX_SWEEP_POINTS} "
                                  "points")
        values = [low + (high - low) * i / (count - 1) for i in range(count)]
        if name == "flows":
            values = sorted({float(round(v)) for v in values})
        return name, values
    if slash:
        raise ValidationError(f"--sweep {text!r}: /N goes with a range LOW..HIGH")
    values = [float(read(item)) for item in spec.split(",") if item.strip()]
    return name, values


def _flows(text: str) -> int:
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_FLOWS:
        raise ValidationError(f"flows {text!r}: a whole number 1..{MAX_FLOWS:,}")
    return int(text)


def _percent(text: str) -> float:
    number = text.strip().rstrip("%")
    try:
        value = float(number) / 100
    except ValueError:
        raise ValidationError(f"probability {text!r}: a percentage like 5%") from None
    if not 0 < value <= 1:
        raise ValidationError(f"probability {text!r}: above 0, at most 100%")
    return value
