"""``msoctl amp`` against amplifiers that lack the project's extensions (issue 32): a plain
CMIS module (``plain: true`` in the topology: no vendor page B0h, another maker's identity,
no monitor advertised) and a module with the vendor page but no monitor advertised.

docs/dialects/cmis.md, "When a feature is absent": the standard part is shown, the
amplifier page is reported as not advertised and never read (the emulated I2C slave counts
the selects and the upper-page reads, page by page), and a change that needs it is refused
in one line before anything is written, journaled.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulators.lab import JOURNAL_FILE, Lab
from emulators.lab.topology import parse_topology
from msoctl.journal import Journal
from tests.support import Msoctl, Result
from tests.support.exporter import fetch, samples, serve_exporter, value

B0 = 0xB0
TOPOLOGY = """
name: plain-amplifiers
ocs:
  - {name: ocs-a, size: 4, campus: a}
amplifiers:
  - {name: amp-plain, campus: b, plain: true}
  - {name: amp-quiet, campus: b, monitors: false}
"""


@pytest.fixture(scope="module")
def plain_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    topology = parse_topology(yaml.safe_load(TOPOLOGY), "test_cli_amp_plain")
    with Lab(tmp_path_factory.mktemp("plain") / "lab", topology,
             serial_consoles=False) as running:
        yield running


@pytest.fixture
def lab(plain_lab: Lab) -> Lab:
    return plain_lab


def _records(lab: Lab, device: str) -> list[dict[str, Any]]:
    path: Path = lab.state_dir / JOURNAL_FILE
    return [r for r in Journal(path).records() if r["device"] == device]


def _one_error_line(result: Result) -> str:
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.err
    return lines[0]


def _b0_touched(lab: Lab, name: str) -> int:
    stats = lab.i2c[name].stats
    return stats.selects.get(B0, 0) + stats.page_reads.get(B0, 0)


def test_status_shows_the_standard_part_and_says_the_amplifier_page_is_absent(
        msoctl: Msoctl, lab: Lab) -> None:
    text = msoctl("amp", "status", "amp-plain")
    assert text.code == 0, text.err
    shown = {label: value for label, _, value in
             (re.sub(r":\s+", ": ", line).partition(": ") for line in text.out.splitlines())}
    assert shown["amplifier page"] == "not advertised by this module"
    assert shown["temperature"] == shown["Vcc"] == "not advertised by this module"
    assert shown["module state"] == "ModuleReady"
    assert shown["supported"] == "tx_disable"
    assert shown["media"] == "connector LC, technology others"
    assert "NorthLight NL-EDFA-QDD-C17" in text.out
    assert "target gain" not in shown and "ALS" not in shown
    result = msoctl("amp", "status", "amp-plain", "-o", "json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert document["supported"] == ["tx_disable"]
    assert document["module_state"] == "ModuleReady"
    assert document["data_path_state"] == "DPActivated"
    assert document["connector"] == "LC" and document["vendor"] == "NorthLight"
    for key in ("temperature_celsius", "vcc_volts", "lane1_rx_power_dbm", "input_power_dbm",
                "output_power_dbm", "gain_db", "target_gain_db", "mode", "als_mode",
                "als_state", "gain_max_db", "output_enabled"):
        assert document[key] is None, key
    assert document["pump_currents_ma"] == [] and document["conditions"] == []
    assert _b0_touched(lab, "amp-plain") == 0
    assert lab.i2c["amp-plain"].stats.page_reads.get(0x02, 0) == 0  # no thresholds


def test_a_gain_change_is_refused_in_one_line_before_anything_is_written(
        msoctl: Msoctl, lab: Lab) -> None:
    stats = lab.i2c["amp-plain"].stats
    written, selects = stats.bytes_written, sum(stats.selects.values())
    journaled = len(_records(lab, "amp-plain"))
    result = msoctl("amp", "set", "amp-plain", "--gain", "15")
    assert result.code == 2
    line = _one_error_line(result)
    assert "setting the gain needs the amplifier page (B0h)" in line
    assert "NorthLight NL-EDFA-QDD-C17" in line
    assert stats.bytes_written - written == 2 * (sum(stats.selects.values()) - selects)
    assert _b0_touched(lab, "amp-plain") == 0
    (refusal,) = _records(lab, "amp-plain")[journaled:]
    assert (refusal["event"], refusal["action"], refusal["exit_code"]) == \
        ("refused", "amp.set", 2)
    assert "amplifier page (B0h)" in refusal["reason"]


@pytest.mark.parametrize("args, what, action", [
    (["als", "amp-plain", "--mode", "manual"], "setting the ALS mode", "amp.als"),
    (["als", "amp-plain", "--pulse", "1.5"], "setting the ALS timings", "amp.als"),
    (["restart", "amp-plain"], "an ALS restart", "amp.restart"),
    (["set", "amp-plain", "--mode", "power"], "setting the mode", "amp.set"),
], ids=["als-mode", "als-timings", "restart", "mode"])
def test_every_command_that_needs_the_amplifier_page_is_refused(
        msoctl: Msoctl, lab: Lab, args: list[str], what: str, action: str) -> None:
    stats = lab.i2c["amp-plain"].stats
    written, selects = stats.bytes_written, sum(stats.selects.values())
    journaled = len(_records(lab, "amp-plain"))
    result = msoctl("amp", *args)
    assert result.code == 2
    assert f"{what} needs the amplifier page (B0h)" in _one_error_line(result)
    assert stats.bytes_written - written == 2 * (sum(stats.selects.values()) - selects)
    assert _b0_touched(lab, "amp-plain") == 0
    (refusal,) = _records(lab, "amp-plain")[journaled:]
    assert (refusal["event"], refusal["action"]) == ("refused", action)


def test_the_absent_page_cannot_be_dumped_and_flags_are_the_cmis_ones(
        msoctl: Msoctl, lab: Lab) -> None:
    dump = msoctl("amp", "dump", "amp-plain", "--page", "B0h")
    assert dump.code == 2
    assert "custom page that this module does not carry" in _one_error_line(dump)
    flags = json.loads(msoctl("amp", "flags", "amp-plain", "-o", "json").out)
    assert "module_state_changed" in flags["flags"] and "input_los" not in flags["flags"]
    thresholds = json.loads(msoctl("amp", "thresholds", "amp-plain", "-o", "json").out)
    assert thresholds["thresholds"] == []
    assert "advertises no monitor" in msoctl("amp", "thresholds", "amp-plain").out
    assert _b0_touched(lab, "amp-plain") == 0


def test_a_module_with_the_amplifier_page_but_no_monitors(msoctl: Msoctl, lab: Lab) -> None:
    result = msoctl("amp", "status", "amp-quiet", "-o", "json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert document["supported"] == ["tx_disable", "amplifier_page"]
    assert document["temperature_celsius"] is None and document["vcc_volts"] is None
    assert document["lane1_rx_power_dbm"] is None
    assert document["vendor"] == "MegaScaleOut" and document["als_mode"] == "auto"
    assert document["target_gain_db"] == pytest.approx(20.0)
    assert lab.i2c["amp-quiet"].stats.page_reads.get(B0, 0) > 0
    assert lab.i2c["amp-quiet"].stats.page_reads.get(0x02, 0) == 0


def test_the_exporter_exports_the_standard_part_only(lab: Lab) -> None:
    """msoctl/exporter/amp.py: identity (amplifier_page="false") and module state; no
    amplifier series, no condition (0 would say "not holding"), no monitor the module
    does not advertise; B0h never read."""
    with serve_exporter(lab.state_dir / "inventory.yaml") as server:
        body = fetch(f"{server.url}/probe?target=amp-plain", scrape_timeout=5.0).body
    assert value(body, "msoctl_up", device="amp-plain") == 1.0, body[-400:]
    assert value(body, "msoctl_amp_info", amplifier_page="false",
                 vendor="NorthLight") == 1.0
    assert value(body, "msoctl_amp_module_state", state="ModuleReady") == 1.0
    found = set(samples(body))
    for absent in ("msoctl_amp_input_power_dbm", "msoctl_amp_gain_db", "msoctl_amp_condition",
                   "msoctl_amp_als_state", "msoctl_amp_module_temperature_celsius",
                   "msoctl_amp_module_supply_voltage_volts"):
        assert absent not in found, absent
    assert _b0_touched(lab, "amp-plain") == 0
