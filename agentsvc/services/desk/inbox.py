"""The inbox list of the support desk, and marking a conversation read."""

from __future__ import annotations

from agentsvc.db import Database, Tx
from agentsvc.ids import now_iso
from agentsvc.store import inbox as inbox_store
from agentsvc.store.conversations import Conversation
from agentsvc.store.inbox import InboxQuery, InboxRow


async def inbox_page(db: Database, query: InboxQuery, limit: int) -> tuple[list[InboxRow], bool]:
    """A page of the member's view of the team's inbox, and whether more follow."""
    search = query.search.strip().lower() if query.search else None
    if search != query.search:
        query = InboxQuery(query.team_id, query.user_id, query.view, search or None, query.after)
    return await inbox_store.page(db.reader, query, limit)


async def mark_read(db: Database, conv: Conversation, user_id: str) -> None:
    """The member has read the conversation (its unread count is 0 for them)."""
    now = now_iso()

    async def write(tx: Tx) -> None:
        await inbox_store.mark_read(tx, conv.id, user_id, now)

    await db.write_batched(write)
