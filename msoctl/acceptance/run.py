"""``msoctl ocs characterize`` and ``msoctl ocs report``: checks, instruments, journal, progress.

Everything that can be refused is refused before the OCS is changed (exit 2):
the options, the inventory kinds, what the instruments lack of what the run needs
(:data:`RUN_NEEDS`: found when they open, before any of the three devices is
changed), the reference file, the ports against the OCS's size and the test set,
the wavelengths and power against the laser's range, a directory holding a
different characterization. The launch power
is checked against the OCS's switching-power safety limit (exit 3 without
``--force``). The run holds the OCS's lock and is one journaled change; the
map found before the first step is restored after the last.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from drivers.errors import SafetyInterlock, Unsupported, ValidationError
from drivers.ocs import OcsDriver, PortMap
from drivers.yamlfile import read_text
from msoctl import safety
from msoctl.acceptance.characterize import (
    MIN_LAUNCH_DBM,
    Characterization,
    Limits,
    RunState,
    Settings,
    StepResult,
    load_test_set,
    plan_steps,
    settings_differ,
)
from msoctl.acceptance.report import REPORT_FILE, write_report
from msoctl.access import Devices, open_laser, open_meter, open_ocs
from msoctl.impact import Impact
from msoctl.inventory import Device
from msoctl.journal import Journal, locked_change
from msoctl.ops.ocs import close_interrupted
from msoctl.words import counted

if TYPE_CHECKING:  # the instruments' drivers (pyvisa) load when a test set is opened
    from drivers.instruments import LaserDriver, MeterDriver

BENCH_LABEL = "bench"
"""The inventory label that ties an instrument to the OCS whose test set it is part of."""

RUN_NEEDS: dict[str, dict[str, str]] = {
    "laser": {"range": "ocs characterize checks every wavelength and the launch power "
                       "against the laser's range before it changes anything"},
    "meter": {"logging": "ocs characterize times each switching from the meter's logging"},
}
"""The optional features (drivers/instruments/commands.py) a characterization needs, by
instrument; each missing one is named in the refusal. The OCS's optional features are
not needed: without its LC figures the report lacks the OCS's own switching times and
factory losses, without power monitors the switching-power check takes the launch
power alone; a meter without the all-ports query is read port by port."""


@dataclass(frozen=True)
class CharacterizeRequest:
    device: str
    laser: str
    meter: str
    ports: list[int] | None
    wavelengths_nm: list[float]
    repeat: int
    out_dir: Path
    reference: Path | None
    laser_power_dbm: float
    averaging_seconds: float
    log_interval_seconds: float
    log_window_seconds: float
    limits: Limits
    restart: bool
    force: bool
    show_progress: bool
    impacts_of: Callable[[Mapping[int, int], Mapping[int, int]], list[Impact]] | None = None
    """What a map change of the OCS does to the inventory's links (msoctl.impact.ocs_map
    with the drained links and the other OCS's maps); ``None``: nothing checked."""


def limits_from_options(max_il: float, max_repeatability: float, max_switching_ms: float,
                        max_crosstalk: float) -> Limits:
    if not 0 < max_il <= 30:
        raise ValidationError(f"--max-il {max_il:g}: give 0..30 dB")
    if not 0 < max_repeatability <= 10:
        raise ValidationError(f"--max-repeatability {max_repeatability:g}: give 0..10 dB")
    if not 0 < max_switching_ms <= 10_000:
        raise ValidationError(f"--max-switching-ms {max_switching_ms:g}: give 0..10000 ms")
    if not -100 <= max_crosstalk < 0:
        raise ValidationError(f"--max-crosstalk {max_crosstalk:g}: give -100..0 dB")
    return Limits(max_il, max_repeatability, max_switching_ms / 1000.0, max_crosstalk)


def _check_timing(request: CharacterizeRequest) -> None:
    if not 1e-6 <= request.averaging_seconds <= 1.0:
        raise ValidationError(f"--averaging-time {request.averaging_seconds:g}: give 1e-6..1 s")
    if not 1e-6 <= request.log_interval_seconds <= 0.01:
        raise ValidationError(f"--log-interval {request.log_interval_seconds:g}: "
                              "give 1e-6..0.01 s")
    if not 0.005 <= request.log_window_seconds <= 2.0:
        raise ValidationError(f"--log-window {request.log_window_seconds:g}: give 0.005..2 s")
    if request.log_window_seconds / request.log_interval_seconds > 100_000:
        raise ValidationError("--log-window / --log-interval: at most 100000 samples")
    if request.log_window_seconds < request.limits.max_switching_seconds:
        raise ValidationError(f"--log-window {request.log_window_seconds:g} s is shorter than "
                              "the switching-time limit: a slow switch could not be seen")


