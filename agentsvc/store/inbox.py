"""The team's inbox as the support desk lists it, and when each member last read each
conversation.

A page is two keyset walks over partial indexes, each a bounded read whatever the team's
size: first the conversations waiting for a person, the longest wait first
(`conversations_team_waiting`), then the rest of the view by latest activity, newest first
(`conversations_team_human`, or `conversations_assignee` for a member's own). Only the page's
rows are then joined with their agent, assignee, last message and unread count, in the
same statement: no query per row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx

PREVIEW_CHARS = 140
VIEWS = ("mine", "unassigned", "waiting", "all")


@dataclass(frozen=True, slots=True)
class InboxRow:
    id: str
    title: str
    agent_id: str
    agent_name: str
    status: str
    assignee_id: str | None
    assignee_name: str | None
    assignee_avatar_id: str | None
    user_name: str | None
    user_email: str | None
    user_verified_by: str | None
    handoff_at: str | None
    last_preview: str | None
    last_role: str | None
    last_author_id: str | None
    last_created_at: str | None
    unread: int
    updated_at: str
    group: int  # 0: waiting (ordered by handoff_at), 1: the rest (by updated_at)


@dataclass(frozen=True, slots=True)
class InboxQuery:
    """Whose inbox, which view, the words searched, and where the page starts."""

    team_id: str
    user_id: str
    view: str
    search: str | None = None  # lower-cased words searched in title, name and e-mail
    after: tuple[int, str, str] | None = None  # (group, key, id) of the last row seen


# (condition of group 0, condition of group 1 or None) per view; `?` is the caller.
_GROUPS: dict[str, tuple[str, str | None]] = {
    "all": ("c.status = 'waiting'", "c.status = 'human'"),
    "waiting": ("c.status = 'waiting'", None),
    "unassigned": (
        "c.status = 'waiting' AND c.assignee_id IS NULL",
        "c.status = 'human' AND c.assignee_id IS NULL",
    ),
    # Asking for a person clears the assignee (services/handoff/flow.py), so a member's own
    # are never waiting: one walk of the member's index by activity.
    "mine": ("", "c.assignee_id = ? AND c.status <> 'closed'"),
}

_DETAILS = f"""
    SELECT c.id, c.title, c.agent_id, a.name, c.status, c.assignee_id,
        CASE WHEN c.assignee_id IS NULL THEN NULL
             ELSE COALESCE(NULLIF(TRIM(u.name), ''), t.name) END,
        (SELECT av.id FROM avatars av WHERE av.user_id = c.assignee_id),
        c.user_name, c.user_email, c.user_verified_by, c.handoff_at,
        substr(lm.content, 1, {PREVIEW_CHARS}), lm.role, lm.author_id, lm.created_at,
        (SELECT COUNT(*) FROM messages um WHERE um.conversation_id = c.id AND um.role = 'user'
            AND um.created_at > COALESCE(r.read_at, '')),
        c.updated_at, page.grp
    FROM page
    JOIN conversations c ON c.id = page.id
    JOIN agents a ON a.id = c.agent_id
    JOIN teams t ON t.id = c.team_id
    LEFT JOIN users u ON u.id = c.assignee_id
    LEFT JOIN conversation_reads r ON r.conversation_id = c.id AND r.user_id = ?
    LEFT JOIN messages lm ON lm.id = (
        SELECT m2.id FROM messages m2 WHERE m2.conversation_id = c.id
        ORDER BY m2.created_at DESC, m2.rowid DESC LIMIT 1)
    ORDER BY page.grp, page.pos
"""


def _search(query: InboxQuery) -> tuple[str, list[Any]]:
    if not query.search:
        return "", []
    escaped = query.search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    pattern = f"%{escaped}%"
    clause = (
        " AND (LOWER(c.title) LIKE ? ESCAPE '\\' OR LOWER(COALESCE(c.user_name, '')) LIKE ?"
        " ESCAPE '\\' OR LOWER(COALESCE(c.user_email, '')) LIKE ? ESCAPE '\\')"
    )
    return clause, [pattern, pattern, pattern]


async def _group_ids(tx: Tx, query: InboxQuery, group: int, limit: int) -> list[tuple[str, str]]:
    """Up to `limit` (id, key) of one group of the view, in order, after the cursor."""
    condition = _GROUPS[query.view][group]
    if not condition or limit <= 0:
        return []
    args: list[Any] = [query.team_id]
    args += [query.user_id] * condition.count("?")
    where = f"c.team_id = ? AND {condition}"
    key, order = ("c.handoff_at", "ASC") if group == 0 else ("c.updated_at", "DESC")
    search, search_args = _search(query)
    where += search
    args += search_args
    after = query.after
    if after is not None and after[0] == group:
        where += f" AND ({key}, c.id) {'>' if group == 0 else '<'} (?, ?)"
        args += [after[1], after[2]]
    rows = await tx.fetchall(
        f"SELECT c.id, {key} FROM conversations c WHERE {where}"  # noqa: S608
        f" ORDER BY {key} {order}, c.id {order} LIMIT ?",
        (*args, limit),
    )
    return [(r[0], r[1] or "") for r in rows]


async def page(tx: Tx, query: InboxQuery, limit: int) -> tuple[list[InboxRow], bool]:
    """A page of the view (at most `limit` rows) and whether more follow."""
    start_group = query.after[0] if query.after is not None else 0
    picked: list[tuple[int, str]] = []
    for group in (0, 1):
        if group < start_group:
            continue
        ids = await _group_ids(tx, query, group, limit + 1 - len(picked))
        picked += [(group, i) for i, _ in ids]
    more = len(picked) > limit
    picked = picked[:limit]
    if not picked:
        return [], False
    values = ", ".join("(?, CAST(? AS INTEGER), CAST(? AS INTEGER))" for _ in picked)
    args: list[Any] = []
    for pos, (group, conv_id) in enumerate(picked):
        args += [conv_id, group, pos]
    rows = await tx.fetchall(
        f"WITH page (id, grp, pos) AS (VALUES {values}) {_DETAILS}",  # noqa: S608
        (*args, query.user_id),
    )
    return [InboxRow(*r) for r in rows], more


async def mark_read(tx: Tx, conversation_id: str, user_id: str, now: str) -> None:
    """The member has read the conversation up to now."""
    await tx.execute(
        "INSERT INTO conversation_reads (conversation_id, user_id, read_at) VALUES (?, ?, ?)"
        " ON CONFLICT (conversation_id, user_id) DO UPDATE SET read_at = excluded.read_at",
        (conversation_id, user_id, now),
    )
