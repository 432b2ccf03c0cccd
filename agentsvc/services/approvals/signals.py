"""A team's approvals changed: a call is waiting, or one was decided. Announced through the
database (every process hears it: PostgreSQL's NOTIFY), it wakes the turns waiting for a
decision and the inbox streams of that team in this process."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

from agentsvc.db import RESYNC, Database

_TOPIC = "approvals:"


class ApprovalSignals:
    """The waiters of this process, by team (one instance for the app)."""

    def __init__(self, db: Database):
        self._db = db
        self._waiters: dict[str, set[asyncio.Event]] = {}
        db.subscribe(self._on_change)

    def _on_change(self, topic: str) -> None:
        if topic == RESYNC:
            woken = [e for events in self._waiters.values() for e in events]
        elif topic.startswith(_TOPIC):
            woken = list(self._waiters.get(topic[len(_TOPIC) :], ()))
        else:
            return
        for event in woken:
            event.set()

    @contextmanager
    def listen(self, team_id: str) -> Iterator[asyncio.Event]:
        """An event set whenever the team's approvals change (clear it before reading)."""
        event = asyncio.Event()
        self._waiters.setdefault(team_id, set()).add(event)
        try:
            yield event
        finally:
            events = self._waiters.get(team_id)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._waiters[team_id]

    async def changed(self, team_id: str) -> None:
        """Tell every process that the team's approvals changed."""
        await self._db.announce(_TOPIC + team_id)
