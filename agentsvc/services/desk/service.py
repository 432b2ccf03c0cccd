"""The support desk as one object: members' private notes, the team's canned responses,
the inbox list with unread counts, and who the visitor is."""

from __future__ import annotations

from agentsvc.db import Database
from agentsvc.services.desk import inbox, notes
from agentsvc.store.conversations import Conversation
from agentsvc.store.inbox import InboxQuery, InboxRow
from agentsvc.store.notes import Note


class DeskService:
    """What a support desk works with (one instance for the app)."""

    def __init__(self, db: Database):
        self._db = db

    async def add_note(self, conv: Conversation, user_id: str, content: str) -> Note:
        """Add a member's private note (never shown to the visitor or the model)."""
        return await notes.add_note(self._db, conv, user_id, content)

    async def notes(self, conversation_id: str) -> list[Note]:
        """The conversation's private notes, oldest first."""
        return await notes.list_notes(self._db, conversation_id)

    async def inbox(self, query: InboxQuery, limit: int) -> tuple[list[InboxRow], bool]:
        """A page of the member's view of the inbox (waiting ones first), and whether more
        follow."""
        return await inbox.inbox_page(self._db, query, limit)

    async def mark_read(self, conv: Conversation, user_id: str) -> None:
        """The member has read the conversation."""
        await inbox.mark_read(self._db, conv, user_id)
