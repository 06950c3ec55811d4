"""Writing into the lab's state directory: atomically, and secrets private.

Shared by the lab in one process (emulators/lab/lab.py) and the process that runs a lab
spread over several (emulators/lab/spread.py): both write the inventory, ``lab.json``,
``known_hosts`` and the control token the same way.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import yaml

from emulators.lab.constants import INVENTORY_FILE, SECRETS_DIR


def write_atomically(path: Path, text: str, mode: int) -> None:
    """Write ``text`` to ``path`` atomically (write, then rename), never readable beyond
    ``mode`` while it is written."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)
    os.replace(tmp, path)


def new_secret(state_dir: Path, filename: str) -> str:
    """A random secret, written to ``state_dir``/secrets/``filename`` (0600, the directory
    0700)."""
    directory = state_dir / SECRETS_DIR
    directory.mkdir(mode=0o700, exist_ok=True)
    directory.chmod(0o700)
    secret = secrets.token_urlsafe(24)
    write_atomically(directory / filename, secret + "\n", 0o600)
    return secret


def write_inventory(state_dir: Path, topology_name: str, document: dict[str, Any]) -> Path:
    """The inventory ``document``, written atomically to ``state_dir``/inventory.yaml."""
    path = state_dir / INVENTORY_FILE
    header = (f"# Written by the msoctl lab for topology {topology_name!r}.\n"
              "# It is rewritten every time the lab starts.\n")
    write_atomically(path, header + yaml.safe_dump(document, sort_keys=False), 0o644)
    return path
