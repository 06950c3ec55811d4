"""``msoctl ocs characterize`` and ``msoctl ocs report`` against the emulated acceptance test set.

An 8x8 OCS with its test set (laser-1 through a fan-out on every ingress port,
pm-1 on every egress port) on a SteppedClock: every wait of the OCS or the
meter jumps the clock, so a characterization takes seconds of real time and
its timing is exact. What is measured is compared with the emulators' truth.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from drivers.instruments import open_laser, open_meter
from drivers.ocs.commands import ALARM_COMMANDS
from drivers.ocs.commands import COMMANDS as OCS_COMMANDS
from drivers.ocs.connect import open_ocs
from emulators.clock import RealClock, SteppedClock
from emulators.instruments.acceptancelab import REFERENCE_FILE, AcceptanceLab
from emulators.instruments.meter import ACCURACY_DB, NOISE_DB
from emulators.instruments.testset import PLAIN, InstrumentKinds
from msoctl.acceptance import characterize as char
from msoctl.acceptance.characterize import (
    Characterization,
    Limits,
    Settings,
    StepResult,
    load_test_set,
    plan_steps,
    switching_times,
)
from msoctl.acceptance.report import write_report
from msoctl.journal import Journal
from tests.support import Msoctl, Result, in_process

SIZE = 8
INTERVAL = 1e-4
MODEL_CROSSTALK_DB = -50.0  # OcsDevice's crosstalk_db: each neighbour gets this or less
REPEATABILITY_DB = 0.1  # OcsDevice: a connection lands within +-0.1 dB of the factory value


def _address(lab: AcceptanceLab, name: str) -> str:
    inventory = yaml.safe_load((lab.state_dir / "inventory.yaml").read_text())
    return next(d["address"] for d in inventory["devices"] if d["name"] == name)


def _settings(lab: AcceptanceLab, *, repeat: int = 3) -> Settings:
    test_set = load_test_set(lab.state_dir / REFERENCE_FILE)
    return Settings(
        device="ocs-dut", ocs_serial=lab.ocs.serial, size=SIZE, laser="laser-1", meter="pm-1",
        ingress=tuple(range(1, SIZE + 1)), egress=tuple(range(SIZE + 1, 2 * SIZE + 1)),
        wavelengths_nm=(1550.0,), repeat=repeat, laser_power_dbm=10.0, averaging_seconds=0.01,
        log_interval_seconds=INTERVAL, log_window_seconds=0.1, test_set=test_set)


class Measured:
    """One whole characterization through the drivers, with the emulators' truth per step."""

    def __init__(self, directory: Path):
        self.lab = AcceptanceLab(directory / "test-set", size=SIZE, clock=SteppedClock())
        self.lab.start()
        self.settings = _settings(self.lab)
        self.truth: list[dict[str, Any]] = []
        self.out = directory / "out"
        ocs = open_ocs("ocs-dut", "visa", _address(self.lab, "ocs-dut"))
        laser = open_laser("laser-1", "visa", _address(self.lab, "laser-1"))
        meter = open_meter("pm-1", "visa", _address(self.lab, "pm-1"), channels=SIZE)
        try:
            char.RunState(self.out).create(self.settings, {}, {})
            run = Characterization(ocs, laser, meter, self.settings, self.out, run="one",
                                   on_step=self._truth)
            self.outcome = run.run()
        finally:
            for driver in (ocs, laser, meter):
                driver.close()
        self.records = char.RunState(self.out).records()
        self.report = write_report(self.out, self.settings, self.records, Limits())

    def _truth(self, result: StepResult) -> None:
        device = self.lab.ocs
        self.truth.append({
            "step": result.step.index,
            "loss_db": {i: device.path_loss_db(i) for i in result.step.paths},
            "switching_seconds": device.last_switch_seconds,
            "result": result,
        })


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Measured]:
    run = Measured(tmp_path_factory.mktemp("characterize"))
    try:
        yield run
    finally:
        run.lab.stop()


# ---- what is measured against what is emulated ----------------------------------------------


def test_the_schedule_covers_every_path_once_per_round(measured: Measured) -> None:
    steps = plan_steps(measured.settings)
    il_steps = [s for s in steps if s.kind == "insertion_loss"]
    assert len(il_steps) == 3 * SIZE  # a whole permutation per step
    for round_index in range(3):
        pairs = [(i, e) for s in il_steps if s.round == round_index for i, e in s.paths.items()]
        assert sorted(pairs) == sorted((i, e) for i in range(1, SIZE + 1)
                                       for e in range(SIZE + 1, 2 * SIZE + 1))
    assert measured.outcome.done_now == len(steps) == len(measured.records)


