"""The exports feature as the API uses it: an agent's conversations and form submissions as
downloads, a few of a team's at once, each recorded in the audit log."""

from __future__ import annotations

from typing import Any

from agentsvc.config import ExportSettings
from agentsvc.db import Database
from agentsvc.ratelimit import Limiter
from agentsvc.services import audit
from agentsvc.services.audit import Actor
from agentsvc.services.chat.conversations import ListFilters
from agentsvc.services.exports import conversations, submissions
from agentsvc.services.exports.conversations import ConversationExport
from agentsvc.services.exports.submissions import SubmissionExport, SubmissionFilter


class ExportsService:
    """Prepare exports, hold a team's export slots and record each export."""

    def __init__(
        self, db: Database, limiter: Limiter, settings: ExportSettings, currency: str = "USD"
    ):
        self._db = db
        self._limiter = limiter
        self._batch_rows = settings.batch_rows
        self._currency = currency  # of the conversations' costs (services/usage/prices.py)
        self.max_per_team = settings.max_per_team  # a team's exports running at once

    async def conversations(
        self, team_id: str, agent_id: str, filters: ListFilters
    ) -> ConversationExport:
        """Check the agent and the filters and return the conversations' export."""
        return await conversations.conversation_export(
            self._db, team_id, agent_id, filters, self._batch_rows, self._currency
        )

    async def submissions(
        self, team_id: str, agent_id: str, wanted: SubmissionFilter
    ) -> SubmissionExport:
        """Check the agent and return the form submissions' export."""
        return await submissions.submission_export(
            self._db, team_id, agent_id, wanted, self._batch_rows
        )

    async def hold_slot(self, team_id: str) -> bool:
        """Take one of the team's export slots; False when all are in use."""
        return await self._limiter.hold(_slot(team_id), self.max_per_team)

    async def release_slot(self, team_id: str) -> None:
        """Give back a slot `hold_slot` took."""
        await self._limiter.release(_slot(team_id))

    async def record(
        self, actor: Actor, action: str, agent_id: str, label: str, details: dict[str, Any]
    ) -> None:
        """Record an export of the agent's data in the audit log."""
        await audit.record(
            self._db,
            actor,
            action,
            target_type="agent",
            target_id=agent_id,
            label=label,
            details=details,
        )


def _slot(team_id: str) -> str:
    return f"exports:{team_id}"