@contextmanager
def _instruments(devices: Devices, request: CharacterizeRequest) -> Iterator[
        tuple[Device, OcsDriver, Device, LaserDriver, Device, MeterDriver]]:
    inventory = devices.inventory
    laser_entry = inventory.device(request.laser, "laser")
    meter_entry = inventory.device(request.meter, "meter")
    entry = inventory.device(request.device, "ocs")
    with ExitStack() as stack:
        ocs = open_ocs(entry)
        stack.callback(ocs.close)
        laser = open_laser(laser_entry)
        stack.callback(laser.close)
        meter = open_meter(meter_entry)
        stack.callback(meter.close)
        yield entry, ocs, laser_entry, laser, meter_entry, meter


def _check_bench(entry: Device, *instruments: Device) -> None:
    """Refuse instruments the inventory ties to the test set of another OCS."""
    for instrument in instruments:
        bench = instrument.labels.get(BENCH_LABEL)
        if bench is not None and bench != entry.name:
            raise ValidationError(f"{instrument.name} belongs to the test set of {bench} "
                                  f"(its label {BENCH_LABEL}), not to {entry.name}: its "
                                  "fibers reach that OCS's ports")


def _check_needs(laser: LaserDriver, meter: MeterDriver) -> None:
    """Refuse, naming every feature and instrument, when the laser or the meter lacks
    what the run needs (:data:`RUN_NEEDS`): their answers when they opened, nothing
    sent now."""
    lacking: list[str] = []
    for kind, driver in (("laser", laser), ("meter", meter)):
        for key, purpose in RUN_NEEDS[kind].items():
            try:
                driver.require(key, purpose)
            except Unsupported as error:
                lacking.append(str(error))
    if lacking:
        raise Unsupported("; ".join(lacking))


def _settings(request: CharacterizeRequest, ocs: OcsDriver, laser: LaserDriver,
              laser_entry: Device, meter_entry: Device) -> Settings:
    from msoctl.acceptance.characterize import choose_ports

    reference = request.reference or laser_entry.reference
    if reference is None:
        raise ValidationError(f"no test-set reference: pass --reference FILE, or give "
                              f"{laser_entry.name} a 'reference' in the inventory")
    test_set = load_test_set(reference)
    assert meter_entry.channels is not None
    ingress, egress = choose_ports(ocs.size, test_set, request.ports, meter_entry.channels)
    limits = laser.range()
    for wavelength in request.wavelengths_nm:
        if not limits.wavelength_min_nm <= wavelength <= limits.wavelength_max_nm:
            raise ValidationError(f"--wavelengths: {wavelength:g} nm is outside "
                                  f"{laser.name}'s range {limits.wavelength_min_nm:g}.."
                                  f"{limits.wavelength_max_nm:g} nm")
    if not limits.power_min_dbm <= request.laser_power_dbm <= limits.power_max_dbm:
        raise ValidationError(f"--laser-power {request.laser_power_dbm:g} dBm is outside "
                              f"{laser.name}'s range {limits.power_min_dbm:g}.."
                              f"{limits.power_max_dbm:g} dBm")
    weakest = request.laser_power_dbm - max(test_set.launch_loss_db[i] for i in ingress)
    if weakest < MIN_LAUNCH_DBM:
        raise ValidationError(f"--laser-power {request.laser_power_dbm:g} dBm launches only "
                              f"{weakest:.1f} dBm into some ingress port; at least "
                              f"{MIN_LAUNCH_DBM:g} dBm is needed to tell light from crosstalk")
    return Settings(
        device=request.device, ocs_serial=ocs.identity().serial, size=ocs.size,
        laser=request.laser, meter=request.meter, ingress=ingress, egress=egress,
        wavelengths_nm=tuple(request.wavelengths_nm), repeat=request.repeat,
        laser_power_dbm=request.laser_power_dbm, averaging_seconds=request.averaging_seconds,
        log_interval_seconds=request.log_interval_seconds,
        log_window_seconds=request.log_window_seconds, test_set=test_set)


def _safety(journal: Journal, entry: Device, ocs: OcsDriver, settings: Settings,
            force: bool) -> list[safety.Violation]:
    """The launch power and any light already on the ports, against the switching limit."""
    limit = entry.max_switch_power_dbm
    ports = [*settings.ingress, *settings.egress]
    launched = {i: settings.launch_dbm(i) for i in settings.ingress}
    present = ocs.power(ports)
    powers = {p: max((v for v in (present.get(p), launched.get(p)) if v is not None),
                     default=None) for p in ports}
    violations = safety.ocs_lit_ports(powers, ports, limit)
    if violations and not force:
        message = violations[0].message + (
            f" (and {len(violations) - 1} more)" if len(violations) > 1 else "")
        journal.refuse(device=entry.name, action="ocs.characterize", reason=message,
                           exit_code=3, rule=violations[0].rule,
                           ports=[v.port for v in violations])
        raise SafetyInterlock(f"{message}; lower --laser-power or use --force (journaled)",
                              device=entry.name)
    return violations


