"""The journal's cost as it grows: the JSON-lines file, SQLite and PostgreSQL side by side.

For each size (records already in the journal) and store, a child process fills a
journal with synthetic history (bulk: COPY on PostgreSQL, one transaction on SQLite, a
plain write for the file), then a fresh child measures, so that its peak memory is what
the commands themselves use:

- change overhead: what ``Journal.change`` costs a change that sends nothing: the intent
  committed, the orphan check of its device (``interrupted``), the result committed —
  p50 and p99 over ``--changes`` changes;
- ``history -n 20``: the newest 20 operations (the call ``msoctl history`` makes);
- ``history --device D``: the newest 20 of one device among 200;
- peak RSS of the measuring process.

The JSON-lines row is the format of earlier versions, done as they did it (every read
folds the whole file), kept here as the baseline; at 1M records and more it takes only a
few change samples (each reads the whole file), and by default it stops at 1M.

Usage: ``python bench/journal.py [--sizes 10000,1000000,10000000] [--stores
jsonl,sqlite,postgresql] [--changes 200] [--json]``. PostgreSQL runs on a private
cluster started here with the server's default durability (fsync on), on loopback;
``--postgres-url`` uses an existing database instead (it is emptied).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.support.postgres (the private cluster)

DEVICES = [f"{kind}-{n}" for kind in ("ocs", "amp", "sw", "link") for n in range(50)]
ACTIONS = {"ocs": ("ocs.apply", "ocs.connect"), "amp": ("amp.set", "amp.als"),
           "sw": ("switch.apply", "switch.confirm"), "link": ("protection.switch",
                                                             "link.drain")}
PROBE_DEVICE = "ocs-7"
START = 1735689600.0  # 2025-01-01T00:00:00Z


# ---- synthetic history --------------------------------------------------------------------


def _ts(seconds: float) -> str:
    whole = int(seconds)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + \
        f".{int((seconds - whole) * 1000):03d}Z"


def synthetic(count: int, seed: int = 15) -> Iterator[list[dict[str, Any]]]:
    """Operations (each a list of its records), ``count`` records in all: mostly an intent
    and a result, one in ten with a note, one in twenty a refusal; all closed."""
    rng = random.Random(seed)
    written = 0
    clock = START
    serial = 0
    while written < count:
        serial += 1
        device = DEVICES[rng.randrange(len(DEVICES))]
        action = ACTIONS[device.split("-")[0]][rng.randrange(2)]
        op = f"{serial:012x}"
        clock += 0.25
        who = {"user": "ops", "host": f"host-{serial % 3}", "pid": 1000 + serial % 30000}
        if rng.random() < 0.05:
            records = [{"ts": _ts(clock), "op": op, "event": "refused", "device": device,
                        "action": action, "reason": "safety rule", "exit_code": 3, **who}]
        else:
            records = [{"ts": _ts(clock), "op": op, "event": "intent", "device": device,
                        "action": action, **who, "wanted": {"1": 65, "2": 66}}]
            if rng.random() < 0.1:
                records.append({"ts": _ts(clock + 0.01), "op": op, "event": "override",
                                "device": device, "action": action, "reason": "window"})
            records.append({"ts": _ts(clock + 0.05), "op": op, "event": "result",
                            "device": device, "action": action, "status": "ok",
                            "duration_seconds": 0.05})
        records = records[:count - written]
        written += len(records)
        yield records


def _rows(count: int) -> Iterator[tuple[list[tuple[Any, ...]], tuple[Any, ...],
                                        tuple[Any, ...]]]:
    """Per operation: its record rows, its operations row, its op_devices row."""
    record_id = 0
    for records in synthetic(count):
        first = record_id + 1
        rows = []
        for seq, record in enumerate(records):
            record_id += 1
            event = record["event"]
            status = record.get("status") if event == "result" else (
                "refused" if event == "refused" else None)
            rows.append((record_id, f"b{record_id:023x}", record["op"], seq, record["ts"],
                         event, record["device"], record["action"], record.get("user"),
                         record.get("host"), record.get("pid"), status,
                         json.dumps(record, separators=(",", ":"))))
        head, tail = records[0], records[-1]
        closed = tail["event"] in ("result", "refused")
        status = rows[-1][11] if closed else None
        operation = (head["op"], first, record_id, head["ts"], tail["ts"], head["device"],
                     head["action"], head["event"], head.get("user"), head.get("host"),
                     head.get("pid"), None, status, not closed, len(records))
        yield rows, operation, (head["device"], head["op"], first)


SECONDARY_INDEXES = ("operations_by_order", "operations_by_device", "operations_by_action",
                     "operations_by_time", "operations_open", "op_devices_by_order")


def _create_indexes(execute: Callable[[str], Any], dialect: Any) -> None:
    from msoctl.journal.schema import MIGRATIONS

    for _, _, statements in MIGRATIONS:
        for statement in statements:
            if statement.startswith("CREATE INDEX"):
                execute(dialect.sql(statement))


def fill_sqlite(path: Path, count: int) -> None:
    import sqlite3

    from msoctl.journal import Journal, close_stores
    from msoctl.journal.schema import SQLITE

    with Journal(path).store._write():
        pass  # the file and its schema, made by the store itself
    close_stores()
    connection = sqlite3.connect(path, isolation_level=None)
    # a bulk load, checked by its COMMIT: no WAL (one transaction of gigabytes would all go
    # through it) and no fsync; the journal's own settings are back once it is loaded
    connection.execute("PRAGMA journal_mode=DELETE")
    connection.execute("PRAGMA synchronous=OFF")
    for index in SECONDARY_INDEXES:
        connection.execute(f"DROP INDEX IF EXISTS {index}")
    connection.execute("BEGIN")
    batch_r: list[tuple[Any, ...]] = []
    batch_o: list[tuple[Any, ...]] = []
    batch_d: list[tuple[Any, ...]] = []

    def flush() -> None:
        connection.executemany("INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                               batch_r)
        connection.executemany("INSERT INTO operations VALUES "
                               "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", batch_o)
        connection.executemany("INSERT INTO op_devices VALUES (?,?,?)", batch_d)
        batch_r.clear()
        batch_o.clear()
        batch_d.clear()

    for rows, operation, device in _rows(count):
        batch_r.extend(rows)
        batch_o.append(operation)
        batch_d.append(device)
        if len(batch_r) >= 50_000:
            flush()
    flush()
    _create_indexes(connection.execute, SQLITE)
    connection.execute("COMMIT")
    connection.execute("ANALYZE")
    connection.execute("PRAGMA journal_mode=WAL")
    connection.close()


def fill_postgres(url: str, count: int) -> None:
    import psycopg

    from msoctl.journal import Journal, close_stores
    from msoctl.journal.schema import POSTGRES

    journal = Journal(url)
    journal.store.counts()
    close_stores()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("TRUNCATE records, operations, op_devices, link_states, "
                           "device_locks")
        for index in SECONDARY_INDEXES:
            connection.execute(f"DROP INDEX IF EXISTS {index}")
        with connection.cursor() as cursor:
            with cursor.copy("COPY records FROM STDIN") as copy:
                for rows, _, _ in _rows(count):
                    for row in rows:
                        copy.write_row(row)
            with cursor.copy("COPY operations FROM STDIN") as copy:
                for _, operation, _ in _rows(count):
                    copy.write_row(operation)
            with cursor.copy("COPY op_devices FROM STDIN") as copy:
                for _, _, device in _rows(count):
                    copy.write_row(device)
        _create_indexes(connection.execute, POSTGRES)
        connection.execute("SELECT setval(pg_get_serial_sequence('records', 'id'), "
                           "(SELECT COALESCE(MAX(id), 1) FROM records))")
        connection.execute("ANALYZE")


def fill_jsonl(path: Path, count: int) -> None:
    with path.open("w") as handle:
        for records in synthetic(count):
            for record in records:
                handle.write(json.dumps(record, separators=(",", ":")) + "\n")


# ---- the JSON-lines journal as earlier versions used it (the baseline) ----------------------


class LegacyJsonl:
    """Append with flock and fsync; every query folds the whole file."""

    def __init__(self, path: Path):
        self.path = path

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps({"ts": _ts(time.time()), **record}, separators=(",", ":")) + "\n"
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o640)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def operations(self, device: str | None = None) -> list[Any]:
        from msoctl.journal.model import fold

        def records() -> Iterator[dict[str, Any]]:
            with self.path.open("rb") as handle:
                for raw in handle:
                    try:
                        record = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(record, dict) and "op" in record:
                        yield record
        found = fold(records())
        return found if device is None else [o for o in found if o.device == device]

    def change(self, device: str) -> None:
        from msoctl.journal.model import new_id, who

        op = new_id()
        self.append({"op": op, "event": "intent", "device": device, "action": "bench.change",
                     **who()})
        # the orphan check, as earlier versions made it: a fold of the whole file
        self.orphans = [o.op for o in self.operations(device) if o.orphaned]
        self.append({"op": op, "event": "result", "device": device, "action": "bench.change",
                     "status": "ok"})


# ---- measuring (in a fresh process) ------------------------------------------------------


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def measure(store: str, where: str, changes: int, size: int) -> dict[str, Any]:
    timed: dict[str, list[float]] = {"change": [], "history": [], "history_device": []}
    if store == "jsonl":
        legacy = LegacyJsonl(Path(where))
        samples = changes if size < 1_000_000 else min(changes, 5)
        for _ in range(samples):
            start = time.perf_counter()
            legacy.change(PROBE_DEVICE)
            timed["change"].append(time.perf_counter() - start)
        for _ in range(3 if size >= 1_000_000 else 10):
            start = time.perf_counter()
            legacy.operations()[-20:]
            timed["history"].append(time.perf_counter() - start)
            start = time.perf_counter()
            legacy.operations(PROBE_DEVICE)[-20:]
            timed["history_device"].append(time.perf_counter() - start)
    else:
        from msoctl.journal import Journal

        journal = Journal(Path(where) if store == "sqlite" else where)
        journal.operations(newest=1)  # connect and open outside the timing
        for _ in range(changes):
            start = time.perf_counter()
            with journal.change(device=PROBE_DEVICE, action="bench.change"):
                journal.interrupted(PROBE_DEVICE)
            timed["change"].append(time.perf_counter() - start)
        for _ in range(20):
            start = time.perf_counter()
            assert len(journal.operations(newest=20)) == 20
            timed["history"].append(time.perf_counter() - start)
            start = time.perf_counter()
            journal.operations(PROBE_DEVICE, newest=20)
            timed["history_device"].append(time.perf_counter() - start)
    result: dict[str, Any] = {
        "change_samples": len(timed["change"]),
        "change_p50_seconds": statistics.median(timed["change"]),
        "change_p99_seconds": _percentile(timed["change"], 0.99),
        "history_n20_seconds": statistics.median(timed["history"]),
        "history_device_seconds": statistics.median(timed["history_device"]),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
    return result


def _child(*args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip()[-2000:]}")
    document: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return document


# ---- the run ------------------------------------------------------------------------------


def run(sizes: list[int], stores: list[str], changes: int, jsonl_max: int,
        postgres_url: str | None, workdir: Path) -> dict[str, Any]:
    cluster = None
    rows: list[dict[str, Any]] = []
    try:
        if "postgresql" in stores and postgres_url is None:
            from tests.support.postgres import PostgresCluster

            cluster = PostgresCluster.start(workdir / "postgres", fast=False)
        for size in sizes:
            for store in stores:
                if store == "jsonl" and size > jsonl_max:
                    continue
                if store == "sqlite":
                    where = str(workdir / f"journal-{size}.sqlite")
                elif store == "jsonl":
                    where = str(workdir / f"journal-{size}.jsonl")
                elif postgres_url is not None:
                    where = postgres_url
                else:
                    assert cluster is not None
                    where = cluster.create_database(f"bench_{size}")
                started = time.perf_counter()
                _child("--fill", store, where, str(size))
                filled = time.perf_counter() - started
                figures = _child("--measure", store, where, str(changes), str(size))
                rows.append({"store": store, "records": size, "fill_seconds": filled,
                             **figures})
                if store != "postgresql":
                    for suffix in ("", "-wal", "-shm"):
                        Path(where + suffix).unlink(missing_ok=True)
                elif cluster is not None:
                    cluster.drop_database(f"bench_{size}")
    finally:
        if cluster is not None:
            cluster.close()
    return {"benchmark": "journal", "changes": changes, "sizes": sizes, "stores": stores,
            "probe_device": PROBE_DEVICE, "devices": len(DEVICES), "rows": rows}


def _table(document: dict[str, Any]) -> str:
    header = (f"{'store':<11}{'records':>11}{'change p50':>13}{'p99':>13}{'n':>5}"
              f"{'history -n 20':>15}{'--device':>13}{'peak RSS':>10}{'fill':>9}")
    lines = [header, "-" * len(header)]
    for row in document["rows"]:
        lines.append(
            f"{row['store']:<11}{row['records']:>11,}"
            f"{row['change_p50_seconds'] * 1e3:>11.2f}ms"
            f"{row['change_p99_seconds'] * 1e3:>11.2f}ms{row['change_samples']:>5}"
            f"{row['history_n20_seconds'] * 1e3:>13.2f}ms"
            f"{row['history_device_seconds'] * 1e3:>11.2f}ms"
            f"{row['peak_rss_bytes'] / 2**20:>8.0f}MB{row['fill_seconds']:>8.1f}s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--fill"]:
        store, where, size = args[1], args[2], int(args[3])
        {"sqlite": lambda: fill_sqlite(Path(where), size),
         "postgresql": lambda: fill_postgres(where, size),
         "jsonl": lambda: fill_jsonl(Path(where), size)}[store]()
        print(json.dumps({"filled": size}))
        return 0
    if args[:1] == ["--measure"]:
        print(json.dumps(measure(args[1], args[2], int(args[3]), int(args[4]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,1000000,10000000")
    parser.add_argument("--stores", default="jsonl,sqlite,postgresql")
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--jsonl-max", type=int, default=1_000_000,
                        help="the largest size the JSON-lines baseline runs at")
    parser.add_argument("--postgres-url", help="an existing database to use (emptied)")
    parser.add_argument("--dir", type=Path, help="where the journals go (default: a "
                        "temporary directory)")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    options = parser.parse_args(args)
    sizes = [int(s) for s in options.sizes.split(",")]
    stores = [s for s in options.stores.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="msoctl-bench-journal-",
                                     dir=options.dir) as scratch:
        document = run(sizes, stores, options.changes, options.jsonl_max,
                       options.postgres_url, Path(scratch))
    if options.json:
        print(json.dumps(document, indent=2))
    else:
        print(_table(document))
    return 0


if __name__ == "__main__":
    sys.exit(main())
