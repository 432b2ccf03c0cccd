"""What a guardrail's hit leaves behind, in the transaction of the message it concerns:
the day's counter of each kind, a note in the conversation's timeline (members only, never
the matched text), and the review flag when an answer was replaced."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from agentsvc.db import Database, Tx
from agentsvc.ids import new_id, now_iso
from agentsvc.services import changes
from agentsvc.store import conversation_events as events_store
from agentsvc.store import guardrails as guardrails_store
from agentsvc.store import notes as notes_store
from agentsvc.store.conversations import Conversation
from agentsvc.store.notes import Note

AUTHOR = "Guardrails"  # the name notes are shown under (no member wrote them)
# Every kind a hit is counted as, in the order the analytics list them.
HIT_KINDS = ("email", "phone", "card", "iban", "pattern", "blocked", "mustNotSay", "tooLong")
_REDACTED_WORDS = {
    "email": ("e-mail address", "e-mail addresses"),
    "phone": ("phone number", "phone numbers"),
    "card": ("card number", "card numbers"),
    "iban": ("IBAN", "IBANs"),
    "pattern": ("match of your own patterns", "matches of your own patterns"),
}


def redacted_words(counts: Counter[str]) -> str:
    """`1 e-mail address and 2 card numbers`."""
    parts = [
        f"{counts[kind]} {_REDACTED_WORDS[kind][counts[kind] != 1]}"
        for kind in HIT_KINDS
        if kind in _REDACTED_WORDS and counts[kind]
    ]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def one_note(sentences: list[str]) -> tuple[str, ...]:
    """A message's findings as one note (notes of one moment would come in any order)."""
    return (" ".join(sentences),) if sentences else ()


@dataclass(frozen=True, slots=True)
class Trace:
    """The hits of one message: counted by kind, said in notes, and whether the
    conversation is flagged for review."""

    hits: Counter[str] = field(default_factory=Counter)
    notes: tuple[str, ...] = ()
    flag: bool = False

    def __bool__(self) -> bool:
        return bool(self.hits or self.notes or self.flag)


async def write_in(tx: Tx, conv: Conversation, trace: Trace, at: str) -> None:
    """Record a message's trace, inside the write that took `lock_team` and stored it."""
    await guardrails_store.add_hits(tx, conv.agent_id, at[:10], trace.hits.items())
    if trace.flag:
        await guardrails_store.flag(tx, conv.id, at)
    for text in trace.notes:
        note = Note(new_id("note"), conv.id, conv.team_id, None, AUTHOR, text, at)
        await notes_store.insert(tx, note)
        await events_store.insert_note_event(tx, conv.team_id, conv.agent_id, note)


async def refused(
    db: Database, agent_id: str, team_id: str, conv: Conversation | None, text: str
) -> None:
    """Count a visitor's message refused as too long; note it in its conversation, if any."""
    at = now_iso()

    async def write(tx: Tx) -> None:
        await events_store.lock_team(tx, team_id)  # first, as every conversation write
        await guardrails_store.add_hits(tx, agent_id, at[:10], [("tooLong", 1)])
        if conv is not None:
            await write_in(tx, conv, Trace(notes=(text,)), at)

    await db.write_batched(write)
    if conv is not None:
        await db.announce(changes.conversation(team_id, conv.id))
