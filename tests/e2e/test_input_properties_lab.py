"""Properties of what msoctl reads from outside, against the lab (hypothesis): random numbers
to ``msoctl amp set --dry-run`` leave the amplifier and the journal as they were
(tests/unit/test_input_properties.py has the loaders and the commands that need no lab)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given

from emulators.amp.registers import read_controls
from emulators.lab import Lab
from tests.support import in_process
from tests.support.properties import CLI, assert_clean, journal_lines, number_texts


@pytest.fixture(scope="module")
def shared_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with Lab(tmp_path_factory.mktemp("properties") / "lab", serial_consoles=False) as lab:
        yield lab


@CLI
@given(gain=number_texts, tilt=number_texts, slew=number_texts)
def test_amp_set_dry_run_numbers(shared_lab: Lab, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch, gain: str, tilt: str,
                                 slew: str) -> None:
    """Against the lab's amplifier: a dry run (or a refusal) writes nothing to the module
    (its CMIS controls read back the same) and nothing to the journal."""
    monkeypatch.setenv("MSOCTL_INVENTORY", str(shared_lab.state_dir / "inventory.yaml"))
    monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
    msoctl = in_process(capsys)
    module = shared_lab.amps["amp-1"]
    controls = read_controls(module.memory)
    journal = journal_lines(shared_lab.state_dir)
    result = msoctl("amp", "set", "amp-1", "--gain", gain, "--tilt", tilt, "--slew", slew,
                    "--dry-run")
    assert_clean(result)
    assert read_controls(module.memory) == controls
    assert journal_lines(shared_lab.state_dir) == journal
