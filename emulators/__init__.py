"""Software models of every msoctl device, with their protocol servers.

Emulators import nothing from :mod:`msoctl` and no driver logic; they may read
the declarative spec tables in :mod:`drivers` (command sets, field tables).
"""
