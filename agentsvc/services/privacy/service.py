"""The privacy feature as the API uses it: everything of one end user, exported or erased."""

from __future__ import annotations

from typing import Any

from agentsvc.db import Database
from agentsvc.mail import Mailer
from agentsvc.services.agents import registry
from agentsvc.services.audit import Actor
from agentsvc.services.privacy import end_users
from agentsvc.services.privacy.end_users import EndUserRef
from agentsvc.services.privacy.search_index import MessageIndexScrubber
from agentsvc.storage import FileStore


class PrivacyService:
    """Export or erase an end user's data in a team (kept mail and files included)."""

    def __init__(
        self, db: Database, mailer: Mailer, index_scrubber: MessageIndexScrubber, files: FileStore
    ):
        self._db = db
        self._mailer = mailer
        self._index_scrubber = index_scrubber
        self._files = files  # submitted files and e-mails' attachments

    async def erase(
        self, actor: Actor, ref: EndUserRef
    ) -> tuple[dict[str, int], list[dict[str, str]]]:
        """Delete everything of the end user in the actor's team, their words in the
        message search index too; return what went, by kind, and the identifiers matched."""
        counts, matched = await end_users.erase(self._db, self._mailer, self._files, actor, ref)
        if counts["messages"]:
            await self._index_scrubber.after_erasure()
        return counts, matched

    async def export(self, actor: Actor, ref: EndUserRef) -> dict[str, Any]:
        """Everything of the end user in the actor's team, as one JSON document."""
        agents = await registry.list_agents(self._db, actor.team_id)
        return await end_users.export(self._db, self._files, actor, ref, agents)
