"""The team's conversations as one object: list and search, read, delete, rate a message
(the widget's visitor or the team), and clear a guardrail's review flag."""

from __future__ import annotations

from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.services.channels import email_files
from agentsvc.services.chat import conversations
from agentsvc.services.chat.conversations import Feedback, ListFilters, Page, PageAt
from agentsvc.services.events.emitter import Emitter
from agentsvc.services.guardrails import flags as guardrail_flags
from agentsvc.storage import FileMissing, FileStore, Reading
from agentsvc.store import attachments as attachments_store
from agentsvc.store.attachments import Attachment
from agentsvc.store.conversations import Conversation, StoredMessage


class ConversationsService:
    """Reading and rating conversations (one instance for the app)."""

    def __init__(
        self, db: Database, emitter: Emitter | None = None, files: FileStore | None = None
    ):
        self._db = db
        self._emitter = emitter
        self._files = files  # where e-mails' attachments are kept

    async def page(
        self, team_id: str, agent_id: str, at: PageAt, filters: ListFilters | None = None
    ) -> Page:
        """A page of an agent's conversations (newest first) that the filters keep, with
        the total."""
        return await conversations.list_conversations(self._db, team_id, agent_id, at, filters)

    async def get(
        self, team_id: str, conversation_id: str
    ) -> tuple[Conversation, list[StoredMessage]]:
        """The team's conversation with its messages in order, or NotFound."""
        return await conversations.get_conversation(self._db, team_id, conversation_id)

    async def delete(self, team_id: str, conversation_id: str) -> None:
        """Delete the team's conversation and its messages (and its files), or raise
        NotFound."""
        folders = await attachments_store.folders_of_conversations(
            self._db.reader, [conversation_id]
        )
        await conversations.delete_conversation(self._db, team_id, conversation_id)
        if self._files is not None:
            await email_files.remove_unlisted(self._db, self._files, folders)

    async def clear_flag(self, team_id: str, conversation_id: str) -> None:
        """Mark the team's conversation reviewed: the flag a guardrail left cleared."""
        await guardrail_flags.clear_flag(self._db, team_id, conversation_id)

    async def rate(
        self, feedback: Feedback, *, team_id: str | None, session_id: str | None
    ) -> None:
        """Rate a message (the team's key or session, or the widget session that started
        the conversation)."""
        await conversations.rate_message(
            self._db, self._emitter, feedback, team_id=team_id, session_id=session_id
        )

    async def attachments(self, conversation_id: str) -> dict[str, list[Attachment]]:
        """The files of a conversation's messages (one the caller may read), by message."""
        found: dict[str, list[Attachment]] = {}
        for row in await attachments_store.of_conversation(self._db.reader, conversation_id):
            found.setdefault(row.message_id, []).append(row)
        return found

    async def attachment(
        self, team_id: str, conversation_id: str, attachment_id: str
    ) -> tuple[Attachment, Reading]:
        """One file of the team's conversation, opened to be read, or NotFound."""
        row = await attachments_store.get(self._db.reader, team_id, conversation_id, attachment_id)
        if row is None or self._files is None:
            raise NotFound("No such attachment in this conversation")
        try:
            return row, await self._files.open(email_files.key_of(row.folder, row.file))
        except FileMissing:
            raise NotFound("No such attachment in this conversation") from None
