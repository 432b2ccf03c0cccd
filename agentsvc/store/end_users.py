"""Finding one end user's data in a team: the conversations that name them (their widget
`userId`, an e-mail address they declared or left for a reply, or that their messages
mention, each with how the conversation's user was verified), the submissions of those
conversations and sessions, the mail kept for them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from agentsvc.db import Tx

CHUNK = 500  # ids per IN (...) list


@dataclass(frozen=True, slots=True)
class Trace:
    """What a conversation says about who its end user is."""

    id: str
    user_ref: str | None
    user_email: str | None
    contact_email: str | None
    session_id: str | None
    verified_by: str | None  # how the user was vouched for (services.agents.identity)


@dataclass(frozen=True, slots=True)
class KeptMail:
    id: str
    to_address: str
    subject: str
    sealed_body: str


def chunks(values: Iterable[str], size: int = CHUNK) -> list[list[str]]:
    """Values in lists of at most `size` (for IN lists), duplicates dropped."""
    unique = list(dict.fromkeys(values))
    return [unique[i : i + size] for i in range(0, len(unique), size)]


def like_pattern(text: str) -> str:
    """A LIKE pattern (ESCAPE '\\') that finds `text` anywhere, lower-cased."""
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_TRACE = (
    "SELECT id, user_ref, user_email, contact_email, session_id, user_verified_by"
    " FROM conversations"
)


async def conversations_naming(
    tx: Tx, team_id: str, user_refs: list[str], emails: list[str]
) -> list[Trace]:
    """The team's conversations whose end user has one of these ids or e-mail addresses
    (declared, or left for a reply); e-mails are compared lower-cased."""
    found: dict[str, Trace] = {}
    for refs in chunks(user_refs):
        marks = ", ".join("?" for _ in refs)
        rows = await tx.fetchall(
            f"{_TRACE} WHERE team_id = ? AND user_ref IN ({marks})", (team_id, *refs)
        )
        found.update((r[0], Trace(*r)) for r in rows)
    for addresses in chunks(e.lower() for e in emails):
        marks = ", ".join("?" for _ in addresses)
        rows = await tx.fetchall(
            f"{_TRACE} WHERE team_id = ? AND (lower(user_email) IN ({marks})"
            f" OR lower(contact_email) IN ({marks}))",
            (team_id, *addresses, *addresses),
        )
        found.update((r[0], Trace(*r)) for r in rows)
    return list(found.values())


async def conversations_in_sessions(tx: Tx, team_id: str, session_ids: list[str]) -> list[Trace]:
    """The team's conversations started in these widget sessions."""
    found: list[Trace] = []
    for part in chunks(session_ids):
        marks = ", ".join("?" for _ in part)
        rows = await tx.fetchall(
            f"{_TRACE} WHERE team_id = ? AND session_id IN ({marks})", (team_id, *part)
        )
        found += [Trace(*r) for r in rows]
    return found


async def conversations_mentioning(tx: Tx, team_id: str, text: str) -> list[Trace]:
    """The team's conversations with a message that contains `text` (any case)."""
    rows = await tx.fetchall(
        f"{_TRACE} WHERE team_id = ? AND id IN (SELECT m.conversation_id FROM messages m"
        " JOIN conversations c ON c.id = m.conversation_id"
        " WHERE c.team_id = ? AND lower(m.content) LIKE ? ESCAPE '\\')",
        (team_id, team_id, like_pattern(text)),
    )
    return [Trace(*r) for r in rows]


