"""Members' private notes on a conversation.

A note is written with its event in the conversation's log (kind 'note', outside the inbox)
in one transaction, then announced, so a member following the conversation sees it at once.
Notes live in their own table: the visitor's views and stream, the model's context, exports
and webhooks read messages, never notes.
"""

from __future__ import annotations

from agentsvc.db import Database
from agentsvc.errors import NotFound
from agentsvc.ids import new_id, now_iso
from agentsvc.services import changes
from agentsvc.services.handoff.flow import shown_name_of
from agentsvc.store import conversation_events as events_store
from agentsvc.store import notes as notes_store
from agentsvc.store import team as team_store
from agentsvc.store.conversations import Conversation
from agentsvc.store.notes import Note


async def add_note(db: Database, conv: Conversation, user_id: str, content: str) -> Note:
    """Add a member's private note to the conversation and announce it to members."""
    member = await team_store.find_member(db.reader, conv.team_id, user_id)
    if member is None:
        raise NotFound("Conversation not found")
    name = await shown_name_of(db, conv.team_id, member.name)
    note = Note(new_id("note"), conv.id, conv.team_id, user_id, name, content, now_iso())
    async with db.write() as tx:
        await notes_store.insert(tx, note)
        await events_store.insert_note_event(tx, conv.team_id, conv.agent_id, note)
        stored = await notes_store.get(tx, note.id)
    await db.announce(changes.conversation(conv.team_id, conv.id))
    assert stored is not None
    return stored


async def list_notes(db: Database, conversation_id: str) -> list[Note]:
    """The conversation's notes, oldest first."""
    return await notes_store.list_for_conversation(db.reader, conversation_id)
