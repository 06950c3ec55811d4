"""Who may change the devices of a link: the controller asks its :class:`Ownership`.

Links are grouped in *shards*: every link whose two ends are on the same pair of OCSes
is in one shard, named after the pair (``ocs-a+ocs-b``). A cable runs between two OCSes,
so a cable cut touches one shard, and one instance answers it with one whole-map
command per OCS.

- :class:`SoleOwner`: one controller owns every shard (the default: no database
  needed, and ``make demo``).
- :class:`msoctl.protect.ha.LeaseOwnership`: instances share the shards through the
  journal's PostgreSQL database, each shard owned by one of them under a lease and a
  term (see that module).

Before every device change the controller calls :meth:`Ownership.fence` (the database
confirms that this instance owns the shards of the links, with the terms it holds and
unexpired leases) and, in the thread that sends the command, :meth:`Ownership.check`
(this instance's own monotonic lease deadline has not passed): either raises
:class:`Fenced`, and nothing is sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from msoctl.links import Link


class Fenced(Exception):
    """This instance may not change the devices of these links now."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def shard_of(link: Link) -> str:
    """The shard of ``link``: its OCS pair, ``ocs-a+ocs-b`` (sorted)."""
    return "+".join(sorted(set(link.ocs_names)))


class Ownership(Protocol):
    @property
    def instance(self) -> str | None:
        """This instance's id in the database (``None``: no database)."""

    def start(self, links: Iterable[Link], on_change: Callable[[], None]) -> None:
        """Begin (register, claim what is free); ``on_change`` is called whenever the set
        of owned shards changes."""

    def stop(self) -> None: ...

    def acts_for(self, link: Link) -> bool:
        """Whether this instance owns the shard of ``link`` now."""

    def terms(self) -> dict[str, int]:
        """The shards owned now and their terms."""

    def fence(self, links: Iterable[Link]) -> dict[str, int]:
        """Confirm in the database, now, that the shards of ``links`` are this instance's:
        their terms; raises :class:`Fenced`."""

    def check(self, links: Iterable[Link] | None = None) -> None:
        """Raise :class:`Fenced` once this instance's own lease deadline of the shards of
        ``links`` (default: every shard it owns) has passed."""


class SoleOwner:
    """One controller, every shard: nothing to confirm."""

    instance: str | None = None

    def start(self, links: Iterable[Link], on_change: Callable[[], None]) -> None:
        pass

    def stop(self) -> None:
        pass

    def acts_for(self, link: Link) -> bool:
        return True

    def terms(self) -> dict[str, int]:
        return {}

    def fence(self, links: Iterable[Link]) -> dict[str, int]:
        return {}

    def check(self, links: Iterable[Link] | None = None) -> None:
        pass
