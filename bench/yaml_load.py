"""Loading an inventory: msoctl's limited loader on libyaml's parser and on PyYAML's own,
beside PyYAML's plain safe loaders, on one generated inventory, side by side.

    .venv/bin/python bench/yaml_load.py [--devices N] [--rounds N] [--json]

The inventory has N devices (OCS with labels and a console, 1,000 by default) and
is loaded by every variant in each round (alternating the order); the medians are
printed with the throughput and the ratio to msoctl's loader. A last row times
how long an over-limit file (a sparse file just past MAX_FILE_BYTES) takes to be
refused. Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from drivers.yamlfile import MAX_FILE_BYTES, YamlFileError, load_file, load_text  # noqa: E402


def inventory_text(devices: int) -> str:
    rows = ["devices:"]
    for n in range(devices):
        rows += [f"  - name: ocs-{n}", "    kind: ocs", "    transport: visa",
                 f"    address: TCPIP::10.{n // 65536}.{n // 256 % 256}.{n % 256}::5025::SOCKET",
                 "    timeout_seconds: 5.0", f"    labels: {{campus: a, row: '{n % 40}'}}",
                 "    console: {transport: serial, address: /dev/ttyUSB0}"]
    return "\n".join(rows) + "\n"


def _variants() -> dict[str, Callable[[str], Any]]:
    found: dict[str, Callable[[str], Any]] = {
        "msoctl_libyaml": lambda text: load_text(text, "bench"),
        "msoctl_pure_python": lambda text: load_text(text, "bench", pure_python=True),
        "pyyaml_safe_load": lambda text: yaml.load(text, Loader=yaml.SafeLoader),
    }
    if getattr(yaml, "CSafeLoader", None) is not None:
        found["pyyaml_csafe_load"] = lambda text: yaml.load(text, Loader=yaml.CSafeLoader)
    return found


LABELS = {"msoctl_libyaml": "msoctl loader, libyaml parser",
          "msoctl_pure_python": "msoctl loader, PyYAML parser",
          "pyyaml_safe_load": "yaml.SafeLoader (no limits)",
          "pyyaml_csafe_load": "yaml.CSafeLoader (no limits)"}


def refusal_seconds(directory: Path) -> float:
    path = directory / "too-big.yaml"
    with path.open("wb") as file:
        file.truncate(MAX_FILE_BYTES + 1)
    start = time.perf_counter()
    try:
        load_file(path)
    except YamlFileError:
        return time.perf_counter() - start
    raise AssertionError("an over-limit file was loaded")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    text = inventory_text(options.devices)
    variants = _variants()
    expected = yaml.safe_load(text)
    samples: dict[str, list[float]] = {key: [] for key in variants}
    for round_index in range(options.rounds):
        order = list(variants) if round_index % 2 == 0 else list(reversed(variants))
        for key in order:
            start = time.perf_counter()
            loaded = variants[key](text)
            samples[key].append(time.perf_counter() - start)
            if loaded != expected:
                raise AssertionError(f"{key} read the inventory differently")
    with tempfile.TemporaryDirectory() as scratch:
        refused = refusal_seconds(Path(scratch))
    megabytes = len(text.encode()) / 1e6
    base = statistics.median(samples["msoctl_libyaml"])
    document = {
        "benchmark": "yaml_load", "devices": options.devices, "rounds": options.rounds,
        "bytes": len(text.encode()),
        "variants": {key: {"label": LABELS[key],
                           "median_seconds": statistics.median(times),
                           "megabytes_per_second": megabytes / statistics.median(times),
                           "over_msoctl_libyaml": statistics.median(times) / base,
                           "samples": times}
                     for key, times in samples.items()},
        "over_limit_refusal_seconds": refused,
        "max_file_bytes": MAX_FILE_BYTES,
    }
    if options.json:
        print(json.dumps(document, indent=2))
        return 0
    print(f"inventory of {options.devices} devices, {megabytes:.2f} MB, "
          f"{options.rounds} round(s), medians")
    print(f"{'variant':<32} {'seconds':>9} {'MB/s':>7} {'x msoctl':>9}")
    for row in document["variants"].values():
        print(f"{row['label']:<32} {row['median_seconds']:>9.3f} "
              f"{row['megabytes_per_second']:>7.2f} {row['over_msoctl_libyaml']:>9.2f}")
    print(f"refusing a file of {MAX_FILE_BYTES + 1:,} bytes: {refused * 1e3:.2f} ms "
          "(its size alone; nothing is parsed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
