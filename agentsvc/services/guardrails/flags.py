"""The review flag a replaced answer leaves on its conversation, cleared by a member."""

from __future__ import annotations

from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.services import changes
from agentsvc.store import guardrails as guardrails_store


async def clear_flag(db: Database, team_id: str, conversation_id: str) -> None:
    """Mark the team's conversation reviewed (its flag cleared); NotFound otherwise."""
    async with db.write() as tx:
        if not await guardrails_store.clear_flag(tx, team_id, conversation_id):
            raise NotFound("Conversation not found")
    await db.announce(changes.conversation(team_id, conversation_id))
