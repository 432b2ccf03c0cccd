"""An agent's conversations as lists and exports read them: filters, full-text search over
their messages, keyset pages, and the totals of a filtered list.

The search finds messages holding every given word (any form of an English word: FTS5's
porter tokenizer on SQLite, the `english` text search configuration on PostgreSQL), among
the newest `MAX_MATCHES` such messages of the agent, so a word found in a million messages
costs a bounded read. Words reach SQL only as letters and digits, each quoted (SQLite) or
joined with `&` (PostgreSQL): nothing a user types is read as search syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.conversations import ASSIGNEE_JOIN, SELECT_COLUMNS, Conversation

MAX_MATCHES = 10_000  # newest matching messages a search looks at
COUNT_CAP = 10_000  # a filtered total counts this many conversations at most


@dataclass(frozen=True, slots=True)
class ConversationFilter:
    """Conditions on an agent's conversations; None (or empty) means any."""

    status: str | None = None  # handoff status
    words: tuple[str, ...] = ()  # a message holds every word (letters and digits only)
    rating: str | None = None  # "up", "down" or "any": an answer so rated
    created_from: str | None = None  # created at or after (ISO timestamp)
    created_before: str | None = None  # created before (ISO timestamp)
    user_ref: str | None = None  # the identified end user's id
    channel: str | None = None  # "web" or a channel's type
    flagged: bool = False  # a guardrail flagged it for review (not reviewed since)

    @property
    def counted(self) -> bool:
        """Whether the total comes from the counters (no filter, or the status alone)."""
        return not (
            self.words
            or self.rating
            or self.created_from
            or self.created_before
            or self.user_ref
            or self.channel
            or self.flagged
        )


def match_expression(agent_id: str, words: tuple[str, ...]) -> str:
    """The FTS5 query: the agent's scope token AND every word in the message's text."""
    scope = agent_id.encode().hex()  # the token hex(agent_id) (FTS5 folds the case)
    every = " AND ".join(f'"{w}"' for w in words)
    return f'scope : "{scope}" AND content : ({every})'


# The conversations of the newest MAX_MATCHES messages that match (`matched`, a CTE: a
# count reads it too), then their conversations: a page never walks every conversation of
# the agent looking for the ones that match.
_SQLITE_MATCHED = """
WITH matched AS (
    SELECT m.conversation_id
    FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?
          ORDER BY rowid DESC LIMIT ?) AS f
    JOIN messages AS m ON m.rowid = f.rowid)
"""
# PostgreSQL: the agent's matching messages, newest first, by each message's own agent_id
# and stored tsvector (migration 21). For a rare word the planner reads the GIN index on
# (agent_id, search); for a common one it walks the btree on (agent_id, rowid) backwards and
# stops at the LIMIT, about MAX_MATCHES / (the word's share) rows, where the GIN index
# would have returned every match to be sorted (66,666 of them for a word in two messages
# in three: 150 ms, now about 5). The query and the LIMIT are written into the statement
# (`pg_matched`) so that its plan is made for them: with them as parameters, PostgreSQL
# switched to a generic plan after five runs, which read every match again (20 -> 50 ms).
_PG_MATCHED = """
WITH matched AS (
    SELECT m.conversation_id FROM messages AS m
    WHERE m.agent_id = ? AND m.search @@ to_tsquery('english'::regconfig, '{query}')
    ORDER BY m.rowid DESC LIMIT {limit})
"""
_WORD = re.compile(r"[^\W_]+")


def pg_matched(words: tuple[str, ...]) -> str:
    """The matches' CTE for these words, written in: each word must be letters and digits
    only (as the API splits `q`), so none can end the literal or be read as syntax."""
    if not all(_WORD.fullmatch(w) for w in words):
        raise ValueError("search words must be letters and digits only")
    query = " & ".join(words)
    return _PG_MATCHED.replace("{query}", query).replace("{limit}", str(MAX_MATCHES))


