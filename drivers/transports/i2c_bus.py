"""What the raw I2C buses (i2c-dev, the serial bridge) check and share."""

from __future__ import annotations

from drivers.cmis.io import MAX_TRANSFER
from drivers.errors import ValidationError

MEMORY_SIZE = 256
"""Byte addresses 0..255: lower memory and the selected upper page."""


def check_device_address(device_address: int) -> None:
    if not 0x03 <= device_address <= 0x77:
        raise ValidationError(f"I2C address {device_address:#04x} is not a 7-bit device "
                              "address (0x03..0x77)")


def check_transfer(offset: int, length: int) -> None:
    """Byte address 0..255 and a length that stays inside them (no wrap-around)."""
    if not 0 <= offset < MEMORY_SIZE or length < 1 or offset + length > MEMORY_SIZE:
        raise ValidationError(f"I2C transfer of {length} bytes at byte {offset} is outside "
                              f"byte addresses 0..{MEMORY_SIZE - 1}")


def read_transfers(offset: int, length: int) -> list[tuple[int, int]]:
    """(start, size) of the transactions that read ``length`` bytes from ``offset``.

    One, unless the read is longer than :data:`MAX_TRANSFER`, which a module
    need not accept in one transaction: PagedIo's verified page read starts
    two bytes early, at the select bytes, and so asks for up to 130.
    """
    return [(start, min(MAX_TRANSFER, offset + length - start))
            for start in range(offset, offset + length, MAX_TRANSFER)]
