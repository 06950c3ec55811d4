"""Where the journal is: an SQLite file (the default) or a PostgreSQL database.

``journal:`` in the inventory and the global ``--journal`` take either a file
path (SQLite; relative paths are relative to the inventory) or a
``postgresql://user@host[:port]/dbname[?option=value...]`` URL. The URL never
holds a password: the inventory's ``journal_password: env:NAME | file:PATH``
names it, or libpq finds it itself (``PGPASSFILE``, ``~/.pgpass``,
``PGPASSWORD``). Every query option is a libpq connection parameter passed
through unchanged (``sslmode``, ``sslrootcert``, ``sslcert``, ``sslkey``,
``connect_timeout``, ``application_name``, ...); the certificate and key files
among them are resolved relative to the inventory like any other path.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

POSTGRES_SCHEMES = ("postgresql", "postgres")
LEGACY_SUFFIXES = (".jsonl", ".ndjson")
"""File names of the JSON-lines journal of earlier versions."""
SQLITE_MAGIC = b"SQLite format 3\x00"
_PATH_OPTIONS = ("sslrootcert", "sslcert", "sslkey", "sslcrl", "sslcrldir", "passfile")
DEFAULT_CONNECT_TIMEOUT_SECONDS = 5


def state_directory() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "msoctl"


def default_journal_path() -> Path:
    """``$XDG_STATE_HOME/msoctl/journal.sqlite`` (``~/.local/state`` without it)."""
    return state_directory() / "journal.sqlite"


def legacy_default_path() -> Path:
    """Where earlier versions kept their JSON-lines journal by default."""
    return state_directory() / "journal.jsonl"


@dataclass(frozen=True)
class JournalLocation:
    """An SQLite file (``path``) or a PostgreSQL database (``url``, password apart)."""

    path: Path | None = None
    url: str | None = None
    password: Callable[[], str] | None = field(default=None, compare=False)
    is_default: bool = False

    @property
    def kind(self) -> str:
        return "sqlite" if self.path is not None else "postgresql"

    def __str__(self) -> str:
        return str(self.path) if self.path is not None else str(self.url)

    def key(self) -> str:
        """One store per key per process."""
        if self.path is not None:
            return f"sqlite:{os.path.realpath(self.path)}"
        return f"postgresql:{self.url}"


def sqlite_location(path: Path, *, is_default: bool = False) -> JournalLocation:
    return JournalLocation(path=path, is_default=is_default)


def parse_location(text: str, *, base: Path | None = None,
                   password: Callable[[], str] | None = None) -> JournalLocation:
    """A journal location from its text; raises ValueError saying what is wrong.

    ``base`` is the directory relative paths start from (the inventory's); ``password``
    resolves the database password when one is needed (PostgreSQL only).
    """
    stripped = text.strip()
    if not stripped:
        raise ValueError("is empty: give a file path (SQLite) or a postgresql:// URL")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in stripped):
        raise ValueError("contains a control character")
    scheme, sep, _ = stripped.partition("://")
    if sep and scheme.lower() in POSTGRES_SCHEMES:
        return _postgres(stripped, base, password)
    if sep and scheme.isalpha():
        raise ValueError(f"{scheme}:// is not a journal store; give a file path (SQLite) "
                         "or a postgresql:// URL")
    if password is not None:
        raise ValueError("journal_password is for a postgresql:// journal, not a file")
    path = Path(stripped).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    return JournalLocation(path=path)


def _postgres(text: str, base: Path | None,
              password: Callable[[], str] | None) -> JournalLocation:
    parts = urlsplit(text)
    if parts.password is not None:
        raise ValueError("must not hold a password: name it with journal_password "
                         "(env:NAME or file:PATH) or in ~/.pgpass")
    if not parts.path.strip("/"):
        raise ValueError("names no database: write postgresql://user@host/dbname")
    options = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name == "password":
            raise ValueError("must not hold a password: name it with journal_password "
                             "(env:NAME or file:PATH) or in ~/.pgpass")
        if name in _PATH_OPTIONS and value and base is not None:
            found = Path(value).expanduser()
            value = str(found if found.is_absolute() else base / found)
        options.append((name, value))
    netloc = parts.netloc
    if parts.username is not None:
        netloc = quote(unquote(parts.username), safe="") + "@" + netloc.rpartition("@")[2]
    url = urlunsplit(("postgresql", netloc, parts.path, urlencode(options), ""))
    return JournalLocation(url=url, password=password)


def legacy_problem(location: JournalLocation, *, beside: bool = True) -> str | None:
    """Why ``location`` is a JSON-lines journal of earlier versions (with the way out),
    or None when it is not one. ``beside``: the default location is refused too while the
    old default journal lies beside it, not yet imported."""
    path = location.path
    if path is None:
        return None
    hint = ("import it into the new journal with 'msoctl journal import {old}' and point "
            "journal: (or --journal) at a .sqlite file or a postgresql:// URL")
    if path.suffix in LEGACY_SUFFIXES:
        return f"{path} is a JSON-lines journal, which msoctl no longer writes: " + \
            hint.format(old=path)
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        head = b""
    if head and head != SQLITE_MAGIC and head[:1] in (b"{", b"\n", b" "):
        return f"{path} is a JSON-lines journal, not an SQLite one: " + hint.format(old=path)
    if head and head != SQLITE_MAGIC:
        return f"{path} is not an SQLite journal (it is some other file)"
    if beside and location.is_default and not head:
        legacy = legacy_default_path()
        if legacy.is_file() and legacy.stat().st_size > 0:
            return (f"found the JSON-lines journal of an earlier version at {legacy}: "
                    f"import it first with 'msoctl journal import {legacy}' (it goes into "
                    f"{path}), or move it away")
    return None
