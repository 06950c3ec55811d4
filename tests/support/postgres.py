"""A private PostgreSQL cluster for the journal's tests and its benchmark.

``PostgresCluster.start(directory)`` runs Debian's ``initdb`` and ``pg_ctl`` (from PATH
or /usr/lib/postgresql/*/bin): the cluster's data, its log and its unix socket stay in
``directory``; it listens on 127.0.0.1 on a free port of its own. PostgreSQL refuses to
run as root, so as root the cluster belongs to the ``postgres`` user that Debian's
package creates (``runuser``). Local connections are trusted, except the role
``msoctl_pw``, which must give its password over TCP (scram-sha-256), so the password
path is tested for real.

``fast=True`` (the tests) turns fsync off: the tests kill processes and restart the
server, never the machine. The benchmark keeps PostgreSQL's defaults.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.ports import free_port

PASSWORD_ROLE = "msoctl_pw"
START_SECONDS = 60.0


def find_bindir() -> Path | None:
    """The directory of pg_ctl and initdb, or None when PostgreSQL is not installed."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(os.path.realpath(found)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                      key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    return Path(versions[-1]).parent if versions else None


@dataclass
class PostgresCluster:
    directory: Path
    bindir: Path
    port: int
    owner: str | None
    """The user the server runs as (``postgres`` when we are root), None: ourselves."""

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def socket_dir(self) -> Path:
        return self.directory / "socket"

    def url(self, database: str, *, user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def _command(self, *args: str) -> list[str]:
        if self.owner is None:
            return list(args)
        return ["runuser", "-u", self.owner, "--", *args]

    def _run(self, *args: str, timeout: float = START_SECONDS) -> str:
        done = subprocess.run(self._command(*args), capture_output=True, text=True,
                              timeout=timeout, cwd=self.directory)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): "
                               f"{done.stderr.strip()} {self.log_tail()}")
        return done.stdout

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join((self.directory / "server.log").read_text().splitlines()[-lines:])
        except OSError:
            return ""

    @classmethod
    def start(cls, directory: Path, *, fast: bool = True) -> PostgresCluster:
        bindir = find_bindir()
        if bindir is None:
            raise FileNotFoundError("PostgreSQL is not installed (Debian package postgresql)")
        owner = None
        if os.geteuid() == 0:
            pwd.getpwnam("postgres")  # KeyError: Debian's package was not installed
            owner = "postgres"
        directory.mkdir(parents=True, exist_ok=True)
        cluster = cls(directory, bindir, free_port(), owner)
        cluster.socket_dir.mkdir(exist_ok=True)
        if owner is not None:
            entry = pwd.getpwnam(owner)
            for path in (directory, cluster.socket_dir):
                os.chown(path, entry.pw_uid, entry.pw_gid)
            # the owner must be able to reach its directory through every parent
            parent = directory.parent
            while parent != parent.parent:
                mode = parent.stat().st_mode
                if not mode & 0o001:
                    os.chmod(parent, mode | 0o001)
                parent = parent.parent
        cluster._run(str(bindir / "initdb"), "-D", str(cluster.data), "-U", "postgres",
                     "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
        settings = [
            "listen_addresses = '127.0.0.1'", f"port = {cluster.port}",
            f"unix_socket_directories = '{cluster.socket_dir}'",
            "max_connections = 120", "shared_buffers = 64MB",
        ]
        if fast:
            settings += ["fsync = off", "full_page_writes = off"]
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.write("\n".join(settings) + "\n")
        hba = cluster.data / "pg_hba.conf"
        hba.write_text(f"host all {PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\n"
                       + hba.read_text())
        cluster.start_server()
        cluster.psql(f"CREATE ROLE {PASSWORD_ROLE} LOGIN PASSWORD 'pw-for-tests' SUPERUSER")
        return cluster

    def start_server(self) -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l",
                  str(self.directory / "server.log"), "-w", "-t", str(int(START_SECONDS)),
                  "start")

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w",
                  "stop")

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start_server()

    def psql(self, sql: str, database: str = "postgres") -> str:
        return self._run("psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h",
                         str(self.socket_dir), "-p", str(self.port), "-U", "postgres", "-d",
                         database, "-c", sql)

    def create_database(self, name: str) -> str:
        self.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.psql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        with contextlib.suppress(RuntimeError):
            self.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def close(self) -> None:
        """Stop the server at once (immediate: nothing in it is kept)."""
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self.stop("immediate")
        deadline = time.monotonic() + 5
        while (self.data / "postmaster.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)


def running_cluster() -> Iterator[PostgresCluster]:
    """A cluster in a directory of its own under the system's temporary directory: not
    pytest's, whose per-user directory is made private again by every pytest that
    starts, which would shut the server's user out. Skips (fails in CI) when PostgreSQL
    or psycopg is missing."""
    from msoctl.journal import close_stores
    from tests.support.peers import missing, require_module

    require_module("psycopg", how_to_install="pip install 'psycopg[binary]' (a dependency)")
    if find_bindir() is None:
        missing("PostgreSQL is not installed (Debian package postgresql; `make test` run "
                "as root installs it)")
    directory = Path(tempfile.mkdtemp(prefix="msoctl-postgres-")) / "cluster"
    try:
        cluster = PostgresCluster.start(directory)
    except KeyError:
        shutil.rmtree(directory.parent, ignore_errors=True)
        missing("running as root, but there is no postgres user to run PostgreSQL as "
                "(Debian package postgresql creates it)")
    try:
        yield cluster
    finally:
        close_stores()
        cluster.close()
        shutil.rmtree(directory.parent, ignore_errors=True)
