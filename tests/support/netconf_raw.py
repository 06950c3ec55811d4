"""A NETCONF client written by hand over asyncssh, for what ncclient never sends: malformed
messages, a bad chunk header, a hello that says something else."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncssh
from lxml import etree

from emulators.netconf import messages
from emulators.netconf.framing import BASE_1_0, BASE_1_1, Decoder, Framing, encode, negotiate
from tests.support.netconf import PASSWORD, USER


class RawClient:
    """A NETCONF client written by hand over asyncssh, for what ncclient never sends."""

    def __init__(self, port: int):
        self.port = port
        self.decoder = Decoder()
        self.connection: asyncssh.SSHClientConnection | None = None

    async def open(self, capabilities: tuple[str, ...] = (BASE_1_0, BASE_1_1)) -> int:
        self.connection = await asyncssh.connect(
            "127.0.0.1", self.port, username=USER, password=PASSWORD,
            known_hosts=None, client_keys=None)
        self.writer, self.reader, _ = await self.connection.open_session(
            subsystem="netconf", encoding=None)
        server_hello = messages.parse_hello(await self.receive())
        self.writer.write(encode(messages.hello(capabilities), Framing.END_OF_MESSAGE))
        self.decoder.framing = negotiate(capabilities, server_hello.capabilities)
        assert server_hello.session_id is not None
        return server_hello.session_id

    async def receive(self) -> bytes:
        while (message := self.decoder.next_message()) is None:
            data = await asyncio.wait_for(self.reader.read(65536), 5)
            if not data:
                raise EOFError("the server closed the session")
            self.decoder.feed(data)
        return message

    async def exchange(self, message: bytes) -> Any:
        self.writer.write(encode(message, self.decoder.framing))
        return etree.fromstring(await self.receive())

    async def closed(self) -> bool:
        try:
            data = await asyncio.wait_for(self.reader.read(65536), 5)
        except (asyncssh.Error, ConnectionError):
            return True
        return data == b""

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