def _links(journal: Journal, entry: Device, ocs: OcsDriver,
           request: CharacterizeRequest) -> list[safety.Violation]:
    """The in-service rule of every change: each step sets the whole map to its test
    paths, so every connection the OCS holds now goes dark for the run; an in-service
    link among them is refused (exit 3, journaled) unless drained or --force."""
    if request.impacts_of is None:
        return []
    impacts = request.impacts_of(ocs.port_map(), {})
    violations = safety.links_taken_down(impacts)
    if violations and not request.force:
        message = safety.refusal(violations)
        journal.refuse(device=entry.name, action="ocs.characterize", reason=message,
                       exit_code=3, rule=violations[0].rule,
                       links=[i.as_dict() for i in impacts])
        raise SafetyInterlock(f"the characterization sets whole maps: {message}",
                              device=entry.name)
    return violations


def run_characterization(devices: Devices, journal: Journal, request: CharacterizeRequest
                         ) -> dict[str, Any]:
    """Check, run (or continue) and report a characterization; the report document."""
    _check_timing(request)
    with _instruments(devices, request) as (entry, ocs, laser_entry, laser, meter_entry, meter):
        try:
            _check_bench(entry, laser_entry, meter_entry)
            _check_needs(laser, meter)
            settings = _settings(request, ocs, laser, laser_entry, meter_entry)
            state = RunState(request.out_dir)
            fresh = request.restart or not state.exists()
            if not fresh:
                stored = state.load()
                differ = settings_differ(stored.get("settings", {}), settings)
                if differ:
                    raise ValidationError(
                        f"{request.out_dir} holds a characterization with other settings "
                        f"({', '.join(differ)}); use another --out, or --restart to start over")
        except ValidationError as error:
            journal.refuse(device=request.device, action="ocs.characterize",
                               reason=error.message, exit_code=2)
            raise
        violations = _safety(journal, entry, ocs, settings, request.force)
        violations += _links(journal, entry, ocs, request)
        steps = plan_steps(settings)
        identities = {"ocs": asdict(ocs.identity()), "laser": asdict(laser.identity()),
                      "meter": asdict(meter.identity())}
        with locked_change(journal, device=entry.name, action="ocs.characterize",
                           out=str(request.out_dir), laser=request.laser,
                           meter=request.meter, steps=len(steps),
                           paths=len(settings.ingress) * len(settings.egress),
                           wavelengths_nm=list(settings.wavelengths_nm),
                           repeat=settings.repeat, fresh=fresh) as change:
            current = ocs.port_map()
            close_interrupted(journal, entry.name, current, change)
            for violation in violations:
                change.note("override", rule=violation.rule, port=violation.port,
                            reason=violation.message)
            if fresh:
                state.create(settings, current, identities)
            original = {int(i): int(e) for i, e in state.load()["original_map"].items()}
            run = Characterization(ocs, laser, meter, settings, request.out_dir,
                                   run=uuid.uuid4().hex[:8])
            done_before = len(run.completed())
            change.outcome["steps_done_before"] = done_before
            with _progress(request.show_progress, len(steps), done_before,
                           f"characterizing {entry.name}") as advance:
                run.on_step = advance
                outcome = run.run()
            change.outcome["steps_done"] = outcome.done_now
            if ocs.port_map() != original:
                ocs.replace_map(PortMap(original, settings.size))
            stored = state.load()
            document = write_report(
                request.out_dir, settings, state.records(), request.limits,
                extra={"identities": stored.get("identities", identities),
                       "started": stored.get("started")})
            change.outcome["pass"] = document["pass"]
            if not document["pass"]:  # what the run found, not only that it ran
                change.status = "failed"
                change.outcome["failures"] = document["failures"]
            return document


@contextmanager
def _progress(show: bool, total: int, done: int, label: str) -> Iterator[Any]:
    if not show:
        yield lambda _: None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr,
                           show_pos=True, show_eta=True) as bar:
        bar.update(done)

        def advance(_: StepResult) -> None:
            bar.update(1)

        yield advance


REPORT_KEYS = frozenset({"device", "pass", "settings", "failures", "steps"})


def load_report(directory: Path) -> dict[str, Any]:
    """The report.json in ``directory``; says what is wrong when there is none."""
    path = directory / REPORT_FILE
    if path.exists():
        try:
            document = json.loads(read_text(path))
        except (ValueError, RecursionError) as error:  # YamlFileError is a ValueError
            raise ValidationError(f"{path}: unreadable report: {error}") from None
        if not isinstance(document, dict) or not set(document) >= REPORT_KEYS:
            raise ValidationError(f"{path}: not a characterization report (it needs "
                                  f"{', '.join(sorted(REPORT_KEYS))})")
        return document
    state = RunState(directory)
    if state.exists():
        raise click.ClickException(
            f"{directory}: characterization not finished "
            f"({counted(len(state.records()), 'step')} done); "
            "run 'msoctl ocs characterize' again with the same options to finish it")
    raise ValidationError(f"{directory}: no characterization here (no {REPORT_FILE})")
