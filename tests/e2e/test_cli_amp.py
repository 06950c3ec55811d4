"""``msoctl amp`` end to end: the CLI over the I2C bridge to the emulated amplifiers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from drivers.cmis.codes import MODULE_STATE_CODES
from emulators.amp.als import NORMAL
from emulators.faults import Fault
from emulators.lab import Lab
from emulators.optics.model import NO_LIGHT_DBM
from msoctl.journal import Journal
from tests.support import Msoctl, Result, restart_amplifier, wait_until

STATUS_KEYS = {"device", "module_state", "vendor", "part_number", "serial",
               "temperature_celsius", "input_power_dbm", "output_power_dbm", "gain_db",
               "target_gain_db", "mode", "als_mode", "als_state"}


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


def _journal(lab: Lab) -> list[dict[str, Any]]:
    return list(Journal(lab.state_dir / "journal.sqlite").records())


def _writes(lab: Lab, name: str) -> tuple[int, int]:
    """(bytes written, page selects written) to amplifier ``name`` so far."""
    stats = lab.i2c[name].stats
    return stats.bytes_written, sum(stats.selects.values())


def _one_error_line(result: Result) -> str:
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.err
    return lines[0]


def _light_span_1(lab: Lab) -> None:
    """Light sw-a tx1 onto span-1 and give amp-1 an automatic restart soon."""
    lab.ocs["ocs-a"].add((1,), (121,))


def test_status_json_contract(msoctl: Msoctl, lab: Lab) -> None:
    result = msoctl("amp", "status", "amp-1", "-o", "json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert set(document) >= STATUS_KEYS
    assert document["device"] == "amp-1"
    assert document["module_state"] == "ModuleReady"
    assert document["vendor"] == "MegaScaleOut"
    assert document["serial"] == lab.amps["amp-1"].serial
    assert document["mode"] in ("gain", "power")
    assert document["als_mode"] == "auto"


def test_status_reads_no_latched_flag(msoctl: Msoctl, lab: Lab) -> None:
    for _ in range(3):
        assert msoctl("amp", "status", "amp-1").code == 0
    flags = json.loads(msoctl("amp", "flags", "amp-1", "-o", "json").out)
    # the dark input at lab start latched input LOS; the status polls did not consume it
    assert flags["cleared"] is True and "input_los" in flags["set"], flags
    again = json.loads(msoctl("amp", "flags", "amp-1", "-o", "json").out)
    assert "module_state_changed" not in again["set"]


def test_gain_is_ramped_and_read_back(msoctl: Msoctl, lab: Lab) -> None:
    start = json.loads(msoctl("amp", "status", "amp-1", "-o", "json").out)["target_gain_db"]
    target = start - 2.0
    result = msoctl("amp", "set", "amp-1", "--gain", str(target), "--slew", "200")
    assert result.code == 0, result.err
    assert "ramped" in result.out and "in 4 steps" in result.out
    document = json.loads(msoctl("amp", "status", "amp-1", "-o", "json").out)
    assert document["target_gain_db"] == pytest.approx(target)
    (intent, outcome) = [r for r in _journal(lab) if r["action"] == "amp.set"]
    assert intent["event"] == "intent" and intent["gain_db"] == target
    assert outcome["status"] == "ok" and outcome["gain_steps_db"][-1] == target


@pytest.mark.parametrize("args, message", [
    (["--gain", "40"], "outside the module's range 5.0..25.0 dB"),
    (["--gain", "1"], "outside the module's range"),
    (["--output-power", "30"], "outside the module's range"),
    (["--gain", "nan"], "'nan' is not a finite number"),  # refused as the option is read
    # below any range the module advertises, but too low for the 0.01 dBm register
    (["--output-power", "-400"], "output power -400 dBm cannot be written"),
    (["--output-power", "-1e308"], "output power -1e+308 dBm cannot be written"),
])
def test_out_of_range_targets_are_refused_before_sending(
    msoctl: Msoctl, lab: Lab, args: list[str], message: str
) -> None:
    before = json.loads(msoctl("amp", "status", "amp-1", "-o", "json").out)
    written, selects = _writes(lab, "amp-1")
    result = msoctl("amp", "set", "amp-1", *args)
    assert result.code == 2
    assert message in _one_error_line(result)
    # Only page selects (bank and page, two bytes each) went to the module, no setting.
    assert _writes(lab, "amp-1")[0] - written == 2 * (_writes(lab, "amp-1")[1] - selects)
    after = json.loads(msoctl("amp", "status", "amp-1", "-o", "json").out)
    assert [after[k] for k in ("target_gain_db", "target_output_power_dbm")] == \
        [before[k] for k in ("target_gain_db", "target_output_power_dbm")]
    if "nan" in args:  # a usage error: nothing reached the device or the journal
        assert _journal(lab) == []
        return
    (refusal,) = _journal(lab)
    assert refusal["event"] == "refused" and refusal["exit_code"] == 2


@pytest.mark.parametrize("args", [["--gain", "99"], ["--gain", "-5"],
                                  ["--output-power", "1e308"], ["--tilt", "30"]])
def test_a_dry_run_refuses_what_the_change_would(msoctl: Msoctl, lab: Lab,
                                                 args: list[str]) -> None:
    """A dry run said "nothing was written", exit 0, for a gain the module cannot take."""
    result = msoctl("amp", "set", "amp-1", *args, "--dry-run")
    assert result.code == 2 and "outside the module's range" in _one_error_line(result)
    assert "dry run" not in result.out
    assert _journal(lab) == []  # a dry run writes nothing, its refusal included


def test_disabling_als_needs_the_override(msoctl: Msoctl, lab: Lab) -> None:
    result = msoctl("amp", "als", "amp-1", "--mode", "disabled")
    assert result.code == 3
    assert "--override-laser-safety" in _one_error_line(result)
    status = json.loads(msoctl("amp", "status", "amp-1", "-o", "json").out)
    assert status["als_mode"] == "auto"
    forced = msoctl("amp", "als", "amp-1", "--mode", "disabled", "--override-laser-safety")
    assert forced.code == 0, forced.err
    assert "safety override" in forced.out
    status = json.loads(msoctl("amp", "status", "amp-1", "-o", "json").out)
    assert status["als_mode"] == "disabled"
    events = [r["event"] for r in _journal(lab)]
    assert events == ["refused", "intent", "override", "result"]


def test_als_timings_and_manual_restart(msoctl: Msoctl, lab: Lab) -> None:
    wait_until(lambda: lab.amps["amp-1"].als_state == 2, "ALS shuts amp-1 (its span is dark)")
    result = msoctl("amp", "als", "amp-1", "--mode", "manual", "--los-soak", "0.2",
                    "--restart-interval", "30", "--pulse", "1.5")
    assert result.code == 0, result.err
    status = json.loads(msoctl("amp", "status", "amp-1", "-o", "json").out)
    assert (status["als_mode"], status["als_los_soak_seconds"],
            status["als_restart_interval_seconds"], status["als_restart_pulse_seconds"]) == \
        ("manual", 0.2, 30, 1.5)
    assert status["als_state"] == "shutdown"  # no light has reached it yet
    _light_span_1(lab)
    restart = msoctl("amp", "restart", "amp-1")
    assert restart.code == 0, restart.err
    assert "restart pulse requested" in restart.out


@pytest.mark.parametrize("args", [["--los-soak", "0"], ["--los-soak", "nan"],
                                  ["--restart-interval", "0.5"], ["--pulse", "61"]])
def test_bad_als_timings_are_refused_before_the_change(
    msoctl: Msoctl, lab: Lab, args: list[str]
) -> None:
    result = msoctl("amp", "als", "amp-1", *args)
    assert result.code == 2
    if "nan" in args:  # refused as the option is read, before the device or the journal
        assert "'nan' is not a finite number" in _one_error_line(result)
        assert _journal(lab) == []
        return
    assert " must be " in _one_error_line(result)
    (refusal,) = _journal(lab)
    assert refusal["event"] == "refused" and refusal["exit_code"] == 2


def test_power_mode_waits_for_the_advertised_state(msoctl: Msoctl, lab: Lab) -> None:
    low = msoctl("amp", "power-mode", "amp-2", "low")
    assert low.code == 0, low.err
    assert "ModuleLowPwr" in low.out
    assert json.loads(msoctl("amp", "status", "amp-2", "-o", "json").out)["module_state"] == \
        "ModuleLowPwr"
    high = msoctl("amp", "power-mode", "amp-2", "high")
    assert high.code == 0 and "ModuleReady" in high.out


def test_dump_json_and_hex(msoctl: Msoctl, lab: Lab) -> None:
    lower = json.loads(msoctl("amp", "dump", "amp-1", "--page", "lower", "-o", "json").out)
    assert lower["page"] == "lower" and len(lower["bytes"]) == 128
    assert lower["bytes"][0] == 0x18 and lower["bytes"][8:12] == [None] * 4
    page = json.loads(msoctl("amp", "dump", "amp-1", "--page", "0x00", "-o", "json").out)
    assert page["page"] == 0 and len(page["bytes"]) == 128
    assert bytes(page["bytes"][1:13]).decode() == "MegaScaleOut"
    text = msoctl("amp", "dump", "amp-1", "--page", "B0h").out
    assert "Offset\t\tValues" in text and "0x0080:\t\t" in text
    bad = msoctl("amp", "dump", "amp-1", "--page", "zz")
    assert bad.code == 2 and "page 'zz'" in _one_error_line(bad)


def test_thresholds(msoctl: Msoctl) -> None:
    document = json.loads(msoctl("amp", "thresholds", "amp-1", "-o", "json").out)
    temperature = next(t for t in document["thresholds"] if t["monitor"] == "temperature")
    assert temperature["high_alarm"] > temperature["high_warning"] > temperature["value"]
    assert temperature["state"] == "ok"
    units = {t["monitor"]: t["unit"] for t in document["thresholds"]}
    assert units == {"temperature": "°C", "vcc": "V", "rx_power": "mW"}  # every figure's
    text = msoctl("amp", "thresholds", "amp-1").out.splitlines()
    assert text[0].split()[:3] == ["MONITOR", "UNIT", "VALUE"]
    assert next(line for line in text if line.startswith("rx_power")).split()[1] == "mW"


def test_unreachable_amplifier_is_one_line(msoctl: Msoctl, lab: Lab) -> None:
    inventory = lab.state_dir / "inventory.yaml"
    text = inventory.read_text()
    port = text.split("socket://127.0.0.1:")[1].split("\n")[0]
    inventory.write_text(text.replace(f"socket://127.0.0.1:{port}", "socket://127.0.0.1:1"))
    result = msoctl("amp", "status", "amp-1")
    assert result.code == 1
    assert "amp-1" in _one_error_line(result)


def test_nack_is_reported_as_refused(msoctl: Msoctl, lab: Lab) -> None:
    lab.inject("amp-1", Fault("nack"))
    result = msoctl("amp", "status", "amp-1")
    lab.clear("amp-1", "nack")
    assert result.code == 1
    assert "NACK" in _one_error_line(result)


@pytest.mark.parametrize("args, message", [
    (["--los-soak", "5"], "soak of 5 s keeps the output lit"),
    (["--pulse", "20"], "restart pulses of 20 s every 100 s"),
    (["--restart-interval", "10", "--pulse", "2"], "more than 10% of the time"),
])
def test_als_timings_that_defeat_als_need_the_override(
    msoctl: Msoctl, lab: Lab, args: list[str], message: str
) -> None:
    before = json.loads(msoctl("amp", "status", "amp-1", "-o", "json").out)
    result = msoctl("amp", "als", "amp-1", *args)
    assert result.code == 3
    line = _one_error_line(result)
    assert message in line and "--override-laser-safety" in line
    after = json.loads(msoctl("amp", "status", "amp-1", "-o", "json").out)
    keys = ("als_los_soak_seconds", "als_restart_interval_seconds", "als_restart_pulse_seconds")
    assert [after[k] for k in keys] == [before[k] for k in keys]
    forced = msoctl("amp", "als", "amp-1", *args, "--override-laser-safety")
    assert forced.code == 0, forced.err
    assert [r["event"] for r in _journal(lab)] == ["refused", "intent", "override", "result"]


def test_tx_off_darkens_the_span_and_on_lights_it_journaled(msoctl: Msoctl, lab: Lab) -> None:
    """CMIS 5.2 page 10h byte 130 (Tx output disable), advertised on page 01h byte 155 bit
    1: ``amp tx off`` leaves no light on the span at once, the data path stays DPActivated;
    ``amp tx on`` lights it again. Each change is journaled: the intent before it is sent,
    the state read back after."""
    amp = lab.amps["amp-1"]
    _light_span_1(lab)
    restart_amplifier(lab, "amp-1")
    wait_until(lambda: amp.als_state == NORMAL and amp.output_dbm > 0.0, "amp-1 lit")
    off = msoctl("amp", "tx", "amp-1", "off")
    assert off.code == 0, off.err
    assert amp.output_dbm == NO_LIGHT_DBM
    assert "Tx disabled, data path DPActivated" in off.out and "(read back)" in off.out
    status = json.loads(msoctl("amp", "status", "amp-1", "-o", "json").out)
    assert (status["tx_disabled"], status["data_path_state"]) == (True, "DPActivated")
    assert status["als_state"] == "output-disabled"
    assert "Tx" in msoctl("amp", "status", "amp-1").out
    on = msoctl("amp", "tx", "amp-1", "on")
    assert on.code == 0, on.err
    wait_until(lambda: amp.output_dbm > 0.0, "amp-1 lit again")
    records = [r for r in _journal(lab) if r["action"] == "amp.tx"]
    assert [r["event"] for r in records] == ["intent", "result", "intent", "result"]
    intent_off, result_off, intent_on, result_on = records
    assert (intent_off["tx"], intent_on["tx"]) == ("off", "on")
    assert intent_off["before"] == {"tx_disabled": False, "data_path_state": "DPActivated"}
    assert result_off["status"] == "ok" and result_off["tx_disabled"] is True
    assert result_on["status"] == "ok" and result_on["tx_disabled"] is False


def test_tx_on_with_als_disabled_needs_the_override(msoctl: Msoctl, lab: Lab) -> None:
    """Laser safety (ITU-T G.664 ALS): lighting the output while ALS would not shut it on a
    cut fiber is refused (exit 3, journaled) unless overridden; turning it off never is."""
    assert msoctl("amp", "tx", "amp-1", "off").code == 0
    forced = msoctl("amp", "als", "amp-1", "--mode", "disabled", "--override-laser-safety")
    assert forced.code == 0, forced.err
    refused = msoctl("amp", "tx", "amp-1", "on")
    assert refused.code == 3
    line = _one_error_line(refused)
    assert "ALS" in line and "--override-laser-safety" in line
    status = json.loads(msoctl("amp", "status", "amp-1", "-o", "json").out)
    assert status["tx_disabled"] is True
    allowed = msoctl("amp", "tx", "amp-1", "on", "--override-laser-safety")
    assert allowed.code == 0, allowed.err
    assert "safety override" in allowed.out
    assert json.loads(msoctl("amp", "status", "amp-1", "-o", "json").out)["tx_disabled"] is False
    tx = [r for r in _journal(lab) if r["action"] == "amp.tx"]
    assert [r["event"] for r in tx] == ["intent", "result", "refused", "intent", "override",
                                        "result"]
    assert tx[2]["exit_code"] == 3 and tx[2]["rule"].startswith("amp-output-on")


def test_a_software_reset_brings_a_module_out_of_fault(lab: Lab, msoctl: Msoctl) -> None:
    """A module in ModuleFault leaves it only by a reset (CMIS 5.2, the module state
    machine), even once the fault's cause is gone: ``amp reset`` does it, journaled; while
    the cause is there it says the module is still faulted (exit 1)."""
    module = lab.amps["amp-1"]
    lab.inject("amp-1", Fault("pump"))
    wait_until(lambda: _state(msoctl) == "ModuleFault", "amp-1 in ModuleFault")
    still = msoctl("amp", "reset", "amp-1")
    assert still.code == 1 and "still ModuleFault after a software reset" in still.err
    lab.clear("amp-1", "pump")
    assert _state(msoctl) == "ModuleFault"  # a cleared cause alone is not enough
    dry = msoctl("amp", "reset", "amp-1", "--dry-run")
    assert dry.code == 0 and "dry run: nothing was written" in dry.out
    done = msoctl("amp", "reset", "amp-1")
    assert done.code == 0, done.err
    assert "after a software reset (was ModuleFault)" in done.out
    assert _state(msoctl) in ("ModuleReady", "ModuleLowPwr")
    assert module.module_state in (MODULE_STATE_CODES["ModuleReady"],
                                   MODULE_STATE_CODES["ModuleLowPwr"])
    records = [r for r in Journal(lab.state_dir / "journal.sqlite").records()
               if r.get("action") == "amp.reset"]
    assert [r["event"] for r in records] == ["intent", "result"] * 2
    assert records[-1]["status"] == "ok" and records[-1]["module_state_before"] == "ModuleFault"


def _state(msoctl: Msoctl) -> str:
    return str(json.loads(msoctl("amp", "status", "amp-1", "-o", "json").out)["module_state"])
