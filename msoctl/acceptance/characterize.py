"""OCS acceptance testing: insertion loss, repeatability, switching time, crosstalk.

The test set (see ``emulators/instruments/testset.py`` for the emulated one):
a tunable laser feeds a 1xN fan-out whose outputs are patched to the OCS's
ingress ports, so every ingress port is lit at once; each egress port is
patched to its own power meter port. Its reference file gives the loss from
the laser to each ingress port and the meter port of each egress port.

The schedule, for each wavelength:

- ``repeat`` rounds of insertion-loss steps. A step is one ``CONN:ONLY`` that
  sets a whole permutation (a Latin square over the chosen ports: step ``k``
  sends the ``j``-th ingress port to the ``(j + k) mod E``-th egress port), so
  ``max(I, E)`` steps cover all ``I x E`` paths, and every path is reconnected
  once per round: the rounds give the repeatability.
- Crosstalk steps: every third egress port lit (three phases), so each
  unconnected egress port between them has exactly one lit neighbour; what it
  reads, relative to the power launched into the lit neighbour's ingress
  port, is that path's crosstalk.

In every step the meter logs every port from just before the switch command
until after it (``--log-interval`` apart): the switching time of a port is
from the moment its old light falls (3 dB below the level before; for a port
that was dark, the moment the other ports' light fell, since one command
reconfigures them all at once) to the moment its new light is within
``SETTLE_DB`` (0.5 dB, the "tuned" threshold of the open OCS models) of the
level it then reads, for good. The logging window follows the switching
times seen so far (1.5 x the longest plus 5 ms, at most ``--log-window``); a
step whose light has not settled inside its window is measured again with the
full one, up to ``MEASURE_TRIES`` times in all (a host slow to send the switch
after starting the logging leaves the switch's end outside the window).

Resumable: every completed step is appended (fsynced) to ``steps.jsonl`` in
the output directory, beside ``state.json`` (the settings and the map found
before the first step). A rerun with the same settings skips the steps
already there; different settings are refused unless ``--restart``.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drivers.errors import ValidationError
from drivers.yamlfile import Section, YamlFileError, load_file

if TYPE_CHECKING:  # the instruments' drivers (pyvisa) load when a test set is opened
    from drivers.instruments import LaserDriver, MeterDriver, PowerTrace
    from drivers.ocs import OcsDriver

STATE_FILE = "state.json"
STEPS_FILE = "steps.jsonl"
STATE_VERSION = 1

SETTLE_DB = 0.5
"""Within this of its final level a path counts as switched (the open OCS models' "tuned")."""
FALL_DB = 3.0
"""A port's old light counts as gone once it reads this far below its level before."""
LIGHT_DBM = -50.0
"""Above this a port carries a path's light; crosstalk and the meter floor read far below."""
MIN_LAUNCH_DBM = -30.0
"""Less launched into an ingress port and a path's light comes too close to LIGHT_DBM."""
MIN_WINDOW_SAMPLES = 20
MEASURE_TRIES = 3
"""A step not settled inside its window is switched again (the map back first), at most
this many times in all, with the full window after the first: a host that was slow to
send the switch after starting the meter's logging leaves the switch's end outside the
window, and a busy host may be slow twice."""
METER_FLOOR_DBM = -75.0
"""Readings below this are within 10 dB of the meter's dark floor: an upper bound only."""


@dataclass(frozen=True)
class Limits:
    """Pass/fail limits; the defaults are the datasheet figures of commercial piezo
    beam-steering OCS units (the Polatis family's): insertion loss at most 2.7 dB,
    repeatability +-0.1 dB, switching 50 ms, crosstalk better than -50 dB."""

    max_insertion_loss_db: float = 2.7
    max_repeatability_db: float = 0.1
    max_switching_seconds: float = 0.050
    max_crosstalk_db: float = -50.0


@dataclass(frozen=True)
class TestSet:
    """The test set's reference: launch loss per ingress port, meter port per egress port."""

    launch_loss_db: dict[int, float]
    meter_ports: dict[int, int]
    receive_loss_db: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Settings:
    """What defines a characterization; a rerun must ask for the same to resume it."""

    device: str
    ocs_serial: str
    size: int
    laser: str
    meter: str
    ingress: tuple[int, ...]
    egress: tuple[int, ...]
    wavelengths_nm: tuple[float, ...]
    repeat: int
    laser_power_dbm: float
    averaging_seconds: float
    log_interval_seconds: float
    log_window_seconds: float
    test_set: TestSet

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ingress"], data["egress"] = list(self.ingress), list(self.egress)
        data["wavelengths_nm"] = list(self.wavelengths_nm)
        data["test_set"] = {key: {str(k): v for k, v in value.items()}
                            for key, value in asdict(self.test_set).items()}
        return data

    def launch_dbm(self, ingress: int) -> float:
        return self.laser_power_dbm - self.test_set.launch_loss_db[ingress]

    def at_egress_dbm(self, egress: int, reading_dbm: float) -> float:
        """A meter reading referred back to the egress connector."""
        return reading_dbm + self.test_set.receive_loss_db.get(egress, 0.0)


@dataclass(frozen=True)
class Step:
    index: int
    wavelength_nm: float
    kind: str  # "insertion_loss" or "crosstalk"
    round: int | None  # insertion-loss round, 0-based
    paths: dict[int, int]  # ingress -> egress: the whole map this step sets


# ---- parsing what the operator asks for ------------------------------------------------------


_PORT_NUMBER = re.compile(r"[0-9]{1,6}")
MAX_PORT = 1024


def parse_port_list(text: str) -> list[int]:
    """``"1-8,65-72,100"`` -> the ports, in order, without repeats; ports 1..1024 (an OCS
    has at most 512x512). Raises :class:`ValidationError`."""
    ports: dict[int, None] = {}  # ordered, and a repeat costs nothing
    for item in text.split(","):
        first, sep, last = item.strip().partition("-")
        if not _PORT_NUMBER.fullmatch(first) or (sep and not _PORT_NUMBER.fullmatch(last)):
            raise ValidationError(f"--ports: {item.strip()!r} is not a port or a range like 1-8")
        start, stop = int(first), int(last) if sep else int(first)
        if stop < start:
            raise ValidationError(f"--ports: range {item.strip()!r} runs backwards")
        if stop > MAX_PORT:
            raise ValidationError(f"--ports: {item.strip()!r}: ports are 1..{MAX_PORT}")
        ports.update(dict.fromkeys(range(start, stop + 1)))
    return list(ports)


def parse_wavelengths(text: str) -> list[float]:
    """``"1310,1550"`` -> nanometres."""
    values: list[float] = []
    for item in text.split(","):
        try:
            value = float(item.strip())
        except ValueError:
            raise ValidationError(f"--wavelengths: {item.strip()!r} is not a number of nm") \
                from None
        if not 400.0 <= value <= 1800.0:
            raise ValidationError(f"--wavelengths: {value:g} nm is outside 400..1800 nm")
        if value not in values:
            values.append(value)
    return values


def load_test_set(path: Path) -> TestSet:
    """Read a reference file: ``launch_loss_db``, ``meter_ports``, optional ``receive_loss_db``."""
    try:
        data = load_file(path)
        top = Section(data, str(path), "reference")
        top.reject_unknown({"ocs", "laser", "meter", "launch_loss_db", "meter_ports",
                            "receive_loss_db", "wavelength_nm", "taken"})

        def port_map(key: str, kind: type, required: bool) -> dict[int, Any]:
            raw = top.get(key, dict) if required else top.get(key, dict, default={})
            result: dict[int, Any] = {}
            for name, value in (raw or {}).items():
                text = str(name).strip()
                if isinstance(name, bool) or not text.isascii() or not text.isdigit() \
                        or int(text) < 1:
                    raise top.error(key, f"{name!r} is not a port number")
                port = int(text)
                if isinstance(value, bool) or not isinstance(value, int | float) \
                        or (kind is int and not isinstance(value, int)):
                    raise top.error(key, f"port {port}: {value!r} is not a {kind.__name__}")
                if not math.isfinite(value):
                    raise top.error(key, f"port {port}: {value!r} is not a finite number")
                result[port] = kind(value)
            return result

        launch = port_map("launch_loss_db", float, True)
        meter_ports = port_map("meter_ports", int, True)
        receive = port_map("receive_loss_db", float, False)
    except YamlFileError as error:
        raise ValidationError(str(error)) from None
    if not launch or not meter_ports:
        raise ValidationError(f"{path}: the reference lists no ingress or no egress ports")
    if len(set(meter_ports.values())) != len(meter_ports):
        raise ValidationError(f"{path}: two egress ports on one meter port")
    return TestSet(launch, meter_ports, receive)


def choose_ports(size: int, test_set: TestSet, ports: list[int] | None,
                 meter_channels: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ingress and egress ports to characterize (the test set's when none are named)."""
    for port in [*test_set.launch_loss_db, *test_set.meter_ports]:
        if not 1 <= port <= 2 * size:
            raise ValidationError(f"the reference names port {port}, not on a {size}x{size} OCS")
    if any(p > size for p in test_set.launch_loss_db):
        raise ValidationError("the reference's launch_loss_db names egress ports")
    if any(p <= size for p in test_set.meter_ports):
        raise ValidationError("the reference's meter_ports names ingress ports")
    for egress_port, meter_port in test_set.meter_ports.items():
        if not 1 <= meter_port <= meter_channels:
            raise ValidationError(f"the reference puts egress {egress_port} on meter port "
                                  f"{meter_port}; the meter has {meter_channels}")
    if ports is None:
        return tuple(sorted(test_set.launch_loss_db)), tuple(sorted(test_set.meter_ports))
    for port in ports:
        if not 1 <= port <= 2 * size:
            raise ValidationError(f"--ports: port {port} is out of range 1..{2 * size}")
    ingress = [p for p in ports if p <= size] or sorted(test_set.launch_loss_db)
    egress = [p for p in ports if p > size] or sorted(test_set.meter_ports)
    unlit = [p for p in ingress if p not in test_set.launch_loss_db]
    if unlit:
        raise ValidationError(f"ingress ports {unlit} get no light from the test set "
                              "(not in the reference's launch_loss_db)")
    unmetered = [p for p in egress if p not in test_set.meter_ports]
    if unmetered:
        raise ValidationError(f"egress ports {unmetered} have no meter port "
                              "(not in the reference's meter_ports)")
    return tuple(sorted(ingress)), tuple(sorted(egress))


# ---- the schedule -----------------------------------------------------------------------------


def plan_steps(settings: Settings) -> list[Step]:
    """Every step, in order; the same settings always give the same steps."""
    ingress, egress = list(settings.ingress), list(settings.egress)
    steps: list[Step] = []
    for wavelength in settings.wavelengths_nm:
        for round_index in range(settings.repeat):
            for k in range(max(len(ingress), len(egress))):
                if len(ingress) <= len(egress):
                    paths = {i: egress[(j + k) % len(egress)] for j, i in enumerate(ingress)}
                else:
                    paths = {ingress[(m + k) % len(ingress)]: e for m, e in enumerate(egress)}
                steps.append(Step(len(steps), wavelength, "insertion_loss", round_index, paths))
        first = settings.size + 1
        for phase in range(3):
            lit = [e for e in egress if (e - first) % 3 == phase]
            for chunk in range(0, len(lit), len(ingress)):
                part = lit[chunk:chunk + len(ingress)]
                paths = {ingress[(j + phase) % len(ingress)]: e for j, e in enumerate(part)}
                steps.append(Step(len(steps), wavelength, "crosstalk", None, paths))
    return steps


def crosstalk_victims(paths: Mapping[int, int], egress: Iterable[int]) -> dict[int, int]:
    """Unconnected egress ports with exactly one lit neighbour -> that neighbour's ingress."""
    lit = {e: i for i, e in paths.items()}
    victims: dict[int, int] = {}
    for port in egress:
        if port in lit:
            continue
        neighbours = [lit[n] for n in (port - 1, port + 1) if n in lit]
        if len(neighbours) == 1:
            victims[port] = neighbours[0]
    return victims


# ---- switching time from logged traces ----------------------------------------------------------


def _level(value: float | None) -> float:
    return float("-inf") if value is None else value


def switching_times(traces: Mapping[int, PowerTrace], before_dbm: Mapping[int, float | None],
                    after_dbm: Mapping[int, float | None]) -> dict[int, float | None]:
    """Switching time per meter port that was switched, from one step's logging.

    ``before_dbm`` and ``after_dbm`` are single readings taken before the
    step and after it settled. A port whose light did not change is left
    out; one whose new light never settled inside the window maps to ``None``.
    """
    falls: dict[int, int] = {}
    for port, trace in traces.items():
        before = before_dbm.get(port)
        if before is None or before < LIGHT_DBM:
            continue
        for k, value in enumerate(trace.powers_dbm):
            if _level(value) < before - FALL_DB:
                falls[port] = k
                break
    common_start = int(statistics.median_low(falls.values())) if falls else None
    result: dict[int, float | None] = {}
    for port, trace in traces.items():
        after = after_dbm.get(port)
        if after is None or after < LIGHT_DBM:
            continue  # dark now: a disconnection, not a switching
        samples = trace.powers_dbm
        outside = [k for k, value in enumerate(samples) if abs(_level(value) - after) > SETTLE_DB]
        if not outside:
            continue  # lit and steady all along: this port's path did not change
        start = falls.get(port, common_start)
        settled = outside[-1] + 1
        if start is None:
            continue  # no light fell anywhere: nothing to time the switching from
        if settled >= len(samples):
            result[port] = None  # still not within SETTLE_DB of its final level
            continue
        result[port] = round((settled - start) * trace.interval_seconds, 7)
    return result


# ---- state on disk -----------------------------------------------------------------------------


class RunState:
    """``state.json`` (settings, map found before the first step) and ``steps.jsonl``."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.state_path = directory / STATE_FILE
        self.steps_path = directory / STEPS_FILE

    def exists(self) -> bool:
        return self.state_path.exists()

    def load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.state_path.read_text())
        except (OSError, ValueError) as error:
            raise ValidationError(f"{self.state_path}: unreadable state: {error}") from None
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise ValidationError(f"{self.state_path}: not a characterization state this "
                                  "msoctl can resume")
        return data

    def create(self, settings: Settings, original_map: Mapping[int, int],
               identities: Mapping[str, Any]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.steps_path.exists():
            self.steps_path.unlink()
        data = {"version": STATE_VERSION, "settings": settings.as_dict(),
                "original_map": {str(i): e for i, e in original_map.items()},
                "identities": dict(identities), "started": _now()}
        _write_atomically(self.state_path, json.dumps(data, indent=2) + "\n")

    def records(self) -> list[dict[str, Any]]:
        """Every completed step, in file order (a line torn by a crash is skipped)."""
        try:
            lines = self.steps_path.read_bytes().splitlines()
        except FileNotFoundError:
            return []
        records = []
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("step"), int):
                records.append(record)
        return records

    def append(self, record: Mapping[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":")) + "\n"
        fd = os.open(self.steps_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = "\n" + line  # a torn record from a crash: start afresh
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def settings_differ(stored: Mapping[str, Any], wanted: Settings) -> list[str]:
    """The names of the settings that differ between a state file and this run."""
    fresh = json.loads(json.dumps(wanted.as_dict()))
    return sorted(key for key in fresh if stored.get(key) != fresh[key])


# ---- the run -------------------------------------------------------------------------------


@dataclass
class StepResult:
    """What one step measured (one line of steps.jsonl)."""

    step: Step
    readings_dbm: dict[int, float | None]  # by egress port
    switching_seconds: dict[int, float | None]  # by egress port
    ocs_switching_seconds: float | None
    factory_loss_db: dict[int, float | None]  # by ingress port
    window_seconds: float
    remeasured: bool

    def record(self, run: str) -> dict[str, Any]:
        step = self.step
        return {
            "step": step.index, "run": run, "kind": step.kind, "round": step.round,
            "wavelength_nm": step.wavelength_nm,
            "paths": {str(i): e for i, e in step.paths.items()},
            "readings_dbm": {str(e): v for e, v in self.readings_dbm.items()},
            "switching_seconds": {str(e): v for e, v in self.switching_seconds.items()},
            "ocs_switching_seconds": self.ocs_switching_seconds,
            "factory_loss_db": {str(i): v for i, v in self.factory_loss_db.items()},
            "window_seconds": self.window_seconds, "remeasured": self.remeasured,
            "at": _now(),
        }


@dataclass
class Outcome:
    done_before: int
    done_now: int
    run: str


class Characterization:
    """Runs the schedule against an OCS, a laser and a meter, into ``directory``."""

    def __init__(self, ocs: OcsDriver, laser: LaserDriver, meter: MeterDriver,
                 settings: Settings, directory: Path, *, run: str,
                 on_step: Callable[[StepResult], None] | None = None):
        self.ocs = ocs
        self.laser = laser
        self.meter = meter
        self.settings = settings
        self.state = RunState(directory)
        self.run_id = run
        self.on_step = on_step
        self.steps = plan_steps(settings)
        self._meter_port = settings.test_set.meter_ports
        self._ports = sorted({self._meter_port[e] for e in settings.egress})
        self._egress_of = {self._meter_port[e]: e for e in settings.egress}
        self._window = settings.log_window_seconds
        self._configured: tuple[int, float] | None = None
        self._longest: float | None = None
        self._levels: dict[int, float | None] | None = None  # by meter port, now
        self._last_paths: dict[int, int] | None = None
        self._wavelength: float | None = None

    def completed(self) -> set[int]:
        return {record["step"] for record in self.state.records()}

    def run(self) -> Outcome:
        done = self.completed()
        outcome = Outcome(len(done & {s.index for s in self.steps}), 0, self.run_id)
        remaining = [step for step in self.steps if step.index not in done]
        if not remaining:
            return outcome
        self.laser.set_power_dbm(self.settings.laser_power_dbm)
        self.meter.set_averaging_seconds(self.settings.averaging_seconds, self._ports)
        try:
            for step in remaining:
                result = self.measure(step)
                self.state.append(result.record(self.run_id))
                outcome.done_now += 1
                if self.on_step is not None:
                    self.on_step(result)
        finally:
            self.laser.set_output(False)
        return outcome

    def _tune(self, wavelength_nm: float) -> None:
        if self._wavelength == wavelength_nm:
            return
        self.laser.set_wavelength_nm(wavelength_nm)
        self.meter.set_wavelength_nm(wavelength_nm, self._ports)
        if not self.laser.output_on():
            self.laser.set_output(True)
        self._wavelength = wavelength_nm
        self._levels = None

    def _read(self) -> dict[int, float | None]:
        return self.meter.read_all_dbm(self._ports)

    def _log(self, window: float) -> None:
        interval = self.settings.log_interval_seconds
        samples = max(MIN_WINDOW_SAMPLES, round(window / interval))
        if self._configured != (samples, interval):
            self.meter.configure_logging(samples, interval, self._ports)
            self._configured = (samples, interval)
        self.meter.start_logging(self._ports)

    def _reconfigure(self, paths: Mapping[int, int], window: float | None) -> tuple[
            dict[int, float | None], dict[int, float | None]]:
        """Set the map, logging if ``window``; the readings after, and switching times."""
        before = self._levels if self._levels is not None else self._read()
        if window is not None:
            self._log(window)
        self.ocs.replace_map(paths)
        traces: dict[int, PowerTrace] = {}
        if window is not None:
            # A sensor that logs takes no single readings: the logging ends first.
            self.meter.wait_logging(self._ports)
            traces = self.meter.logging_results(self._ports)
        after = self._read()
        times = switching_times(traces, before, after) if traces else {}
        self._levels = after
        self._last_paths = dict(paths)
        return after, times

    def measure(self, step: Step) -> StepResult:
        self._tune(step.wavelength_nm)
        first_here = self._last_paths is None
        window = self._window if first_here or self._longest is None else min(
            self._window, max(1.5 * self._longest + 0.005,
                              MIN_WINDOW_SAMPLES * self.settings.log_interval_seconds))
        previous = self._last_paths
        after, times = self._reconfigure(step.paths, window)
        remeasured = False
        for _ in range(MEASURE_TRIES - 1):
            if None not in times.values() or previous is None:
                break
            # Not settled inside the window: go back and switch again, logging it all.
            self._reconfigure(previous, None)
            window, remeasured = self._window, True
            after, times = self._reconfigure(step.paths, window)
        measured = [t for t in times.values() if t is not None]
        if measured:
            self._longest = max(self._longest or 0.0, max(measured))
        lc = self.ocs.lc_status()
        factory = {c.ingress: c.insertion_loss_db for c in self.ocs.connections()}
        return StepResult(
            step=step,
            readings_dbm={self._egress_of[p]: v for p, v in after.items()},
            switching_seconds={self._egress_of[p]: t for p, t in times.items()},
            ocs_switching_seconds=lc.last_switching_seconds,
            factory_loss_db={i: factory.get(i) for i in step.paths},
            window_seconds=round(window, 6),
            remeasured=remeasured,
        )


def iter_rows(settings: Settings, records: Iterable[Mapping[str, Any]]) -> Iterator[
        dict[str, Any]]:
    """One row per metered egress port per step: the CSV of every measurement."""
    for record in sorted(records, key=lambda r: int(r["step"])):
        paths = {int(i): int(e) for i, e in record["paths"].items()}
        feeder = {e: i for i, e in paths.items()}
        victims = crosstalk_victims(paths, settings.egress) if record["kind"] == "crosstalk" \
            else {}
        for egress_text, reading in record["readings_dbm"].items():
            egress = int(egress_text)
            ingress = feeder.get(egress)
            at_egress = None if reading is None else round(
                settings.at_egress_dbm(egress, reading), 4)
            row: dict[str, Any] = {
                "step": record["step"], "kind": record["kind"], "round": record["round"],
                "wavelength_nm": record["wavelength_nm"], "ingress": ingress, "egress": egress,
                "meter_port": settings.test_set.meter_ports[egress],
                "launch_dbm": None, "received_dbm": at_egress, "insertion_loss_db": None,
                "factory_insertion_loss_db": None,
                "switching_seconds": record["switching_seconds"].get(egress_text),
                "crosstalk_db": None, "aggressor_ingress": None, "aggressor_egress": None,
                "at_meter_floor": None,
            }
            if ingress is not None:
                launch = settings.launch_dbm(ingress)
                row["launch_dbm"] = round(launch, 4)
                row["insertion_loss_db"] = None if at_egress is None else round(
                    launch - at_egress, 4)
                row["factory_insertion_loss_db"] = record["factory_loss_db"].get(str(ingress))
            elif egress in victims:
                aggressor = victims[egress]
                launch = settings.launch_dbm(aggressor)
                row["aggressor_ingress"] = aggressor
                row["aggressor_egress"] = paths[aggressor]
                row["launch_dbm"] = round(launch, 4)
                row["crosstalk_db"] = None if at_egress is None else round(at_egress - launch, 3)
                row["at_meter_floor"] = at_egress is None or at_egress < METER_FLOOR_DBM
            yield row

