"""Prometheus file_sd targets from the inventory (``msoctl inventory sd``).

One target group per device the exporter has a collector for: the target is the device's name (what
``/probe?target=`` takes; deploy/prometheus.yml turns it into the probe
parameter and the ``instance`` label), its labels the inventory's labels plus
``kind``. A switch with an ``snmp:`` section gets a second group for its
CPO/CPC telemetry: ``kind: cpo`` and ``__param_module: cpo``, which
Prometheus sends as the ``module`` parameter of the probe.

Sharding (``msoctl inventory sd --shards N --out DIR``): the groups are split into
``DIR/msoctl-targets-K.json``, K = 0..N-1, by the same hash as Prometheus's
``hashmod`` relabel action on the target (the device name, before it is rewritten
to the exporter's address): :func:`shard_of`. A shard's Prometheus keeps
``__tmp_hash == K`` (deploy/prometheus-sharded.yml), so it keeps exactly the
targets of its file, and a full file given to every shard splits the same way.
Both groups of a switch (its own and its CPO/CPC telemetry) share a target and so
a shard.

Label names are made valid Prometheus label names (other characters become
``_``); an inventory label named ``kind``, ``job`` or ``instance``, or one that
begins with ``__`` (reserved), is exported as ``inventory_<name>``.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from msoctl.inventory import Inventory
from msoctl.outfile import write_output

RESERVED = frozenset({"kind", "job", "instance"})
EXPORTED_KINDS = ("ocs", "amp", "switch")
JOBS_SCRAPE = "msoctl-jobs"
"""The scrape job of the kept jobs (/jobs), which a sharded fleet keeps in shard 0."""
"""Kinds the exporter has a collector for; lab instruments (laser, meter) are not listed."""
SHARD_FILE = "msoctl-targets-{shard}.json"
"""A shard's file_sd file in ``--out DIR``."""
MAX_SHARDS = 1024
_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def label_name(key: str) -> str:
    name = _INVALID.sub("_", key)
    if not name or name[0].isdigit():
        name = f"_{name}"
    if name in RESERVED or name.startswith("__"):
        name = f"inventory_{name.lstrip('_')}"
    return name


def targets(inventory: Inventory) -> list[dict[str, Any]]:
    """file_sd target groups for every device, and every switch's telemetry."""
    groups: list[dict[str, Any]] = []
    for device in inventory.devices.values():
        if device.kind not in EXPORTED_KINDS:
            continue
        labels = {label_name(key): value for key, value in sorted(device.labels.items())}
        groups.append({"targets": [device.name], "labels": {**labels, "kind": device.kind}})
        if device.kind == "switch" and device.snmp is not None:
            groups.append({"targets": [device.name],
                           "labels": {**labels, "kind": "cpo", "__param_module": "cpo"}})
    return groups


def shard_of(target: str, shards: int) -> int:
    """The shard (0..``shards``-1) of ``target``, as Prometheus's ``hashmod`` computes it
    with ``modulus: shards`` over this one source label: the MD5 digest of the value's
    UTF-8 bytes, its last 8 bytes read as a big-endian unsigned 64-bit number, modulo
    ``shards``. (Prometheus shifts each of the 16 digest bytes into a 64-bit word; the
    first 8 are shifted out of it.) Raises ValueError for fewer than 1 shard."""
    if shards < 1:
        raise ValueError("shards must be at least 1")
    digest = hashlib.md5(target.encode("utf-8"), usedforsecurity=False).digest()
    return int.from_bytes(digest[8:], "big") % shards


def shard_key(group: dict[str, Any]) -> str:
    """What a group is hashed on: its device's name (snmp_exporter's groups target the
    agent's address and carry the name in label ``device``; deploy/'s snmp jobs hash
    that label)."""
    labels = group.get("labels", {})
    for_snmp_exporter = str(labels.get("__param_module", "")).startswith("MSO-")
    return str(labels["device"]) if for_snmp_exporter else str(group["targets"][0])


def split(groups: list[dict[str, Any]], shards: int) -> list[list[dict[str, Any]]]:
    """The target groups of each shard, in their order (every group has one target)."""
    split_groups: list[list[dict[str, Any]]] = [[] for _ in range(shards)]
    for group in groups:
        split_groups[shard_of(shard_key(group), shards)].append(group)
    return split_groups


def write_shards(directory: Path, groups: list[dict[str, Any]], shards: int) -> list[Path]:
    """Write every shard's file (atomically) into ``directory`` (created if missing);
    the files written, shard by shard. Files of shards beyond ``shards`` left by an
    earlier run with more shards are removed, so that no Prometheus keeps scraping a
    split that no longer exists. Raises OSError."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for shard, own in enumerate(split(groups, shards)):
        path = directory / SHARD_FILE.format(shard=shard)
        write_atomically(path, render(own))
        written.append(path)
    for stale in directory.glob(SHARD_FILE.format(shard="*")):
        number = stale.name.removeprefix("msoctl-targets-").removesuffix(".json")
        if number.isdigit() and int(number) >= shards:
            stale.unlink()
    return written


def render(groups: list[dict[str, Any]]) -> str:
    return json.dumps(groups, indent=2) + "\n"


def write_atomically(path: Path, text: str) -> None:
    """Write then rename, so Prometheus never reads a half-written file (a device or a
    FIFO is written into: :mod:`msoctl.outfile`)."""
    write_output(path, text)


def shard_config(config: dict[str, Any], shard: int, shards: int, *, exporter: str,
                 targets: str) -> dict[str, Any]:
    """deploy/prometheus-sharded.yml's document (parsed) made into shard ``shard`` of
    ``shards``: the lines it marks SHARD set (every hashmod's modulus, the keep rule
    after it, the ``shard`` external label, the exporter's address ``exporter``
    (HOST:PORT), the target file ``targets``; the kept jobs' scrape, ``msoctl-jobs``, in
    shard 0 only). The input is not changed. Raises ValueError for a shard outside
    0..shards-1."""
    if not 0 <= shard < shards:
        raise ValueError(f"shard {shard} is not in 0..{shards - 1}")
    document: dict[str, Any] = json.loads(json.dumps(config))  # a deep copy of plain YAML
    document.setdefault("global", {}).setdefault("external_labels", {})["shard"] = str(shard)
    if shard != 0:
        document["scrape_configs"] = [job for job in document["scrape_configs"]
                                      if job["job_name"] != JOBS_SCRAPE]
    for job in document["scrape_configs"]:
        for sd_config in job.get("file_sd_configs", []):
            sd_config["files"] = [targets]
        rules = job.get("relabel_configs", [])
        for position, rule in enumerate(rules):
            if rule.get("action") == "hashmod":
                rule["modulus"] = shards
                keep = rules[position + 1]
                if keep.get("action") != "keep" or keep.get("source_labels") != [
                        rule["target_label"]]:
                    raise ValueError(f"job {job['job_name']}: a hashmod rule must be followed "
                                     "by the keep rule of its hash")
                keep["regex"] = str(shard)
            if rule.get("target_label") == "__address__" and "replacement" in rule:
                rule["replacement"] = exporter
        for static in job.get("static_configs", []):
            static["targets"] = [exporter]
    return document
