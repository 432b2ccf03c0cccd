"""An incremental Server-Sent Events parser shared by every provider protocol.

Fed raw byte chunks as they arrive (never lines, so no line-length limit applies), it
accepts LF, CR and CRLF line ends, `data:` with or without the space, comment lines, and
events or even single characters split across reads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SseEvent:
    event: str  # "message" when the event had no `event:` line
    data: str
    id: str | None = None  # the `id:` line (live event streams resume after it)


class SseParser:
    """Turn byte chunks into complete events, keeping any partial line for the next chunk."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._skip_lf = False  # the last chunk ended in CR: a following LF belongs to it

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Consume a chunk and return the events it completed."""
        events: list[SseEvent] = []
        if not chunk:
            return events
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = False
        buf = self._buffer
        start = len(buf)
        buf += chunk
        pos = 0
        # Search only the new bytes for a line end; the old ones held none.
        search = start
        while True:
            cr = buf.find(b"\r", search)
            lf = buf.find(b"\n", search)
            if cr == -1 and lf == -1:
                break
            if cr == -1 or (lf != -1 and lf < cr):
                end, nxt = lf, lf + 1
            elif cr + 1 < len(buf):
                end, nxt = cr, cr + 2 if buf[cr + 1] == 0x0A else cr + 1
            else:
                end, nxt = cr, cr + 1
                self._skip_lf = True
            self._line(bytes(buf[pos:end]).decode("utf-8", "replace"), events)
            pos = search = nxt
        del buf[:pos]
        return events

    def _line(self, line: str, events: list[SseEvent]) -> None:
        if not line:
            if self._data:
                events.append(SseEvent(self._event or "message", "\n".join(self._data), self._id))
            self._event = ""
            self._data = []
            self._id = None
            return
        if line.startswith(":"):
            return  # a comment (keep-alive)
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value


async def iter_events(chunks: AsyncIterator[bytes]) -> AsyncIterator[SseEvent]:
    """Yield the events of a byte stream such as `response.content.iter_any()`."""
    parser = SseParser()
    async for chunk in chunks:
        for event in parser.feed(chunk):
            yield event
