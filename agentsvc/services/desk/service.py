"""The support desk as one object: members' private notes, the team's canned responses,
the inbox list with unread counts, and who the visitor is."""

from __future__ import annotations

from agentsvc.db import Database
from agentsvc.services.desk import canned, inbox, notes, visitor
from agentsvc.services.desk.canned import CannedChange
from agentsvc.services.desk.visitor import VisitorPanel
from agentsvc.services.handoff import flow
from agentsvc.store.canned_responses import CannedResponse
from agentsvc.store.conversations import Conversation
from agentsvc.store.inbox import InboxQuery, InboxRow
from agentsvc.store.notes import Note


class DeskService:
    """What a support desk works with (one instance for the app)."""

    def __init__(self, db: Database):
        self._db = db

    async def conversation(self, team_id: str, conversation_id: str) -> Conversation:
        """The team's conversation, or NotFound."""
        return await flow.for_team(self._db, team_id, conversation_id)

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

    async def canned_responses(self, team_id: str) -> list[CannedResponse]:
        """The team's canned responses by shortcut."""
        return await canned.list_canned(self._db, team_id)

    async def create_canned(self, team_id: str, change: CannedChange) -> CannedResponse:
        """Add a canned response (a shortcut unique in the team, a bounded number)."""
        return await canned.create_canned(self._db, team_id, change)

    async def update_canned(
        self, team_id: str, canned_id: str, change: CannedChange
    ) -> CannedResponse:
        """Change a canned response."""
        return await canned.update_canned(self._db, team_id, canned_id, change)

    async def delete_canned(self, team_id: str, canned_id: str) -> None:
        """Delete a canned response."""
        await canned.delete_canned(self._db, team_id, canned_id)

    async def visitor(self, conv: Conversation) -> VisitorPanel:
        """Who the visitor is, and their other conversations and submissions (linked by a
        verified user id, else by the widget session)."""
        return await visitor.visitor_panel(self._db, conv)
