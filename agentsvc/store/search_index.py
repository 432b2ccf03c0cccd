"""Scrubbing the conversation search index after an erasure.

SQLite: `messages_fts` is a contentless FTS5 table. Deleting a row appends a delete marker
to a new segment and leaves the row's words in the older segments (VACUUM keeps them: they
are live pages of the shadow table `messages_fts_data`); only merging every segment into
one, the oldest, drops the words with their markers. 'optimize' does that in one statement
(about 1 s on an index of 100,000 messages), so it is done as FTS5's incremental 'merge'
instead, a few pages per step, each step in its own short write transaction.
PostgreSQL: the GIN index `messages_search` keeps a word as a key after the last row
holding it is gone (VACUUM empties its posting list, not the key); rebuilding the index
concurrently drops it without blocking writes.
"""

from __future__ import annotations

from agentsvc.db import Tx

MERGE_PAGES = 16  # leaf pages written per step: a few ms of the writer (measured, 4 KB pages)
# 'usermerge' 2: a positive 'merge' continues an ongoing merge whenever one is under way
# (at the default 4 it can wait while a lower level holds 2 or 3 new segments).
_USERMERGE = "INSERT INTO messages_fts (messages_fts, rank) VALUES ('usermerge', 2)"
_MERGE = "INSERT INTO messages_fts (messages_fts, rank) VALUES ('merge', ?)"


async def merge_step(tx: Tx, *, first: bool, pages: int = MERGE_PAGES) -> bool:
    """SQLite: one step of merging `messages_fts` into a single segment; return whether it
    did any work (none: the merge is over).

    The first step (a negative page count) puts every segment on one level and starts
    merging all of them; the next ones (positive) carry that merge on without restarting
    it when other writes add segments meanwhile (a negative count restarts it each time).
    """
    before = int(await tx.fetchval("SELECT total_changes()"))
    if first:
        await tx.execute(_USERMERGE)
    await tx.execute(_MERGE, (-pages if first else pages,))
    # FTS5's documented test: fewer than 2 rows changed means the merge did nothing.
    return first or int(await tx.fetchval("SELECT total_changes()")) - before >= 2


async def rebuild_postgres(tx: Tx) -> None:
    """PostgreSQL: rebuild the message search index without blocking writes (outside any
    transaction: `Database.maintenance`).

    A rebuild that failed half-way leaves an invalid copy (`messages_search_ccnew`) that
    every insert still maintains: such leftovers are dropped first.
    """
    leftovers = await tx.fetchall(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE NOT i.indisvalid AND c.relnamespace = current_schema()::regnamespace"
        " AND c.relname LIKE 'messages\\_search\\_ccnew%'"
    )
    for (name,) in leftovers:
        # A name from the catalog, not input.
        await tx.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')
    await tx.execute("REINDEX INDEX CONCURRENTLY messages_search")