_HITS = "(SELECT DISTINCT conversation_id AS id FROM matched) AS hit"
# PostgreSQL: and each hit's conversation by its key too, one lookup per hit (OFFSET 0 keeps
# the planner from turning it into a join). As a join, with statistics that said the agent
# had one conversation (stale, or of other agents), the plan walked all the agent's
# conversations against all the hits: 100 million comparisons for 10,000 of each, 6.6 s.
_PG_HIT_CONVERSATION = "(SELECT * FROM conversations AS hc WHERE hc.id = hit.id OFFSET 0)"


_RATED = {
    "up": "c.rated_up > 0",
    "down": "c.rated_down > 0",
    "any": "(c.rated_up > 0 OR c.rated_down > 0)",
}


@dataclass(frozen=True, slots=True)
class Query:
    """The parts of a statement over the conversations a filter keeps."""

    with_clause: str  # the matches of a search (`matched`), or ""
    source: str  # the FROM clause's tables, conversations as `c`
    where: str
    args: list[Any]  # in the order they appear: the WITH clause's, then the WHERE clause's


def from_where(tx: Tx, agent_id: str, flt: ConversationFilter) -> Query:
    """The WITH, FROM and WHERE clauses of the conversations a filter keeps."""
    args: list[Any] = []
    with_clause = ""
    source = "conversations c"
    if flt.words:
        if tx.dialect == "sqlite":
            # CROSS JOIN: SQLite keeps the matches as the outer loop.
            with_clause = _SQLITE_MATCHED
            source = f"{_HITS} CROSS JOIN conversations c ON c.id = hit.id"
            args += [match_expression(agent_id, flt.words), MAX_MATCHES]
        else:
            with_clause = pg_matched(flt.words)
            source = f"{_HITS} CROSS JOIN LATERAL {_PG_HIT_CONVERSATION} AS c"
            args.append(agent_id)
    where = ["c.agent_id = ?"]
    args.append(agent_id)
    if flt.status is not None:
        where.append("c.status = ?")
        args.append(flt.status)
        if flt.status != "bot":
            # Lets the planner use the partial index of the conversations not with the
            # agent (inserting a new conversation leaves that index alone).
            where.append("c.status <> 'bot'")
    if flt.rating is not None:
        # Each the exact condition of a partial index in list order (schema.sql): a page
        # walks only rated conversations, however few.
        where.append(_RATED[flt.rating])
    if flt.created_from is not None:
        where.append("c.created_at >= ?")
        args.append(flt.created_from)
    if flt.created_before is not None:
        where.append("c.created_at < ?")
        args.append(flt.created_before)
    if flt.user_ref is not None:
        where.append("c.user_ref = ?")
        args.append(flt.user_ref)
    if flt.channel is not None:
        where.append("c.channel = ?")
        args.append(flt.channel)
        if flt.channel != "web":
            where.append("c.channel <> 'web'")  # the partial index of the other channels
    if flt.flagged:
        where.append("c.flagged_at IS NOT NULL")  # the partial index's own condition
    return Query(with_clause, source, " AND ".join(where), args)


def page_sql(query: Query, where: str) -> str:
    """A page of conversations (with message counts), newest first, `LIMIT ? OFFSET ?`."""
    return f"""
        {query.with_clause}
        SELECT {SELECT_COLUMNS},
               (SELECT COUNT(*) FROM messages AS m WHERE m.conversation_id = c.id)
        FROM {query.source} {ASSIGNEE_JOIN}
        WHERE {where}
        ORDER BY c.created_at DESC, c.id DESC
        LIMIT ? OFFSET ?
    """