def test_insertion_loss_matches_the_emulated_loss_within_the_meter_accuracy(
        measured: Measured) -> None:
    meter = measured.lab.meter
    checked = 0
    for truth in measured.truth:
        result: StepResult = truth["result"]
        if result.step.kind != "insertion_loss":
            continue
        for ingress, egress in result.step.paths.items():
            reading = result.readings_dbm[egress]
            assert reading is not None
            measured_loss = measured.settings.launch_dbm(ingress) - reading
            true_loss = truth["loss_db"][ingress]
            # The reference carries port 1's calibration error, the reading port e's.
            bias = meter.offset_db[0] - meter.offset_db[egress - SIZE - 1]
            assert abs(measured_loss - true_loss) <= 2 * ACCURACY_DB + 5 * NOISE_DB
            assert measured_loss - true_loss == pytest.approx(bias, abs=5 * NOISE_DB)
            checked += 1
    assert checked == 3 * SIZE * SIZE


def test_insertion_loss_matrix_matches_the_factory_table(measured: Measured) -> None:
    section = measured.report["wavelengths"][0]["insertion_loss"]
    matrix = section["matrix_db"]
    assert section["paths"] == SIZE * SIZE and section["paths_without_light"] == 0
    for row, ingress in zip(matrix["values"], matrix["ingress"], strict=True):
        for value, egress in zip(row, matrix["egress"], strict=True):
            factory = measured.lab.ocs.factory_loss_db(ingress, egress)
            # Each connection lands within the model's repeatability of its factory value.
            assert abs(value - factory) <= 2 * ACCURACY_DB + REPEATABILITY_DB + 5 * NOISE_DB
    delta = section["measured_minus_factory_db"]
    assert abs(delta["mean"]) <= 2 * ACCURACY_DB


def test_switching_times_match_the_emulated_ones(measured: Measured) -> None:
    compared = 0
    for truth in measured.truth:
        result: StepResult = truth["result"]
        emulated = truth["switching_seconds"]
        assert result.ocs_switching_seconds == pytest.approx(emulated, abs=1e-4)
        for egress, seconds in result.switching_seconds.items():
            assert seconds is not None, (result.step.index, egress)
            assert seconds == pytest.approx(emulated, abs=2 * INTERVAL)
            compared += 1
    # Every port of every step but the first (the map was empty: no light to fall).
    assert compared >= (len(measured.truth) - 4) * SIZE // 2
    switching = measured.report["switching"]
    assert switching["unsettled"] == 0 and switching["pass"] is True
    assert 0.025 < switching["median_seconds"] < 0.035  # the warm LC engine: about 30 ms


def test_a_step_measured_again_is_timed_as_the_unit_switched_it(tmp_path: Path) -> None:
    """A step that did not settle inside its short window is measured again: the map
    goes back, then the step is switched again with the full window, and its time is the
    unit's own (the way back done first: a unit still switching would start the step at
    the end of it). Here the cell cools after the second step (the heater off in a 30
    degC room: each switch about 54 ms, past the short window of 1.5 x 30 ms + 5 ms)."""
    lab = AcceptanceLab(tmp_path / "test-set", size=SIZE, clock=SteppedClock())
    lab.start()
    settings = _settings(lab, repeat=1)
    truth: list[tuple[StepResult, float | None]] = []

    def cool_after_the_second(result: StepResult) -> None:
        truth.append((result, lab.ocs.last_switch_seconds))
        if len(truth) == 2:
            lab.ocs.ambient_celsius, lab.ocs.heater_on = 30.0, False

    ocs = open_ocs("ocs-dut", "visa", _address(lab, "ocs-dut"))
    laser = open_laser("laser-1", "visa", _address(lab, "laser-1"))
    meter = open_meter("pm-1", "visa", _address(lab, "pm-1"), channels=SIZE)
    try:
        char.RunState(tmp_path / "out").create(settings, {}, {})
        Characterization(ocs, laser, meter, settings, tmp_path / "out", run="one",
                         on_step=cool_after_the_second).run()
    finally:
        for driver in (ocs, laser, meter):
            driver.close()
        lab.stop()
    again = [(result, emulated) for result, emulated in truth if result.remeasured]
    assert again, "no step was measured again"
    for result, emulated in again:
        assert emulated is not None and emulated > 0.05
        measured = [t for t in result.switching_seconds.values() if t is not None]
        assert measured and len(measured) == len(result.switching_seconds), result
        assert all(t == pytest.approx(emulated, abs=2 * INTERVAL) for t in measured), (
            result.step.index, emulated, measured)


