"""A Linux I2C adapter with emulated modules on it, as i2c-dev's ``I2C_RDWR`` sees it.

Hand an :class:`EmulatedAdapter` to the host's i2c-dev transport in place of
an opened smbus2 bus: it carries out smbus2 ``i2c_msg`` transfers against the
module's :class:`~emulators.amp.i2c.I2cSlave` the way the kernel would. A
combined read is a one-byte write message (the offset) followed by a read
message; a write is one write message. A NACK comes back as ENXIO and a hung
bus as ETIMEDOUT, as adapter drivers report them.
"""

from __future__ import annotations

import ctypes
import errno
import os

from smbus2 import i2c_msg
from smbus2.smbus2 import I2C_M_RD

from emulators.amp.i2c import I2cBusHang, I2cNack, I2cSlave


class EmulatedAdapter:
    def __init__(self, *slaves: I2cSlave):
        self.slaves = {slave.address: slave for slave in slaves}

    def i2c_rdwr(self, *msgs: i2c_msg) -> None:
        try:
            self._carry_out(msgs)
        except I2cNack:
            raise OSError(errno.ENXIO, os.strerror(errno.ENXIO)) from None
        except I2cBusHang:
            raise OSError(errno.ETIMEDOUT, os.strerror(errno.ETIMEDOUT)) from None

    def _carry_out(self, msgs: tuple[i2c_msg, ...]) -> None:
        addresses = {m.addr for m in msgs}
        slave = self.slaves.get(msgs[0].addr) if len(addresses) == 1 and msgs else None
        if slave is None:
            raise I2cNack("nobody at that address")
        reads = [bool(m.flags & I2C_M_RD) for m in msgs]
        if reads == [False, True] and msgs[0].len == 1:
            data = slave.read(bytes(msgs[0])[0], msgs[1].len)
            ctypes.memmove(msgs[1].buf, data, len(data))
        elif reads == [False] and msgs[0].len >= 2:
            raw = bytes(msgs[0])
            slave.write(raw[0], raw[1:])
        else:
            raise OSError(errno.EOPNOTSUPP, f"this adapter carries no {reads} transfer")

    def close(self) -> None:
        pass