async def list_for_agent(
    tx: Tx,
    agent_id: str,
    limit: int,
    offset: int,
    after: tuple[str, str] | None = None,
    flt: ConversationFilter | None = None,
) -> tuple[list[Conversation], bool]:
    """A page of the agent's conversations, newest first (`created_at`, then `id`), with
    message counts, and whether more follow. With `after` (the (created_at, id) of the last
    one seen), the page starts after it (keyset: any depth costs the same) and `offset` is
    not used. `flt` keeps only the conversations it describes."""
    query = from_where(tx, agent_id, flt or ConversationFilter())
    where, args = query.where, list(query.args)
    if after is not None:
        where += " AND (c.created_at, c.id) < (?, ?)"
        args += after
        offset = 0
    rows = await tx.fetchall(page_sql(query, where), (*args, limit + 1, offset))
    return [Conversation(*r) for r in rows[:limit]], len(rows) > limit


@dataclass(frozen=True, slots=True)
class SearchPage:
    """A page of a search, with the total of the conversations it keeps (as `count_filtered`
    counts them); None totals when the page is empty (then count separately)."""

    conversations: list[Conversation]
    more: bool
    total: int | None
    capped: bool


async def search_page(
    tx: Tx,
    agent_id: str,
    limit: int,
    offset: int,
    after: tuple[str, str] | None,
    flt: ConversationFilter,
) -> SearchPage:
    """`list_for_agent` for a filter with words, with its totals from the same statement:
    the matches are read once (a search is the costly part), kept, then paged and counted."""
    assert flt.words
    query = from_where(tx, agent_id, flt)
    keyset, args = "", list(query.args)
    if after is not None:
        keyset = "WHERE (kept.created_at, kept.id) < (?, ?)"
        args += after
        offset = 0
    # `kept` holds keys only: the page's columns (with their lookups of the team and the
    # assignee's avatar) are read for the page's rows, not for every conversation counted.
    rows = await tx.fetchall(
        f"""
        {query.with_clause},
        kept AS (SELECT c.id, c.created_at FROM {query.source} WHERE {query.where}),
        shown AS (
            SELECT id, created_at FROM kept {keyset}
            ORDER BY created_at DESC, id DESC
            LIMIT ? OFFSET ?)
        SELECT {SELECT_COLUMNS},
               (SELECT COUNT(*) FROM messages AS m WHERE m.conversation_id = c.id),
               (SELECT COUNT(*) FROM kept), (SELECT COUNT(*) FROM matched)
        FROM shown JOIN conversations c ON c.id = shown.id {ASSIGNEE_JOIN}
        ORDER BY shown.created_at DESC, shown.id DESC
        """,
        (*args, limit + 1, offset),
    )
    page = [Conversation(*tuple(r)[:-2]) for r in rows[:limit]]
    if not rows:
        return SearchPage(page, False, None, False)
    kept, matched = int(rows[0][-2]), int(rows[0][-1])
    capped = kept > COUNT_CAP or matched >= MAX_MATCHES
    return SearchPage(page, len(rows) > limit, min(kept, COUNT_CAP), capped)


async def count_filtered(tx: Tx, agent_id: str, flt: ConversationFilter) -> tuple[int, bool]:
    """The conversations a filter keeps, counted up to COUNT_CAP, and whether it stopped
    there (a search's count as reached when it looked at MAX_MATCHES messages)."""
    query = from_where(tx, agent_id, flt)
    kept = f"SELECT COUNT(*) FROM (SELECT 1 FROM {query.source} WHERE {query.where} LIMIT ?) AS t"
    if flt.words:
        # One statement: the matches are read once, for both counts.
        row = await tx.fetchone(
            f"{query.with_clause} SELECT (SELECT COUNT(*) FROM matched), ({kept})",
            (*query.args, COUNT_CAP + 1),
        )
        matched, total = int(row[0]), int(row[1])
        return min(total, COUNT_CAP), total > COUNT_CAP or matched >= MAX_MATCHES
    total = int(await tx.fetchval(kept, (*query.args, COUNT_CAP + 1)))
    return min(total, COUNT_CAP), total > COUNT_CAP