def test_crosstalk_is_below_the_model_figure(measured: Measured) -> None:
    device = measured.lab.ocs
    rows = [r for r in char.iter_rows(measured.settings, measured.records)
            if r["crosstalk_db"] is not None]
    assert len(rows) >= SIZE  # each unconnected port next to one lit port
    for row in rows:
        assert row["crosstalk_db"] <= MODEL_CROSSTALK_DB
        aggressor = row["aggressor_ingress"]
        expected = device._crosstalk[aggressor - 1] - device.factory_loss_db(
            aggressor, row["aggressor_egress"])
        assert row["crosstalk_db"] == pytest.approx(
            expected, abs=2 * ACCURACY_DB + REPEATABILITY_DB + 5 * NOISE_DB)
        assert not row["at_meter_floor"]
    assert measured.report["wavelengths"][0]["crosstalk"]["pass"] is True


def test_report_files(measured: Measured) -> None:
    report = measured.report
    assert report["pass"] is True and report["failures"] == []
    for name in ("report.json", "measurements.csv", "insertion_loss_1550nm.png",
                 "switching_histogram.png"):
        assert (measured.out / name).stat().st_size > 0, name
    assert (measured.out / "insertion_loss_1550nm.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = (measured.out / "measurements.csv").read_text().splitlines()
    assert lines[0].startswith("step,kind,round,wavelength_nm,ingress,egress")
    assert len(lines) == 1 + len(measured.records) * SIZE
    on_disk = json.loads((measured.out / "report.json").read_text())
    assert on_disk["wavelengths"][0]["repeatability"]["rounds"] == 3


def test_switching_time_analysis_needs_a_fall_and_a_settled_rise() -> None:
    from drivers.instruments import PowerTrace

    dark, lit = -80.0, -2.0
    trace = PowerTrace(1, 1e-3, (lit, lit, dark, dark, dark, -2.6, lit, lit))
    unsettled = PowerTrace(2, 1e-3, (lit, dark, dark, dark, dark, dark, dark, -9.0))
    steady = PowerTrace(3, 1e-3, (lit,) * 8)
    was_dark = PowerTrace(4, 1e-3, (dark, dark, dark, dark, lit, lit, lit, lit))
    times = switching_times({1: trace, 2: unsettled, 3: steady, 4: was_dark},
                            {1: lit, 2: lit, 3: lit, 4: None}, {1: lit, 2: lit, 3: lit, 4: lit})
    assert times[1] == pytest.approx(0.004)  # falls at 2, within 0.5 dB from 6
    assert times[2] is None
    assert 3 not in times
    assert times[4] == pytest.approx(0.003)  # from the others' fall (lower median: sample 1)


# ---- the command line -------------------------------------------------------------------------


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[AcceptanceLab]:
    with AcceptanceLab(tmp_path / "test-set", size=SIZE, clock=SteppedClock()) as running:
        yield running


@pytest.fixture
def cli(lab: AcceptanceLab, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> Msoctl:
    monkeypatch.setenv("MSOCTL_INVENTORY", str(lab.state_dir / "inventory.yaml"))
    monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
    return in_process(capsys)


SMALL = ("--ports", "1-4,9-12", "--repeat", "2")


def characterize(cli: Msoctl, out: Path, *extra: str) -> Result:
    return cli("ocs", "characterize", "ocs-dut", "--laser", "laser-1", "--meter", "pm-1",
               "--out", str(out), *extra)


def test_cli_characterizes_restores_the_map_and_journals(cli: Msoctl, lab: AcceptanceLab,
                                                         tmp_path: Path) -> None:
    lab.ocs.only((1,), (16,))  # in service before the test: it comes back after
    result = characterize(cli, tmp_path / "out", *SMALL)
    assert result.code == 0, result.err
    assert result.err == ""  # no progress bar when stderr is not a terminal
    assert "ocs-dut: PASS" in result.out and "switching time" in result.out
    assert lab.ocs.connection_map() == {1: 16}
    assert not lab.laser.output_on
    records = [r for r in Journal(lab.state_dir / "journal.sqlite").records()
               if r.get("action") == "ocs.characterize"]
    assert [r["event"] for r in records] == ["intent", "result"]
    assert records[1]["status"] == "ok" and records[1]["pass"] is True
    shown = cli("ocs", "report", str(tmp_path / "out"))
    assert shown.code == 0 and "ocs-dut: PASS" in shown.out
    document = json.loads(cli("ocs", "report", str(tmp_path / "out"), "-o", "json").out)
    assert document["paths"] == 16 and document["settings"]["repeat"] == 2


def test_cli_json_output_is_one_document(cli: Msoctl, tmp_path: Path) -> None:
    result = characterize(cli, tmp_path / "out", *SMALL, "-o", "json")
    assert result.code == 0 and result.err == ""
    document = json.loads(result.out)
    assert document["pass"] is True
    assert set(document["switching"]) >= {"samples", "median_seconds", "max_seconds",
                                           "ocs_reported", "pass"}


def test_a_failed_limit_exits_1_with_the_report_written(cli: Msoctl, tmp_path: Path) -> None:
    result = characterize(cli, tmp_path / "out", *SMALL, "--max-il", "1.0")
    assert result.code == 1
    assert result.err.startswith("error: ocs-dut did not pass: ") and result.err.count("\n") == 1
    assert "FAIL" in result.out
    assert json.loads((tmp_path / "out" / "report.json").read_text())["pass"] is False


@pytest.mark.parametrize("args", [
    ("--repeat", "0"),
    ("--ports", "1-99"),
    ("--ports", "one"),
    ("--wavelengths", "1700"),
    ("--wavelengths", "abc"),
    ("--laser-power", "20"),
    ("--laser", "pm-1"),
    ("--meter", "nope"),
    ("--log-window", "0.01"),
    ("--max-il", "-1"),
    ("--reference", "/nonexistent/reference.yaml"),
])
def test_bad_arguments_are_one_error_line_and_exit_2(cli: Msoctl, lab: AcceptanceLab,
                                                     tmp_path: Path, args: tuple[str, ...]) -> None:
    result = characterize(cli, tmp_path / "out", *args)
    assert result.code == 2, result.err
    assert result.err.startswith("error: ") and result.err.count("\n") == 1, result.err
    assert lab.ocs.connection_map() == {} and not lab.laser.output_on
    assert not (tmp_path / "out" / "state.json").exists()


def test_other_settings_in_the_same_directory_are_refused(cli: Msoctl, tmp_path: Path) -> None:
    assert characterize(cli, tmp_path / "out", "--ports", "1-2,9-10", "--repeat", "1").code == 0
    result = characterize(cli, tmp_path / "out", "--ports", "1-2,9-10", "--repeat", "2")
    assert result.code == 2 and "other settings (repeat)" in result.err
    again = characterize(cli, tmp_path / "out", "--ports", "1-2,9-10", "--repeat", "2",
                         "--restart")
    assert again.code == 0
    assert json.loads((tmp_path / "out" / "report.json").read_text())["settings"]["repeat"] == 2


def test_launch_power_above_the_switching_limit_is_a_safety_refusal(
        cli: Msoctl, lab: AcceptanceLab, tmp_path: Path) -> None:
    path = lab.state_dir / "inventory.yaml"
    inventory = yaml.safe_load(path.read_text())
    inventory["devices"][0]["max_switch_power_dbm"] = -5.0
    path.write_text(yaml.safe_dump(inventory))
    result = characterize(cli, tmp_path / "out", *SMALL)
    assert result.code == 3 and "switching limit" in result.err
    assert lab.ocs.connection_map() == {}
    forced = characterize(cli, tmp_path / "out", *SMALL, "--force")
    assert forced.code == 0


def test_report_of_an_unfinished_or_missing_characterization(cli: Msoctl,
                                                             tmp_path: Path) -> None:
    missing = cli("ocs", "report", str(tmp_path))
    assert missing.code == 2 and missing.err.startswith("error: ")
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "state.json").write_text(json.dumps({"version": 1}))
    half = cli("ocs", "report", str(tmp_path / "half"))
    assert half.code == 1 and "not finished" in half.err


# ---- instruments without an optional feature ------------------------------------------------


def _ocs_changes(lab: AcceptanceLab) -> list[str]:
    """The OCS commands that change something (not queries, not *CLS) that reached it."""
    table = {**OCS_COMMANDS, **ALARM_COMMANDS}
    return sorted(key for key, count in lab.ocs.requests.commands.items()
                  if count and not table[key].is_query and key != "clear_status")


def _instrument_changes(lab: AcceptanceLab) -> list[str]:
    return sorted(f"{device.name}:{key}" for device in (lab.laser, lab.meter)
                  for key, count in device.requests.commands.items()
                  if count and (key.endswith("_set") or key == "reset"))


@pytest.mark.parametrize("kinds, lacking", [
    (InstrumentKinds(meter_logging=False),
     "pm-1: power logging not supported by this unit (:SENS1:CHAN1:FUNC:STAT? is an "
     "undefined header on it): ocs characterize times each switching from the meter's "
     "logging"),
    (PLAIN, "laser-1: range queries (MIN/MAX) not supported by this unit (:SOUR1:WAV? MIN "
            "is refused, -108 Parameter not allowed): ocs characterize checks every "
            "wavelength and the launch power against the laser's range before it changes "
            "anything; pm-1: power logging not supported"),
], ids=["meter without logging", "plain instruments"])
def test_what_the_instruments_lack_is_refused_before_any_device_changes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        kinds: InstrumentKinds, lacking: str) -> None:
    with AcceptanceLab(tmp_path / "test-set", size=4, clock=SteppedClock(),
                       instruments=kinds) as lab:
        lab.ocs.only((1,), (6,))
        lab.ocs.requests.clear()
        monkeypatch.setenv("MSOCTL_INVENTORY", str(lab.state_dir / "inventory.yaml"))
        monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
        result = characterize(in_process(capsys), tmp_path / "out", "--repeat", "1")
        assert result.code == 2, result.err
        assert result.err.startswith(f"error: {lacking}") and result.err.count("\n") == 1
        # Nothing reached any of the three devices that changes anything.
        assert _ocs_changes(lab) == [] and _instrument_changes(lab) == []
        assert lab.ocs.connection_map() == {1: 6}
        assert (lab.laser.output_on, lab.laser.wavelength_nm, lab.laser.power_unit) == (
            False, 1550.0, 0)
        assert [port.unit for port in lab.meter.ports] == [0] * 4
        for device in (lab.laser, lab.meter):
            assert device.requests.resync_probes() == [], device.name
        assert not (tmp_path / "out" / "state.json").exists()
        refused = [r for r in Journal(lab.state_dir / "journal.sqlite").records()
                   if r.get("action") == "ocs.characterize"]
        assert [(r["event"], r["exit_code"]) for r in refused] == [("refused", 2)]
        assert refused[0]["reason"].startswith(lacking)


