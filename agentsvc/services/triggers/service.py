"""The triggers feature as the API uses it: an agent's proactive triggers, their stats, the
widget's view of them, and the events the widget reports."""

from __future__ import annotations

import asyncio
from typing import Any

from agentsvc.db import Database
from agentsvc.services.triggers import definitions
from agentsvc.services.triggers.events import EventWriter
from agentsvc.store.trigger_events import Mismatch, TriggerEvent
from agentsvc.store.triggers import Trigger


class TriggersService:
    """Manage a team's triggers and count the events widgets report."""

    def __init__(self, db: Database, events: EventWriter, events_per_minute: int):
        self._db = db
        self._events = events
        # `[ratelimit] trigger_events_per_minute`, per session id and per address.
        self.events_per_minute = events_per_minute

    async def list_triggers(self, team_id: str, agent_id: str) -> list[Trigger]:
        """Return an agent's triggers in execution order."""
        return await definitions.list_triggers(self._db, team_id, agent_id)

    async def create(self, team_id: str, agent_id: str, fields: dict[str, Any]) -> Trigger:
        """Validate and create a trigger of the team's agent."""
        return await definitions.create_trigger(self._db, team_id, agent_id, fields)

    async def get(self, team_id: str, trigger_id: str) -> Trigger:
        """Return the team's trigger or raise NotFound."""
        return await definitions.get_trigger(self._db, team_id, trigger_id)

    async def update(self, team_id: str, trigger_id: str, fields: dict[str, Any]) -> Trigger:
        """Apply a partial update, validated as a whole."""
        return await definitions.update_trigger(self._db, team_id, trigger_id, fields)

    async def toggle(self, team_id: str, trigger_id: str) -> Trigger:
        """Invert a trigger's isEnabled."""
        return await definitions.toggle_trigger(self._db, team_id, trigger_id)

    async def delete(self, team_id: str, trigger_id: str) -> None:
        """Delete a trigger with its stats."""
        await definitions.delete_trigger(self._db, team_id, trigger_id)

    async def stats(self, team_id: str, agent_id: str) -> dict[str, dict[str, int]]:
        """Fired and converted counts of every trigger of the team's agent."""
        return await definitions.trigger_stats(self._db, team_id, agent_id)

    async def widget_triggers(self, agent_id: str) -> list[Trigger]:
        """The enabled triggers of an agent, as any visitor's widget reads them."""
        return await definitions.widget_triggers(self._db, agent_id)

    def record_event(self, event: TriggerEvent) -> asyncio.Future[str | Mismatch | None]:
        """Queue a widget's event (see `EventWriter.record`: the future resolves when its
        batch commits)."""
        return self._events.record(event)
