"""store/documents.py: documents, passages and their full-text index, embeddings."""

from __future__ import annotations

import numpy as np

from agentsvc.store import documents as store
from agentsvc.store.documents import PassageRow
from tests.support.store_builders import LATER, document, owner

PASSAGES = [
    PassageRow(0, "Shipping", "We ship parcels within two days."),
    PassageRow(1, "Returns", "Returns are free for thirty days."),
]


async def stored(db, who, n: int = 1, status: str = "ready") -> None:
    async with db.write() as tx:
        await store.insert(tx, document(who, n, status), "content")
        await store.insert_passages(tx, f"document_{n}", who.agent_id, PASSAGES)


async def test_documents_are_scoped_to_their_team(db):
    who = await owner(db)
    other = await owner(db, "other@example.com")
    await stored(db, who)
    assert (await store.get(db.reader, who.team_id, "document_1")).title == "Doc 1"
    assert await store.get(db.reader, other.team_id, "document_1") is None
    assert await store.agent_in_team(db.reader, who.agent_id, who.team_id)
    assert not await store.agent_in_team(db.reader, who.agent_id, other.team_id)
    _, content = await store.get_with_content(db.reader, who.team_id, "document_1")
    assert content == "content"
    async with db.write() as tx:
        assert not await store.delete(tx, other.team_id, "document_1")
        assert await store.delete(tx, who.team_id, "document_1")
    assert await store.list_for_agent(db.reader, who.agent_id) == []


async def test_full_text_search_finds_one_agents_ready_passages(db):
    who = await owner(db)
    other = await owner(db, "other@example.com")
    await stored(db, who, 1)
    await stored(db, other, 2)
    hits = await store.search(db.reader, who.agent_id, ["ship"], [], 4, 8)
    assert [(h.document_id, h.heading) for h in hits] == [("document_1", "Shipping")]
    # Passages of a document still indexing are not found; once finished they are.
    await stored(db, who, 3, status="indexing")
    match = (["returns"], [])
    assert [h.document_id for h in await store.search(db.reader, who.agent_id, *match, 4, 8)] == [
        "document_1"
    ]
    assert await store.ids_indexing(db.reader) == ["document_3"]
    async with db.write() as tx:
        assert await store.finish(tx, "document_3", "ready", 2, None, LATER)
        assert not await store.finish(tx, "document_3", "failed", 0, "x", LATER)
    found = {h.document_id for h in await store.search(db.reader, who.agent_id, *match, 4, 8)}
    assert found == {"document_1", "document_3"}


async def test_cleared_passages_leave_the_index(db):
    who = await owner(db)
    await stored(db, who, 1, status="indexing")
    assert await store.content_of(db.reader, "document_1") == (who.agent_id, "Doc 1", "content")
    async with db.write() as tx:
        await store.clear_passages(tx, "document_1")
        await store.finish(tx, "document_1", "ready", 0, None, LATER)
    assert await store.search(db.reader, who.agent_id, ["ship"], [], 4, 8) == []
    assert await store.content_of(db.reader, "document_1") is None


async def test_embeddings_are_read_back_for_ready_passages_of_one_model(db):
    who = await owner(db)
    await stored(db, who)
    ids = await store.passage_ids(db.reader, "document_1", 0, 1)
    vectors = [
        np.asarray([1.0, 0.0], dtype="<f4").tobytes(),
        np.asarray([0.0, 1.0], dtype="<f4").tobytes(),
    ]
    async with db.write() as tx:
        await store.insert_embeddings(tx, who.agent_id, "m", 2, zip(ids, vectors, strict=True))
    rows = await store.ready_vectors(db.reader, who.agent_id, "m")
    assert [(pid, dims) for pid, dims, _ in rows] == [(ids[0], 2), (ids[1], 2)]
    assert await store.ready_vectors(db.reader, who.agent_id, "other-model") == []
    hits = await store.hits_by_id(db.reader, who.agent_id, [ids[1]])
    assert [h.heading for h in hits] == ["Returns"]