async def submission_ids(
    tx: Tx,
    team_id: str,
    *,
    conversation_ids: list[str],
    session_ids: list[str],
    texts: list[str],
) -> list[str]:
    """Ids of the team's submissions made in these conversations or widget sessions, or
    whose values contain one of `texts` (any case; the caller checks what matched)."""
    found: dict[str, None] = {}
    for column, values in (("conversation_id", conversation_ids), ("session_id", session_ids)):
        for part in chunks(values):
            marks = ", ".join("?" for _ in part)
            rows = await tx.fetchall(
                f"SELECT id FROM form_submissions WHERE team_id = ? AND {column} IN ({marks})",
                (team_id, *part),
            )
            found.update((r[0], None) for r in rows)
    for text in dict.fromkeys(texts):
        rows = await tx.fetchall(
            "SELECT id FROM form_submissions WHERE team_id = ?"
            " AND lower(form_data) LIKE ? ESCAPE '\\'",
            (team_id, like_pattern(text)),
        )
        found.update((r[0], None) for r in rows)
    return list(found)


async def count_rows(tx: Tx, table: str, column: str, ids: list[str]) -> int:
    """How many rows of `table` have `column` among `ids` (table and column are constants
    of the caller, never input)."""
    total = 0
    for part in chunks(ids):
        marks = ", ".join("?" for _ in part)
        total += int(
            await tx.fetchval(f"SELECT COUNT(*) FROM {table} WHERE {column} IN ({marks})", part)
        )
    return total


async def count_deliveries_of_events(tx: Tx, conversation_ids: list[str], sub_ids: list[str]):
    """(events, deliveries) about these conversations and submissions."""
    events = deliveries = 0
    for column, ids in (("conversation_id", conversation_ids), ("submission_id", sub_ids)):
        for part in chunks(ids):
            marks = ", ".join("?" for _ in part)
            row = await tx.fetchone(
                "SELECT COUNT(DISTINCT e.id), COUNT(d.id) FROM webhook_events e"
                " LEFT JOIN webhook_deliveries d ON d.event_id = e.id"
                f" WHERE e.{column} IN ({marks})",
                part,
            )
            events += int(row[0])
            deliveries += int(row[1])
    return events, deliveries


async def form_event_ids(tx: Tx, team_id: str, session_ids: list[str]) -> list[int]:
    """The form impressions and starts of these widget sessions, on the team's agents."""
    found: list[int] = []
    for part in chunks(session_ids):
        marks = ", ".join("?" for _ in part)
        rows = await tx.fetchall(
            "SELECT e.id FROM form_events e JOIN agents a ON a.id = e.agent_id"
            f" WHERE a.team_id = ? AND e.session_id IN ({marks})",
            (team_id, *part),
        )
        found += [int(r[0]) for r in rows]
    return found


async def delete_form_events(tx: Tx, ids: list[int]) -> None:
    for i in range(0, len(ids), CHUNK):
        part = ids[i : i + CHUNK]
        marks = ", ".join("?" for _ in part)
        await tx.execute(f"DELETE FROM form_events WHERE id IN ({marks})", part)


async def kept_mail(tx: Tx) -> list[KeptMail]:
    """Every message of the mail outbox (kept only when SMTP did not take it)."""
    rows = await tx.fetchall("SELECT id, to_address, subject, sealed_body FROM mail_outbox")
    return [KeptMail(*r) for r in rows]


async def delete_mail(tx: Tx, ids: list[str]) -> None:
    for part in chunks(ids):
        marks = ", ".join("?" for _ in part)
        await tx.execute(f"DELETE FROM mail_outbox WHERE id IN ({marks})", part)


async def users_with_emails(tx: Tx, emails: list[str]) -> set[str]:
    """Which of these addresses (lower-cased) are accounts of the service."""
    found: set[str] = set()
    for part in chunks(e.lower() for e in emails):
        marks = ", ".join("?" for _ in part)
        rows = await tx.fetchall(
            f"SELECT lower(email) FROM users WHERE lower(email) IN ({marks})", part
        )
        found |= {r[0] for r in rows}
    return found


async def member_emails(tx: Tx, team_id: str) -> set[str]:
    """The team's members' addresses, lower-cased."""
    rows = await tx.fetchall(
        "SELECT lower(u.email) FROM users u JOIN memberships m ON m.user_id = u.id"
        " WHERE m.team_id = ?",
        (team_id,),
    )
    return {r[0] for r in rows}
