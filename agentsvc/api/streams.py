"""The open streams: registries shutdown ends cleanly, and what streaming handlers run on.

`OpenStreams` holds the chat turns in flight, `EventStreams` the GET event streams (and
notices within a second when their client has gone). Both are built in runtime.py and
ended by its shutdown step; `StreamingDeps` carries them and the limits to the
streaming handlers under one key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from prometheus_client import Gauge

    from agentsvc.api.routing import Call
    from agentsvc.config import ChatSettings, HandoffSettings
    from agentsvc.ratelimit import Limiter

SHUTDOWN_GRACE_SECONDS = 5.0
# How often closed connections are looked for (an idle stream writes nothing for a while).
GONE_CHECK_SECONDS = 1.0


class OpenStreams:
    """The chat streams in flight, so shutdown can end them cleanly."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task] = set()
        self.closing = False

    def add(self, task: asyncio.Task) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def __len__(self) -> int:
        return len(self._tasks)

    async def close_all(self) -> None:
        """Stop every turn (each stores what it produced) and wait for the streams to end."""
        self.closing = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=SHUTDOWN_GRACE_SECONDS)


class EventStreams(OpenStreams):
    """The open event streams: ended at shutdown, and soon after their client has gone.

    An idle stream only learns that its client left when it next writes; one task looks
    at every stream's connection each second instead, so a visitor who closed the page
    counts as gone (their replies go by e-mail) within a second, not a keep-alive later.
    """

    def __init__(self) -> None:
        super().__init__()
        self._watched: dict[asyncio.Task, web.BaseRequest] = {}
        self._watcher: asyncio.Task | None = None

    def watch(self, task: asyncio.Task, request: web.BaseRequest) -> None:
        self.add(task)
        self._watched[task] = request
        task.add_done_callback(lambda t: self._watched.pop(t, None))
        if self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._look())

    async def _look(self) -> None:
        try:
            while self._watched:
                await asyncio.sleep(GONE_CHECK_SECONDS)
                for task, request in list(self._watched.items()):
                    transport = request.transport
                    if transport is None or transport.is_closing():
                        task.cancel()
        finally:
            self._watcher = None

    async def close_all(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
        await super().close_all()


@dataclass(frozen=True, slots=True)
class StreamingDeps:
    """What the streaming handlers (`POST /chat`, the GET event streams) run on, besides the
    chat turns: the registries, the limiter and their settings (built in runtime.py)."""

    chat_streams: OpenStreams
    event_streams: EventStreams
    limiter: Limiter
    open_streams: Gauge  # the /metrics gauge of open chat streams
    chat: ChatSettings
    handoff: HandoffSettings
    public_chat_per_minute: int
    # identity.verify_end_user with the database, the secret box and the token lifetime bound
    verify_end_user: Callable[..., Awaitable[dict[str, Any] | None]]


def streaming_of(call: Call) -> StreamingDeps:
    """What the app's streaming handlers run on (chat, event streams, evaluation runs)."""
    from agentsvc.api import app_keys  # app_keys names this module's types

    return call.app[app_keys.streaming_key]
