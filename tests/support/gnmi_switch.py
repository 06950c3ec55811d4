"""Emulated gNMI switches (emulators/switch/device.py) shared by a test module.

:func:`serving` starts the switches on one event loop and stops them at the end;
:func:`factory_reset_checked` puts one back as delivered between tests and checks that
it is: the factory configuration served, no confirmed commit waiting, every counter of
the chip at zero.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from emulators.gnmi.server import GnmiServer
from emulators.switch.device import SwitchDevice
from tests.support.netconf import Loop


@contextmanager
def serving(devices: Mapping[str, SwitchDevice]) -> Iterator[Mapping[str, SwitchDevice]]:
    """``devices``, each serving gNMI on an ephemeral port until the block ends."""
    loop = Loop()
    try:
        for device in devices.values():
            loop.run(device.start())
        yield devices
    finally:
        for device in devices.values():
            loop.run(device.stop())
        loop.close()


def factory_reset_checked(device: SwitchDevice) -> None:
    """``device.factory_reset()``, and AssertionError unless it took."""
    device.factory_reset()
    server, face = device.server, device.face
    assert isinstance(server, GnmiServer) and face is not None, device.name
    assert server.config == face.factory(), device.name
    assert server.pending_commit is None, device.name
    for port in device.model.state_tree()["switch"]["ports"]["port"]:
        for queue in port["queues"]["queue"]:
            assert set(queue["counters"].values()) == {0}, (device.name, port["name"])
