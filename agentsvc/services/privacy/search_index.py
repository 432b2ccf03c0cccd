"""Erased words leave the conversation search index (see store/search_index.py for why a
deleted row's words stay there until the index is merged or rebuilt)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from agentsvc.db import Database
from agentsvc.store import search_index as store

log = logging.getLogger(__name__)

# Steps at most in one scrub (16 pages each: an index of ~1.3 GB); a merge left unfinished
# goes on with the next scrub and with the index's own automatic merging.
MAX_STEPS = 20_000


@dataclass(frozen=True, slots=True)
class Scrubbed:
    """What a scrub did: steps (SQLite: write transactions), in seconds, and the longest time
    one step held the writer (from its BEGIN to after its COMMIT)."""

    steps: int
    seconds: float
    longest: float


async def scrub_message_index(db: Database) -> Scrubbed:
    """Rewrite the message search index so that no deleted message's words remain in it.

    SQLite: merge every segment into one, a few pages per short write transaction, so other
    tenants' writes go in between. PostgreSQL: rebuild the index concurrently (writes go
    on; a failure is logged, the erasure stands).
    """
    started = time.perf_counter()
    if db.reader.dialect != "sqlite":
        try:
            async with db.maintenance() as tx:
                await store.rebuild_postgres(tx)
        except Exception:  # the rows are gone; only the index keeps their words longer
            log.warning("rebuilding the message search index failed", exc_info=True)
        took = time.perf_counter() - started
        return Scrubbed(1, took, took)
    steps, longest = 0, 0.0
    while steps < MAX_STEPS:
        async with db.write() as tx:
            held_from = time.perf_counter()
            worked = await store.merge_step(tx, first=steps == 0)
        steps += 1
        longest = max(longest, time.perf_counter() - held_from)
        if not worked:
            break
    scrubbed = Scrubbed(steps, time.perf_counter() - started, longest)
    log.debug("message search index merged: %s", scrubbed)
    return scrubbed
