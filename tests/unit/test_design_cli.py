"""``msoctl design cost`` on the command line: the table, ``-o json``, ``--csv``, ``--png``,
and every bad input as one ``error:`` line with exit 2.

Output conventions are the project's (docs/conventions.md): one JSON document on
stdout, snake_case keys with units in their names, null where a figure is not
available. Run in-process through ``msoctl.cli.run``, as an operator would type it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from msoctl.design.architectures import NAMES
from msoctl.design.report import CSV_FIELDS
from tests.support import Msoctl, in_process, one_error_line

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"  # PNG specification (ISO/IEC 15948), section 5.2
WORKED = ("--gpus", "1024,16384,100000", "--gpus-per-server", "8", "--nics-per-gpu", "1",
          "--nic-speed", "400G", "--radix", "64", "--switch-speed", "800G")


@pytest.fixture
def msoctl(capsys: pytest.CaptureFixture[str]) -> Msoctl:
    return in_process(capsys)


def test_the_table_has_one_section_per_scale_and_fits_a_terminal(msoctl: Msoctl) -> None:
    """Three scales, seven architectures: a heading and a table per scale, the ones that
    cannot build a scale listed with the reason, lines within 100 columns."""
    result = msoctl("design", "cost", *WORKED, "--what-if", "aec,lpo")
    assert result.code == 0, result
    lines = result.out.splitlines()
    headings = [line for line in lines if " GPUs, " in line]
    assert [h.split(" GPUs")[0] for h in headings] == ["1,024", "16,384", "100,000"]
    first = lines.index(headings[0])
    assert " ".join([headings[0], lines[first + 1].strip()]) == (
        "1,024 GPUs, 128 servers of 8, 1 x 400G NIC per GPU; switches 64 x 800G = 128 x 400G")
    assert lines[first + 1].startswith("  ")  # the heading wraps within 80 columns
    assert sum(line.startswith("ARCH ") for line in lines) == 3
    assert "not built: fat-tree-2: radix 128 at 400G connects at most 8,192 NIC ports in 2 " \
           "tiers; 16,384 asked" in " ".join(result.out.split())
    assert max(len(line) for line in lines) <= 80
    baseline = next(line for line in lines if line.startswith("fat-tree-3 ") and " -  " in line)
    assert baseline.split()[7:9] == ["1.00", "1.00"]  # cost, power (tiers: -o wide)
    assert any(line.startswith("ocs-spine       aec+lpo") for line in lines)


def test_json_is_one_document_with_units_in_the_names(msoctl: Msoctl) -> None:
    """-o json: inputs, then one result per scale x architecture x what-if variant
    (as is, aec, lpo, aec+lpo); snake_case keys; null figures where not built."""
    result = msoctl("design", "cost", *WORKED, "--what-if", "aec,lpo", "-o", "json")
    assert result.code == 0, result
    document = json.loads(result.out)
    assert document["inputs"]["gpus"] == [1024, 16384, 100000]
    assert document["inputs"]["link_radix"] == 128
    assert document["inputs"]["architectures"][0] == "fat-tree-3"
    assert len(document["results"]) == 3 * len(NAMES) * 4
    built = next(r for r in document["results"] if r["buildable"])
    for key in ("cost_usd_per_gpu", "power_watts_per_gpu", "cost_usd_per_endpoint_port",
                "latency_ns_max", "cost_vs_baseline", "tier_detail", "link_detail"):
        assert key in built
    assert all(key == key.lower() and " " not in key for key in built)
    assert {"role", "reach_class", "length_m", "medium", "units", "cost_usd"} <= \
        set(built["link_detail"][0])
    missing = next(r for r in document["results"] if not r["buildable"])
    assert missing["cost_usd_per_gpu"] is None and missing["reason"]
    assert document["files"] == {}


def test_csv_and_png_are_written(msoctl: Msoctl, tmp_path: Path) -> None:
    """--csv: a header of CSV_FIELDS and one line per result; --png: a PNG file (its
    8-byte signature) with the two panels, both named in the JSON document."""
    table, figure = tmp_path / "cost.csv", tmp_path / "cost.png"
    result = msoctl("design", "cost", *WORKED, "--csv", str(table), "--png", str(figure),
                    "-o", "json")
    assert result.code == 0, result
    with open(table, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == CSV_FIELDS
    assert len(rows) == 3 * len(NAMES)
    assert {r["architecture"] for r in rows} == set(NAMES)
    assert figure.read_bytes()[:8] == PNG_SIGNATURE
    assert figure.stat().st_size > 10_000
    assert json.loads(result.out)["files"] == {"csv": str(table), "png": str(figure)}
    assert not list(tmp_path.glob(".*.tmp"))
    same = msoctl("design", "cost", *WORKED, "--csv", str(table), "--png",
                  f"{tmp_path}/./cost.csv")  # one would replace the other: refused
    assert same.code == 2 and "name the same file" in same.err and same.err.count("\n") == 1


def test_a_million_gpus(msoctl: Msoctl) -> None:
    """1,000,000 GPUs need k^3/4 >= 1e6, k >= 159: 102.4T switches split to 256 x 400G
    build three tiers (up to 4,194,304 ports); 64 x 800G (128 x 400G) do not."""
    result = msoctl("design", "cost", "--gpus", "1M", "--radix", "128",
                    "--switch-speed", "800G", "--arch", "fat-tree-3", "-o", "json")
    assert result.code == 0, result
    only = json.loads(result.out)["results"][0]
    assert (only["gpus"], only["tiers"], only["buildable"]) == (1_000_000, 3, True)
    too_small = msoctl("design", "cost", "--gpus", "1000000", "--radix", "64",
                       "--switch-speed", "800G", "--arch", "fat-tree-3", "-o", "json")
    assert too_small.code == 0, too_small
    document = json.loads(too_small.out)
    assert [r["buildable"] for r in document["results"]] == [False]
    assert document["notes"] == ["1,000,000 GPUs: no cost or power ratios: the baseline "
                                 "fat-tree-3 cannot build this scale (choose another "
                                 "--baseline to compare against)"]


def test_the_program_s_scales_on_today_s_switch(msoctl: Msoctl, tmp_path: Path) -> None:
    """The default switch is 64 x 800G (51.2T). From 1,024 to 1,000,000 GPUs every
    architecture that can build a scale is costed there; at a scale the baseline cannot
    build (fat-tree-3 tops out at 524,288 NIC ports) the others keep their figures, the
    ratio columns are empty, and a note under the table says why; the plot is drawn."""
    picture = tmp_path / "scales.png"
    result = msoctl("design", "cost", "--gpus", "1024,16384,131072,1000000", "--png",
                    str(picture), "-o", "json")
    assert result.code == 0, result
    document = json.loads(result.out)
    assert document["inputs"]["switch_speed_gbps"] == 800
    million = [r for r in document["results"] if r["gpus"] == 1_000_000]
    built = [r for r in million if r["buildable"]]
    assert [r["architecture"] for r in built] == ["rail-only"]
    assert built[0]["cost_usd_per_gpu"] > 0 and built[0]["cost_vs_baseline"] is None
    assert all(r["cost_vs_baseline"] is not None for r in document["results"]
               if r["gpus"] < 1_000_000 and r["buildable"])
    assert len(document["notes"]) == 1 and document["notes"][0].startswith("1,000,000 GPUs")
    assert picture.read_bytes().startswith(PNG_SIGNATURE)
    text = msoctl("design", "cost", "--gpus", "1024,1000000")
    assert text.code == 0 and "1,000,000 GPUs: no cost or power ratios" in text.out
    assert [line.split()[0] for line in text.out.splitlines() if "39,696" in line] == [
        "rail-only"]


BAD = [
    (["--gpus", "100"], "is not in 1,024..1,000,000"),
    (["--gpus", "2000000"], "is not in 1,024..1,000,000"),
    (["--gpus", "1e999"], "is not a whole number"),
    (["--gpus", "1024,x"], "'x' is not a whole number"),
    (["--gpus", ","], "give at least one number"),
    (["--radix", "63"], "radix 63 cannot build a fat-tree"),
    (["--radix", "0"], "--radix"),
    (["--nic-speed", "800G", "--switch-speed", "400G"],
     "a 800G NIC port does not fit a 400G switch port"),
    (["--nic-speed", "300G"], "speed '300G'"),
    (["--oversubscription", "nan"], "--oversubscription"),
    (["--oversubscription", "inf"], "--oversubscription"),
    (["--planes", "3"], "give a divisor"),
    (["--arch", "torus"], "'torus': one of"),
    (["--arch", ""], "name at least one architecture"),
    (["--what-if", "cpo"], "'cpo': one of aec, lpo"),
    (["--radix", "48", "--switch-speed", "400G"], "no price for a 48-port 400G switch"),
    (["--profile", "deepseek-v3", "--switch-speed", "400G", "--arch", "multi-plane",
      "--what-if", "lpo"],
     "what-if lpo: the component table "
     "(deepseek-v3) has no LPO at 400G"),
    (["--profile", "deepseek-v3", "--arch", "ocs-spine"], "no layout for ocs-spine"),
    (["--profile", "nosuch"], "--profile"),
    (["--components", "missing.yaml"], "missing.yaml: no such file"),
    (["--csv", "no/such/dir/x.csv"], "no directory"),
]


@pytest.mark.parametrize(("args", "words"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_error_line(msoctl: Msoctl, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch, args: list[str],
                                     words: str) -> None:
    """Each refused before any output: exit 2 and one line naming the problem."""
    monkeypatch.chdir(tmp_path)
    base = ["--gpus", "16384"] if "--gpus" not in args else []
    message = one_error_line(msoctl("design", "cost", *base, *args))
    assert words in message, message


QUOTE_ERRORS = [
    ("media:\n  dsp-400g-dr4: {usd: -5}\n", ":2: media 'dsp-400g-dr4': field 'usd': must "
                                            "not be negative"),
    ("media:\n  new-400g: {kind: dsp, speed_gbps: 400, reach_m: 100}\n",
     ":2: media 'new-400g': field 'usd' is required"),
    ("switches:\n  sw-64x400g: {price: 1}\n", ":2: switches 'sw-64x400g': field 'price': "
                                             "unknown field"),
    ("media:\n  dac-400g: {usd: .nan}\n", "must be a finite number"),
    ("media:\n  dac-400g: {kind: copper}\n", "must be one of dac, aec, aoc, dsp, lpo"),
    ("layout:\n  torus: {endpoint: rack}\n", ":2: layout: field 'torus': no such architecture"),
    ("layout:\n  fat-tree-3: {endpoint: orbit}\n", "reach class 'orbit' is not one of"),
    ("ocs: {ports: 0}\n", ":1: ocs: field 'ports': must be more than 0"),
    ("switches: [1, 2]\n", "must be a mapping of named entries"),
    ("reach_classes:\n  rack: {length_m: 3}\n  rack: {length_m: 4}\n", "duplicate key 'rack'"),
]


@pytest.mark.parametrize(("text", "words"), QUOTE_ERRORS, ids=[w for _, w in QUOTE_ERRORS])
def test_a_bad_file_of_quotes_is_one_line_with_its_line_number(
        msoctl: Msoctl, tmp_path: Path, text: str, words: str) -> None:
    quotes = tmp_path / "quotes.yaml"
    quotes.write_text(text)
    message = one_error_line(msoctl("design", "cost", "--gpus", "16384",
                                    "--components", str(quotes)))
    assert words in message, message
    if words.startswith(":"):
        assert message.startswith(f"error: {quotes}{words.split(':')[0]}:")


def test_the_figure_draws_each_line_once_and_only_what_a_what_if_changes() -> None:
    """Architectures whose figures coincide at every scale are one line named for all
    of them; a what-if is drawn only where it changes the figures, and the label says
    which changed nothing (the figure drew 28 legend entries, lines hidden under others,
    what-ifs identical to their base)."""
    from msoctl.design.components import load_table
    from msoctl.design.inputs import FabricInputs
    from msoctl.design.plot import drawn
    from msoctl.design.study import Study, run

    shape = FabricInputs(gpus=1024, gpus_per_server=8, nics_per_gpu=1, nic_speed_gbps=400,
                         radix=64, switch_speed_gbps=400, oversubscription=1.0, planes=8)
    architectures = ("fat-tree-3", "fat-tree-2", "rail-optimized", "multi-plane",
                     "rail-only", "bigswitch", "ocs-spine")
    study = Study((1024, 4096, 16384), shape, architectures, "fat-tree-3", ("aec", "lpo"),
                  load_table("default", None))
    rows = run(study)
    lines = drawn(study, rows)
    labels = [label for label, _ in lines]
    named = [name for label in labels for name in label.split(" (")[0].split(" = ")]
    assert sorted(named) == sorted(architectures)  # each once, whether alone or grouped
    for label, drawn_lines in lines:
        series = [points for _, points in drawn_lines]
        assert all(a != b for i, a in enumerate(series) for b in series[i + 1:]), label
        what_ifs = {" ".join(w) for w, _ in drawn_lines if w}
        if "no change" in label:
            said = label.split(" (")[1].split(":")[0].split(", ")
            assert not set(said) & {w.replace(" ", "+") for w in what_ifs}, label
    assert any("no change" in label for label in labels)  # the study has such what-ifs
