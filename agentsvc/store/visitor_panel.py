"""Who the visitor of a conversation is, for the desk's side panel: what the widget told,
and the same visitor's other conversations and form submissions within the team."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.rows import load_json

MAX_LINKED = 20


@dataclass(frozen=True, slots=True)
class VisitorRow:
    page_url: str | None
    referrer: str | None
    language: str | None
    attributes: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class LinkedConversation:
    id: str
    title: str
    status: str
    created_at: str


@dataclass(frozen=True, slots=True)
class LinkedSubmission:
    id: str
    form_name: str
    created_at: str


async def visitor_of(tx: Tx, conversation_id: str) -> VisitorRow:
    row = await tx.fetchone(
        "SELECT page_url, referrer, visitor_language, user_attributes FROM conversations"
        " WHERE id = ?",
        (conversation_id,),
    )
    assert row is not None
    return VisitorRow(row[0], row[1], row[2], load_json(row[3]))


_LINKED = "SELECT id, title, status, created_at FROM conversations WHERE team_id = ? AND id <> ?"


async def conversations_of_verified_user(
    tx: Tx, team_id: str, user_ref: str, conversation_id: str
) -> list[LinkedConversation]:
    """The team's other conversations of the same verified user, newest first."""
    rows = await tx.fetchall(
        f"{_LINKED} AND user_ref = ? AND user_verified_by IS NOT NULL"
        " ORDER BY created_at DESC, id DESC LIMIT ?",
        (team_id, conversation_id, user_ref, MAX_LINKED),
    )
    return [LinkedConversation(*r) for r in rows]


async def conversations_of_session(
    tx: Tx, team_id: str, session_id: str, conversation_id: str
) -> list[LinkedConversation]:
    """The team's other conversations of the same widget session, newest first."""
    rows = await tx.fetchall(
        f"{_LINKED} AND session_id = ? ORDER BY created_at DESC, id DESC LIMIT ?",
        (team_id, conversation_id, session_id, MAX_LINKED),
    )
    return [LinkedConversation(*r) for r in rows]


async def submissions_of(
    tx: Tx, team_id: str, conversation_ids: list[str], session_id: str | None
) -> list[LinkedSubmission]:
    """The team's form submissions made in these conversations (or in this widget session),
    newest first."""
    marks = ", ".join("?" for _ in conversation_ids)
    where = f"conversation_id IN ({marks})"
    args: list[Any] = [team_id, *conversation_ids]
    if session_id is not None:
        where = f"({where} OR session_id = ?)"
        args.append(session_id)
    rows = await tx.fetchall(
        f"SELECT id, tool_name, created_at FROM form_submissions WHERE team_id = ? AND {where}"  # noqa: S608
        " ORDER BY created_at DESC, id DESC LIMIT ?",
        (*args, MAX_LINKED),
    )
    return [LinkedSubmission(*r) for r in rows]
