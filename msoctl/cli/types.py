"""Click parameter types that refuse bad input before a command runs.

Every number, name and output path an operator types goes through one of these,
so a bad one is one ``error:`` line and exit 2 (click's usage error) before
anything is read from or sent to a device:

- :class:`Number`: a finite number in a range; ``nan``, ``inf`` and ``1e999``
  are refused (a plain ``click.FloatRange`` lets NaN through, since every
  comparison with it is false);
- :class:`Count`: an integer in a range that always has an upper bound;
- :class:`Name`: a device or link name as the inventory writes them, completed from
  the inventory (``msoctl completion``);
- :class:`Text`: free text without control or formatting characters;
- :class:`OutputFile` and :class:`OutputDir`: a place that can be written (or
  created), checked before the command starts.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from drivers.yamlfile import unsafe_character
from msoctl.inventory import DEVICE_NAME, Inventory, find_inventory, load_inventory
from msoctl.links import LINK_NAME
from msoctl.outfile import OutputRefused, output_target

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem


class Number(click.FloatRange):
    """A finite float, optionally within ``min``..``max`` (click's range rules)."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)

    def _describe_range(self) -> str:
        # click describes an unbounded range as "x<=None" in the help
        if self.min is None and self.max is None:
            return ""
        return str(super()._describe_range())


class Count(click.IntRange):
    """An integer in ``min``..``max``; both bounds are required, so no option takes a
    number too large for the arithmetic or the database behind it."""

    name = "integer"

    def __init__(self, min: int, max: int) -> None:
        super().__init__(min, max)


class Text(click.ParamType):  # type: ignore[type-arg]
    """Text without control or formatting characters (newline, escape, bidi...), which
    would garble the terminal, the journal or a device's command line."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        text = str(value)
        bad = unsafe_character(text)
        if bad is not None:
            self.fail(f"{text!r} contains the control or formatting character {bad}",
                      param, ctx)
        return text


class Name(Text):
    """A name of the inventory: a device (``kind="device"``; of one family with
    ``family``, ``"ocs"`` say) or a link. Completes (shell completion) from the inventory
    in use: the devices of that family, or the links."""

    def __init__(self, kind: str = "device", family: str | None = None, *,
                 snmp: bool = False) -> None:
        self.kind = kind
        self.family = family
        self.snmp = snmp  # only devices with an snmp section (their telemetry)
        self.pattern = DEVICE_NAME if kind == "device" else LINK_NAME
        self.name = f"{kind} name"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        text = super().convert(value, param, ctx)
        if not self.pattern.fullmatch(text):
            extra = ", ':'" if self.kind != "device" else ""
            self.fail(f"{text!r} is not a {self.kind} name (letters, digits, '.', '_'{extra} "
                      "or '-', at most 63)", param, ctx)
        return text

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[CompletionItem]:
        def names(inventory: Inventory) -> list[str]:
            if self.kind != "device":
                return list(inventory.links)
            return [name for name, device in inventory.devices.items()
                    if (self.family is None or device.kind == self.family)
                    and (not self.snmp or device.snmp is not None)]

        return complete_from_inventory(ctx, incomplete, names)


class FaultTarget(Text):
    """What a lab fault hits: a device, a switch's SNMP agent (``sw-a/snmp``) or a span's
    cable; completes from the inventory in use."""

    name = "target"

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[CompletionItem]:
        def names(inventory: Inventory) -> list[str]:
            agents = [f"{name}/snmp" for name, device in inventory.devices.items()
                      if device.snmp is not None]
            return [*inventory.devices, *agents, *inventory.spans]

        return complete_from_inventory(ctx, incomplete, names)


def complete_from_inventory(ctx: click.Context, incomplete: str,
                            names: Callable[[Inventory], list[str]]) -> list[CompletionItem]:
    """Shell completion from the inventory in use (``-i`` before or after the subcommand,
    else MSOCTL_INVENTORY, else ./inventory.yaml): the ``names`` that start with
    ``incomplete``. Never raises and prints nothing: no inventory, or a broken one,
    completes nothing."""
    from click.shell_completion import CompletionItem

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            option = ctx.meta.get("msoctl.inventory")
            inventory = load_inventory(find_inventory(option if isinstance(option, str)
                                                      else None))
            found = names(inventory)
    except Exception:  # a missing or broken inventory: nothing to offer, and no noise
        return []
    return [CompletionItem(name) for name in found if name.startswith(incomplete)]


def _blocking_ancestor(path: Path) -> str | None:
    """Why a directory cannot be made at ``path`` (None when it can be, or exists)."""
    current = path
    while True:
        if current.exists():
            if not current.is_dir():
                return f"{current} is not a directory"
            if not os.access(current, os.W_OK | os.X_OK) and current != path:
                return f"{current} is not writable"
            return None
        if current.parent == current:
            return f"{current} does not exist"
        current = current.parent


class OutputFile(click.Path):
    """A file to write: not empty, not a directory, in a directory that exists and can
    be written; an existing file must be writable. A character device or a FIFO is
    written into and a symbolic link followed (:mod:`msoctl.outfile`); a block device or
    a socket is refused. Gives a :class:`Path`."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path", param, ctx)
        Text().convert(str(value), param, ctx)
        given = Path(value).expanduser()
        if given.is_dir():
            self.fail(f"{given} is a directory; give a file", param, ctx)
        try:
            target = output_target(given)
        except OutputRefused as error:
            self.fail(error.message, param, ctx)
        path = target if given.is_symlink() else given  # a link: what it points to
        parent = path.parent
        if not parent.exists():
            self.fail(f"no directory {parent} to write {path.name} in", param, ctx)
        if not parent.is_dir():
            self.fail(f"{parent} is not a directory", param, ctx)
        writable = os.access(path, os.W_OK) if path.exists() else \
            os.access(parent, os.W_OK | os.X_OK)
        if not writable:
            self.fail(f"{path} cannot be written (permission denied or read-only)", param, ctx)
        return super().convert(given, param, ctx)


class OutputDir(click.Path):
    """A directory to write in, created (with its parents) by the command if missing:
    not empty, and every part of it that exists is a directory that can be written.
    Gives a :class:`Path`."""

    def __init__(self) -> None:
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path", param, ctx)
        Text().convert(str(value), param, ctx)
        path = Path(value).expanduser()
        problem = _blocking_ancestor(path)
        if problem is None and path.is_dir() and not os.access(path, os.W_OK | os.X_OK):
            problem = f"{path} is not writable"
        if problem is not None:
            self.fail(f"cannot write in {path}: {problem}", param, ctx)
        return super().convert(path, param, ctx)


def input_path(**options: Any) -> click.Path:
    """``click.Path`` for a file to read, refusing an empty path (which would mean the
    current directory)."""
    return _InputPath(path_type=Path, **options)


class _InputPath(click.Path):
    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path", param, ctx)
        Text().convert(str(value), param, ctx)
        return super().convert(value, param, ctx)


DEVICE = Name("device")
OCS = Name("device", "ocs")
AMP = Name("device", "amp")
SWITCH = Name("device", "switch")
SNMP_SWITCH = Name("device", "switch", snmp=True)
"""A switch whose CPO/CPC telemetry is read over SNMP (completes only those)."""
LINK = Name("link")
TEXT = Text()
TARGET = FaultTarget()
