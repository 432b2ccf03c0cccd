"""store/pg_passage_search.py: PostgreSQL's retrieval from bounded candidate sets, and the
word statistics that choose them (ANALYZE's, or a sample's before ANALYZE has run)."""

from __future__ import annotations

from agentsvc.db.postgres import PostgresDatabase
from agentsvc.store import documents as store
from agentsvc.store import pg_passage_search as pg_search
from agentsvc.store.documents import PassageRow
from tests.support.pg import postgres_only
from tests.support.store_builders import document, owner

pytestmark = postgres_only

COMMON = pg_search.SELECTIVE_POSTINGS + 200  # passages holding "parcel": over the budget


async def stored(db, who, n: int, passages: list[PassageRow]) -> None:
    async with db.write() as tx:
        await store.insert(tx, document(who, n, passage_count=0), "content")
        await store.insert_passages(tx, f"document_{n}", who.agent_id, passages)
        # The index's pending list is merged past 1 MB, not the default 4 MB.
        assert await tx.fetchval("SHOW gin_pending_list_limit") == "1MB"


async def test_word_statistics_come_from_a_sample_until_analyze_has_run(db):
    who = await owner(db)
    async with db.write() as tx:  # no autovacuum: the table stays never analyzed
        await tx.execute("ALTER TABLE passages SET (autovacuum_enabled = false)")
    rows = [PassageRow(n, "Shipping", "Parcels ship today.") for n in range(COMMON)]
    rows.append(PassageRow(COMMON, "Warranty", "A parcel under warranty is replaced."))
    await stored(db, who, 1, rows)

    # Never analyzed: the sample reads every page of so small a table, so it counts exactly.
    counts = dict(await pg_search.lexeme_counts(db.reader, ["parcels", "warranty", "the"]))
    assert counts == {"parcel": COMMON + 1.0, "warranti": 1.0}
    assert pg_search.selective_words(list(counts.items())) == (["'warranti'"], ["parcel"])
    # Candidates hold the rare word (passages holding only common words are not ranked).
    hits = await store.search(db.reader, who.agent_id, ["parcels", "warranty"], [], 2, 4)
    assert [h.heading for h in hits] == ["Warranty"]

    async with db.write() as tx:
        await tx.execute("ANALYZE passages")
    # A new reader reads ANALYZE's statistics (this one keeps the sample's for a while).
    fresh = PostgresDatabase(db.url)
    await fresh.open()
    try:
        counts = dict(await pg_search.lexeme_counts(fresh.reader, ["parcels", "warranty"]))
        assert counts["parcel"] == COMMON + 1.0
        assert counts["warranti"] < pg_search.SELECTIVE_POSTINGS
        hits = await store.search(fresh.reader, who.agent_id, ["parcels", "warranty"], [], 2, 4)
        assert [h.heading for h in hits] == ["Warranty"]
    finally:
        await fresh.close()


async def test_candidates_of_one_word_and_of_pairs(db):
    who = await owner(db)
    await stored(
        db,
        who,
        1,
        [
            PassageRow(0, "Returns", "Returns of a parcel are free."),
            PassageRow(1, "Refunds", "A refund follows a return within days."),
            PassageRow(2, "Shipping", "We ship every parcel within two days."),
        ],
    )
    one = await store.search(db.reader, who.agent_id, ["refund"], [], 4, 8)
    assert [h.heading for h in one] == ["Refunds"]
    both = await store.search(db.reader, who.agent_id, ["returns", "parcel"], [], 4, 8)
    # Holding both words first (the pairs are short: passages of either word follow).
    assert both[0].heading == "Returns"
    assert {h.heading for h in both[1:]} == {"Refunds", "Shipping"}
    # Words the english configuration drops match nothing; a prefix finds its word's forms.
    assert await store.search(db.reader, who.agent_id, ["the", "and"], [], 4, 8) == []
    prefixed = await store.search(db.reader, who.agent_id, [], ["refu"], 4, 8)
    assert [h.heading for h in prefixed] == ["Refunds"]
