"""The click Context object every command receives: the inventory, the journal, the
state of the links, and the devices opened by name through :mod:`msoctl.access`.

Each is read when a command first asks for it, so a command that needs no inventory
(``msoctl history`` without one, ``msoctl ocs report``) runs without one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import click

from drivers.errors import DeviceError, ValidationError
from msoctl.access import Devices
from msoctl.inventory import Device, Inventory, find_inventory, inventory_named, load_inventory
from msoctl.journal import (
    Journal,
    JournalError,
    JournalLocation,
    default_journal_path,
    parse_location,
)
from msoctl.linkstate import LinkStates

if TYPE_CHECKING:
    from msoctl.jobs.registry import Job


@dataclass
class Context:
    inventory_option: str | None = None
    journal_option: str | None = None
    verbose: bool = False
    debug: bool = False
    _inventory: Inventory | None = field(default=None, repr=False)
    _journal: Journal | None = field(default=None, repr=False)
    _maps: dict[str, dict[int, int] | None] = field(default_factory=dict, repr=False)
    _devices: Devices | None = field(default=None, repr=False)

    @property
    def inventory(self) -> Inventory:
        if self._inventory is None:
            self._inventory = load_inventory(find_inventory(self.inventory_option))
        return self._inventory

    @property
    def journal(self) -> Journal:
        """The journal: ``--journal`` (or MSOCTL_JOURNAL), else the inventory's, else the
        default file; opened on first use, one per command."""
        if self._journal is None:
            self._journal = Journal(self._journal_location())
        return self._journal

    def _journal_location(self) -> JournalLocation:
        if self.journal_option is not None:
            try:
                return _in_a_directory(parse_location(self.journal_option),
                                       "--journal (or MSOCTL_JOURNAL)")
            except ValueError as error:
                raise ValidationError(f"--journal (or MSOCTL_JOURNAL) {error}") from None
        if inventory_named(self.inventory_option) is None:  # history works without one
            return JournalLocation(path=default_journal_path(), is_default=True)
        if self.inventory.journal is not None:
            return _in_a_directory(self.inventory.journal, "the inventory's journal")
        return JournalLocation(path=default_journal_path(), is_default=True)

    @property
    def link_states(self) -> LinkStates:
        return LinkStates(self.journal)

    def kept_jobs(self) -> dict[str, Job]:
        """The jobs planned under a name and not ended; {} when there is no journal yet
        (nothing is made for asking). JournalError, ValidationError or OSError when it
        cannot be read."""
        from msoctl.jobs.registry import Jobs

        location = self._journal_location()
        if location.path is not None and not location.path.exists():
            return {}
        return Jobs(self.journal).all()

    def jobs_on(self, links: set[str]) -> dict[str, list[str]] | None:
        """The kept jobs whose traffic crosses any of ``links``: job -> those links; {}
        when there is no journal yet, None when it cannot be read."""
        try:
            jobs = self.kept_jobs()
        except (JournalError, ValidationError, OSError):
            return None
        return {name: crossed for name, job in jobs.items()
                if (crossed := sorted(links.intersection(job.links)))}

    def anew(self) -> Context:
        """A context of the same options that has read nothing yet (the exporter takes one
        per reading of the jobs: the inventory and the journal as they are then)."""
        return Context(self.inventory_option, self.journal_option, self.verbose, self.debug)

    def drained(self) -> set[str]:
        """The inventory's links that are drained (out of service) now."""
        return set(self.link_states.drained())

    def forget_readings(self) -> None:
        """Read the devices again from now on (each run of a ``--watch``)."""
        self._maps.clear()

    def read_map(self, name: str) -> dict[int, int] | None:
        """An OCS's current map, or None when it cannot be read (for impact checks); each
        OCS is read once per command."""
        if name not in self._maps:
            self._maps[name] = self._read_map(name)
        return self._maps[name]

    def _read_map(self, name: str) -> dict[int, int] | None:
        try:
            driver = self.devices.ocs(name)
            try:
                return dict(driver.port_map())
            finally:
                driver.close()
        except DeviceError:
            return None

    @property
    def devices(self) -> Devices:
        """The inventory's devices, opened by name with the inventory's timeouts."""
        if self._devices is None:
            self._devices = Devices(self.inventory)
        return self._devices

    def device(self, name: str, kind: str | None = None) -> Device:
        return self.inventory.device(name, kind)

    def devices_labelled(self, kind: str, labels: tuple[str, ...]) -> list[str]:
        """Devices of ``kind`` carrying every ``key=value`` label, in inventory order."""
        wanted: dict[str, str] = {}
        for label in labels:
            key, sep, value = label.partition("=")
            if not sep or not key:
                raise ValidationError(f"--label {label!r}: write key=value")
            wanted[key] = value
        return [name for name, device in self.inventory.devices.items()
                if device.kind == kind
                and all(device.labels.get(k) == v for k, v in wanted.items())]


pass_context = click.make_pass_decorator(Context)


def _in_a_directory(location: JournalLocation, what: str) -> JournalLocation:
    """``location``, refused (ValidationError) when it is a file in a directory that does
    not exist: a mistyped path would otherwise start a journal of its own, apart from the
    audit trail, or read as "no changes". Only the default location is made on use."""
    path = location.path
    if path is not None and not path.parent.is_dir():
        raise ValidationError(f"{what} {path}: no directory {path.parent} to keep it in "
                              "(create it, or give another path)")
    return location
