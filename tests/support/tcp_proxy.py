"""A TCP proxy on 127.0.0.1 that a test can cut, as a network between an app and its
database would be cut: `cut()` ends every connection through it and refuses new ones
(each is closed as soon as it is accepted) until `mend()`."""

from __future__ import annotations

import asyncio
import contextlib


class TcpProxy:
    def __init__(self, host: str, port: int):
        self.target = (host, port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task] = set()
        self.is_cut = False

    async def start(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.is_cut:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        pumps = [
            asyncio.ensure_future(self._pump(reader, up_writer)),
            asyncio.ensure_future(self._pump(up_reader, writer)),
        ]
        self._tasks.update(pumps)
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for writer_ in (writer, up_writer):
            writer_.transport.abort()
            self._writers.discard(writer_)
        for pump in pumps:
            pump.cancel()
            self._tasks.discard(pump)

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()

    def cut(self) -> None:
        """End every connection through the proxy and refuse new ones."""
        self.is_cut = True
        for writer in list(self._writers):
            writer.transport.abort()

    def mend(self) -> None:
        self.is_cut = False

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
