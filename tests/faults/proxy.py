"""A TCP proxy on 127.0.0.1 in front of a real server, to take it away and bring it back:
`refuse()` closes every connection and the listener (connections are refused, as when
PostgreSQL restarts); `accept()` listens again on the same port."""

from __future__ import annotations

import asyncio
import contextlib

from bot.lifecycle import Lifecycle


class TcpProxy(Lifecycle):
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.StreamWriter] = set()

    async def initialize(self) -> None:
        await self.accept()

    async def shutdown(self) -> None:
        await self.refuse()

    async def accept(self) -> None:
        if self._server is not None:
            return
        self._server = await asyncio.start_server(self._pipe, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def refuse(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        # Connections first: since Python 3.12 `wait_closed` waits for every connection.
        for writer in list(self._pipes):
            writer.close()
        self._pipes.clear()
        if server is not None:
            await server.wait_closed()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._pipes |= {writer, up_writer}

        async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))
        self._pipes -= {writer, up_writer}