def test_a_meter_without_the_all_ports_query_is_read_port_by_port(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    kinds = InstrumentKinds(meter_all_ports=False, error_queries="next")
    with AcceptanceLab(tmp_path / "test-set", size=4, clock=SteppedClock(),
                       instruments=kinds) as lab:
        monkeypatch.setenv("MSOCTL_INVENTORY", str(lab.state_dir / "inventory.yaml"))
        monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
        result = characterize(in_process(capsys), tmp_path / "out", "--ports", "1-2,5-6",
                              "--repeat", "1", "-o", "json")
        assert result.code == 0, result.err
        assert json.loads(result.out)["pass"] is True
        commands = lab.meter.requests.commands
        assert commands["read_all"] == 0 and commands["read"] > 0
        assert commands["fetch_all"] == 1  # the probe when it opened, alone
        for device in (lab.laser, lab.meter):
            assert device.requests.resync_probes() == [], device.name


def test_an_ocs_without_its_optional_features_is_characterized_without_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The run needs nothing optional of the OCS: without its LC figures the report
    lacks the OCS's own switching times, without monitors the light check takes the
    launch power alone; what it lacks is never asked but by the probe that opened it."""
    with AcceptanceLab(tmp_path / "test-set", size=4, clock=SteppedClock()) as lab:
        device = lab.ocs
        device.extensions = device.power_monitors = device.alarms_supported = False
        device.error_extras = False
        monkeypatch.setenv("MSOCTL_INVENTORY", str(lab.state_dir / "inventory.yaml"))
        monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
        result = characterize(in_process(capsys), tmp_path / "out", "--ports", "1-2,5-6",
                              "--repeat", "1", "-o", "json")
        assert result.code == 0, result.err
        document = json.loads(result.out)
        assert document["pass"] is True and document["switching"]["samples"] > 0
        assert document["switching"]["ocs_reported"]["steps"] == 0
        asked = device.requests.commands
        assert asked["lc_switch_time"] == asked["insertion_loss"] == 0
        assert asked["power"] <= 1  # the probe alone, not the light check
        assert asked["event_status_enable_set"] == 0  # no resynchronisation


# ---- interruptions -----------------------------------------------------------------------------


def _steps(out: Path) -> list[dict[str, Any]]:
    return char.RunState(out).records()


def test_resume_after_an_exception_redoes_no_step(cli: Msoctl, lab: AcceptanceLab,
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    original = Characterization.measure
    calls = {"n": 0}

    def failing(self: Characterization, step: char.Step) -> StepResult:
        if calls["n"] == 5:
            raise OSError("the test set lost power")
        calls["n"] += 1
        return original(self, step)

    monkeypatch.setattr(Characterization, "measure", failing)
    first = characterize(cli, out, *SMALL)
    assert first.code == 1 and "the test set lost power" in first.err
    assert not lab.laser.output_on  # turned off on the way out
    assert len(_steps(out)) == 5
    monkeypatch.setattr(Characterization, "measure", original)
    second = characterize(cli, out, *SMALL)
    assert second.code == 0, second.err
    steps = _steps(out)
    indexes = [s["step"] for s in steps]
    assert sorted(indexes) == list(range(len(steps))) and len(set(indexes)) == len(indexes)
    runs = [s["run"] for s in steps]
    assert len(set(runs[:5])) == 1 and runs[5] != runs[0] and len(set(runs[5:])) == 1
    results = [r for r in Journal(lab.state_dir / "journal.sqlite").records()
               if r.get("action") == "ocs.characterize" and r.get("event") == "result"]
    assert [r["status"] for r in results] == ["failed", "ok"]
    assert results[1]["steps_done_before"] == 5


def test_resume_after_a_kill(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A real process killed mid-run (SIGKILL: no cleanup at all); the rerun finishes it."""
    with AcceptanceLab(tmp_path / "test-set", size=4, clock=RealClock()) as lab:
        env = dict(os.environ, MSOCTL_INVENTORY=str(lab.state_dir / "inventory.yaml"))
        env.pop("MSOCTL_JOURNAL", None)
        out = tmp_path / "out"
        args = ["ocs", "characterize", "ocs-dut", "--laser", "laser-1", "--meter", "pm-1",
                "--out", str(out), "--repeat", "2"]
        msoctl = str(Path(sys.executable).with_name("msoctl"))
        process = subprocess.Popen([msoctl, *args], env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while len(_steps(out)) < 3:
                assert process.poll() is None, "finished before it could be killed"
                assert time.monotonic() < deadline
                time.sleep(0.005)
            process.send_signal(signal.SIGKILL)
            process.wait(10)
        finally:
            if process.poll() is None:
                process.kill()
        done = len(_steps(out))
        total = len(plan_steps(_settings_for(out)))
        assert 3 <= done < total
        monkeypatch.setenv("MSOCTL_INVENTORY", env["MSOCTL_INVENTORY"])
        monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
        rerun = in_process(capsys)(*args)
        assert rerun.code == 0, rerun.err
        steps = _steps(out)
        assert sorted(s["step"] for s in steps) == list(range(total))
        assert len({s["run"] for s in steps[:done]}) == 1
        assert {s["run"] for s in steps[done:]}.isdisjoint({steps[0]["run"]})
        journal = Journal(lab.state_dir / "journal.sqlite")
        interrupted = [r for r in journal.records()
                       if r.get("event") == "result" and r.get("status") == "interrupted"]
        assert len(interrupted) == 1  # the killed run, closed by the rerun
        assert json.loads((out / "report.json").read_text())["steps"] == total


def _settings_for(out: Path) -> Settings:
    stored = json.loads((out / "state.json").read_text())["settings"]
    test_set = char.TestSet(
        {int(k): v for k, v in stored["test_set"]["launch_loss_db"].items()},
        {int(k): v for k, v in stored["test_set"]["meter_ports"].items()})
    return Settings(**{**stored, "ingress": tuple(stored["ingress"]),
                       "egress": tuple(stored["egress"]),
                       "wavelengths_nm": tuple(stored["wavelengths_nm"]), "test_set": test_set})
