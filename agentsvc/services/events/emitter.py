"""Emitting events to a team's webhooks, in the transaction of the change they describe.

A writer asks `await emitter.for_team(team_id)` before its unit of work and, inside it,
`await emission.emit(tx, type, data, ...)`; after the commit, `emission.sent()` wakes the
delivery worker. A team with no webhook for an event pays a dictionary lookup: the team's
subscriptions (event type -> webhook ids) are cached, and the cache entry is dropped when a
webhook of the team is created or deleted, in every process (`changes.webhooks`). A load
that raced with such a change is not kept (the team's generation moved on meanwhile).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from agentsvc.db import Database, Tx
from agentsvc.ids import new_id, now_iso
from agentsvc.store import webhook_deliveries as deliveries_store
from agentsvc.store import webhooks as webhooks_store

CACHE_MAX_TEAMS = 10_000

Subscriptions = dict[str, tuple[str, ...]]  # event type -> webhook ids


class Emission:
    """The events of one unit of work for one team."""

    __slots__ = ("_emitter", "_targets", "team_id", "emitted")

    def __init__(self, emitter: Emitter | None, team_id: str, targets: Subscriptions):
        self._emitter = emitter
        self._targets = targets
        self.team_id = team_id
        self.emitted = 0

    def wants(self, event_type: str) -> bool:
        return event_type in self._targets

    async def emit(
        self,
        tx: Tx,
        event_type: str,
        data: Callable[[], dict[str, Any]],
        *,
        conversation_id: str | None = None,
        submission_id: str | None = None,
    ) -> None:
        """Write the event and one delivery per webhook that wants it (nothing when none
        does: `data` is not even built)."""
        webhook_ids = self._targets.get(event_type)
        if not webhook_ids:
            return
        event_id = new_id("event")
        now = now_iso()
        payload = orjson.dumps(
            {"id": event_id, "type": event_type, "timestamp": now, "data": data()}
        ).decode()
        await deliveries_store.insert_event(
            tx,
            event_id=event_id,
            team_id=self.team_id,
            event_type=event_type,
            payload=payload,
            conversation_id=conversation_id,
            submission_id=submission_id,
            now=now,
        )
        await deliveries_store.insert_deliveries(
            tx,
            event_id=event_id,
            team_id=self.team_id,
            targets=[(new_id("webhook_delivery"), w) for w in webhook_ids],
            now=now,
        )
        self.emitted += 1

    def sent(self) -> None:
        """After the commit: have the delivery worker send what was written."""
        if self.emitted and self._emitter is not None:
            self._emitter.wake()


NOTHING = Emission(None, "", {})  # a team with no webhooks: every emit returns at once


class Emitter:
    """The subscriptions cache and the worker's wake-up; one per process."""

    def __init__(self, db: Database, wake: Callable[[datetime], None] | None = None):
        self._db = db
        self._wake = wake
        self._subscriptions: dict[str, Subscriptions] = {}
        self._generation: dict[str, int] = {}
        self._epoch = 0  # moves on when every entry is forgotten at once

    def attach_worker(self, wake: Callable[[datetime], None]) -> None:
        """Who sends the deliveries written (the outbox worker's wake-up)."""
        self._wake = wake

    async def for_team(self, team_id: str) -> Emission:
        """The team's emission for one unit of work (NOTHING when it has no webhooks)."""
        targets = self._subscriptions.get(team_id)
        if targets is None:
            targets = await self._load(team_id)
        return Emission(self, team_id, targets) if targets else NOTHING

    async def _load(self, team_id: str) -> Subscriptions:
        seen = (self._epoch, self._generation.get(team_id, 0))
        targets = await webhooks_store.subscriptions(self._db.reader, team_id)
        if (self._epoch, self._generation.get(team_id, 0)) == seen:
            if len(self._subscriptions) >= CACHE_MAX_TEAMS:
                self._subscriptions.clear()
            self._subscriptions[team_id] = targets
        return targets

    def forget(self, team_id: str) -> None:
        """A webhook of the team was created or deleted."""
        self._subscriptions.pop(team_id, None)
        self._generation[team_id] = self._generation.get(team_id, 0) + 1
        if len(self._generation) >= CACHE_MAX_TEAMS:
            self.clear()

    def clear(self) -> None:
        """Forget every team (anything may have changed)."""
        self._subscriptions.clear()
        self._generation.clear()
        self._epoch += 1

    def wake(self) -> None:
        if self._wake is not None:
            self._wake(datetime.now(UTC))
