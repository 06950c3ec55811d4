"""A separate msoctl process for the journal tests: ``python -m tests.support.journal_worker``.

Each command opens the journal at LOCATION in a process (and a database connection) of
its own, says ``ready`` on stdout once it holds what the test waits for, and then does
what the command says. ``--host NAME`` makes the process report NAME as its host (two
simulated hosts on one machine): it replaces ``socket.gethostname`` before msoctl is
imported, so every record and lock holder carries it.

Commands:
  hold-lock DEVICE           take DEVICE's lock, say ready, hold it until stdin closes
  open-change DEVICE         write a change's intent, say ready, wait to be killed
  notes-forever DEVICE       write an intent, then notes as fast as it can until killed
  close OP                   close operation OP as interrupted; print closed / not closed
  writer ID COUNT            COUNT changes (intent, note, result) on dev-0..dev-3, and
                             COUNT // 4 locked changes on "shared" with the times it held
                             the lock in its note
"""

from __future__ import annotations

import argparse
import socket
import sys
import time


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host")
    parser.add_argument("--collide", action="store_true",
                        help="every device gets the same lock key (PostgreSQL)")
    parser.add_argument("location")
    parser.add_argument("command")
    parser.add_argument("args", nargs="*")
    options = parser.parse_args(argv)
    if options.host:
        host = options.host
        socket.gethostname = lambda: host  # type: ignore[assignment]

    from msoctl.journal import DeviceBusy, Journal, locked_change

    if options.collide:
        from msoctl.journal import postgres_store

        postgres_store.lock_key = lambda device: 42  # type: ignore[assignment]

    journal = Journal(options.location)
    command, args = options.command, options.args
    if command == "hold-lock":
        from msoctl.journal import DeviceLock

        with DeviceLock(journal, args[0]):
            print("ready", flush=True)
            sys.stdin.read()
        return 0
    if command == "open-change":
        with journal.change(device=args[0], action="test.hang") as change:
            print(f"ready {change.op}", flush=True)
            while True:
                time.sleep(1)
    if command == "notes-forever":
        with journal.change(device=args[0], action="test.notes") as change:
            print(f"ready {change.op}", flush=True)
            count = 0
            while True:
                count += 1
                change.note("progress", count=count, padding="x" * 2000)
    if command == "close":
        closed = journal.close(args[0], {"device": "ocs-a", "action": "test.hang",
                                         "status": "interrupted", "resolved_by": "worker"})
        print("closed" if closed else "not closed", flush=True)
        return 0
    if command == "writer":
        writer, count = args[0], int(args[1])
        print("ready", flush=True)
        for n in range(count):
            with journal.change(device=f"dev-{n % 4}", action="test.write", writer=writer,
                                n=n) as change:
                change.note("step", writer=writer, n=n)
                change.outcome["n"] = n
        done = 0
        while done < count // 4:
            try:
                with locked_change(journal, device="shared", action="test.locked",
                                   writer=writer) as change:
                    entered = time.time()
                    time.sleep(0.002)
                    change.note("held", entered=entered, left=time.time())
                done += 1
            except DeviceBusy:
                time.sleep(0.001)
        return 0
    raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
