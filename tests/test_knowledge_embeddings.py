"""Knowledge with an embedding provider: passages embedded, BM25 and vectors fused (RRF)."""

from __future__ import annotations

import numpy as np
import pytest

from agentsvc.api import app_keys
from agentsvc.config import ConfigError, load_settings
from agentsvc.db.sqlite import sqlite_vec_available
from agentsvc.llm.base import ProviderError
from agentsvc.services.knowledge import retrieval
from agentsvc.services.knowledge.vectors import VectorIndex
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import add_document, chat, new_agent, user
from tests.support.errors import assert_error
from tests.support.fakes.embeddings_server import MODEL, FakeEmbeddings
from tests.support.knowledge import wait_status

POLICY = """# Store policy

## Returns
Unwanted items can be sent within 30 days; we issue a refund to the original card.

## Opening hours
The shop opens at nine and closes at six, Monday to Saturday.

## Delivery
Parcels ship within two working days by tracked post.
"""

QUESTION = "Can I have my money back?"  # shares no word with the Returns section


@pytest.fixture
async def fake():
    server = await FakeEmbeddings().start()
    yield server
    await server.close()


def embedding_settings(fake: FakeEmbeddings, **knowledge_settings) -> dict:
    return {
        "providers": {
            "emb": {
                "kind": "openai",
                "base_url": fake.base_url,
                "api_key": "sk-embed",
                "max_retries": 1,
            }
        },
        "knowledge": {"embedding_model": f"emb/{MODEL}", **knowledge_settings},
    }


async def add_doc(client, auth, agent_id, content=POLICY, title="Store policy") -> dict:
    return await add_document(client, auth, agent_id, title, content)


async def count(client, sql: str, *args) -> int:
    rows = await client.app[app_keys.db_key].reader.fetchall(sql, args)
    return rows[0][0]


async def test_fusion_finds_what_fts_alone_misses(make_client, fake):
    plain = await make_client(knowledge={"top_k": 1})
    plain_auth = bearer(await new_api_key(plain))
    agent = await new_agent(plain, plain_auth)
    await add_doc(plain, plain_auth, agent["id"])
    stream = await chat(plain, {"agentId": agent["id"], "messages": user(QUESTION)})
    assert stream.of("message_stop")[0]["sources"] == []  # BM25: no shared word, no passage

    client = await make_client(**embedding_settings(fake, top_k=1))
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    doc = await add_doc(client, auth, agent["id"])
    stream = await chat(client, {"agentId": agent["id"], "messages": user(QUESTION)})
    assert stream.of("message_stop")[0]["sources"] == [
        {"documentId": doc["id"], "title": "Store policy"}
    ]
    # The question was embedded with the provider's key, in one call.
    assert fake.inputs()[-1] == [QUESTION]
    assert fake.requests[-1]["headers"]["Authorization"] == "Bearer sk-embed"
    assert fake.requests[-1]["json"]["model"] == MODEL


async def test_lexical_matches_still_rank_with_fusion(make_client, fake):
    client = await make_client(**embedding_settings(fake))
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    await add_doc(client, auth, agent["id"])
    semantic = client.app[app_keys.indexer_key].semantic
    db = client.app[app_keys.db_key]
    hits = await retrieval.retrieve(db, agent["id"], "When does the shop open?", 2, semantic)
    assert "opens at nine" in hits[0].text
    hits = await retrieval.retrieve(db, agent["id"], QUESTION, 3, semantic)
    assert "refund" in hits[0].text
    # Both rankings agree on the first: it has the largest fused score, 2 / (60 + 1).
    both = await retrieval.retrieve(db, agent["id"], "refund card", 1, semantic)
    assert "refund" in both[0].text and both[0].score == pytest.approx(2 / 61)


def test_reciprocal_rank_fusion():
    fused = retrieval.fuse([[1, 2, 3], [3, 4]])
    assert [pid for pid, _ in fused] == [3, 1, 2, 4]
    assert dict(fused)[3] == pytest.approx(1 / 63 + 1 / 61)
    assert retrieval.fuse([[], []]) == []


async def test_small_document_is_embedded_before_ready(make_client, fake):
    client = await make_client(**embedding_settings(fake, embedding_batch_size=2))
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    doc = await add_doc(client, auth, agent["id"])
    assert doc["status"] == "ready" and doc["passageCount"] == 3
    assert [len(batch) for batch in fake.inputs()] == [2, 1]
    assert fake.inputs()[0][0].startswith("Store policy › Returns\nUnwanted items")
    embedded = await count(
        client,
        "SELECT count(*) FROM passage_embeddings e JOIN passages p ON p.id = e.passage_id"
        " WHERE p.document_id = ? AND e.dims = 256 AND length(e.vector) = 1024 AND e.model = ?",
        doc["id"],
        f"emb/{MODEL}",
    )
    assert embedded == 3


async def test_background_document_is_ready_only_when_embedded(make_client, fake):
    fake.delay = 0.05
    client = await make_client(
        **embedding_settings(fake, background_index_kb=1, embedding_batch_size=8)
    )
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    sections = "\n\n".join(
        f"## Section {n}\nPart {n} of the manual explains setting number {n} in detail."
        for n in range(40)
    )
    doc = await add_doc(client, auth, agent["id"], content=f"# Manual\n\n{sections}\n\n{POLICY}")
    assert doc["status"] == "indexing"
    got = await client.get(f"/api/v1/documents/{doc['id']}", headers=auth)
    assert (await got.json())["data"]["status"] == "indexing"  # the provider is still working
    done = await wait_status(client, auth, doc["id"])
    assert done["status"] == "ready" and done["error"] is None
    passages = done["passageCount"]
    assert passages > 8
    assert await count(client, "SELECT count(*) FROM passage_embeddings") == passages
    assert max(len(batch) for batch in fake.inputs()) == 8
    stream = await chat(client, {"agentId": agent["id"], "messages": user(QUESTION)})
    assert stream.of("message_stop")[0]["sources"] == [
        {"documentId": doc["id"], "title": "Store policy"}
    ]


async def test_provider_failure_fails_the_document(make_client, fake):
    fake.fail_with = 503
    client = await make_client(**embedding_settings(fake, background_index_kb=1))
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)

    small = await add_doc(client, auth, agent["id"], content="Short note about refunds.")
    assert small["status"] == "failed" and small["passageCount"] == 0
    assert "embedding provider: provider answered 503" in small["error"]
    assert "overloaded" in small["error"]
    assert len(fake.requests) == 2  # max_retries = 1: one retry, then give up

    large = await add_doc(client, auth, agent["id"], content=POLICY * 20)
    assert large["status"] == "indexing"
    done = await wait_status(client, auth, large["id"])
    assert done["status"] == "failed" and done["passageCount"] == 0
    assert "embedding provider: provider answered 503" in done["error"]
    # Nothing half-written: no passage, no vector, nothing in the FTS index.
    assert await count(client, "SELECT count(*) FROM passages") == 0
    assert await count(client, "SELECT count(*) FROM passage_embeddings") == 0
    db = client.app[app_keys.db_key]
    assert await retrieval.retrieve(db, agent["id"], "refund", 3) == []

    # The provider recovers: new documents index again; a failed one can be deleted.
    fake.fail_with = None
    assert (await add_doc(client, auth, agent["id"]))["status"] == "ready"
    resp = await client.delete(f"/api/v1/documents/{large['id']}", headers=auth)
    assert resp.status == 200


async def test_transient_failure_is_retried(make_client, fake):
    fake.fail_next = 1
    client = await make_client(**embedding_settings(fake))
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    assert (await add_doc(client, auth, agent["id"]))["status"] == "ready"
    assert len(fake.requests) == 2


async def test_wrong_key_is_a_clear_error_without_retries(make_client, fake):
    settings = embedding_settings(fake)
    settings["providers"]["emb"]["api_key"] = "sk-wrong"
    client = await make_client(**settings)
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    doc = await add_doc(client, auth, agent["id"])
    assert doc["status"] == "failed"
    assert doc["error"] == "embedding provider: provider answered 401: Incorrect API key provided"
    assert len(fake.requests) == 1


async def test_chat_keeps_bm25_when_the_question_cannot_be_embedded(make_client, fake):
    client = await make_client(**embedding_settings(fake))
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    doc = await add_doc(client, auth, agent["id"])
    fake.fail_with = 500
    stream = await chat(
        client, {"agentId": agent["id"], "messages": user("When does the shop close?")}
    )
    assert "opens at nine" in stream.text
    assert stream.of("message_stop")[0]["sources"] == [
        {"documentId": doc["id"], "title": "Store policy"}
    ]


async def test_deletions_remove_embeddings(make_client, fake):
    client = await make_client(**embedding_settings(fake))
    auth = bearer(await new_api_key(client))
    gone = await new_agent(client, auth, name="Gone")
    keep = await new_agent(client, auth, name="Keep")
    doc = await add_doc(client, auth, gone["id"])
    kept = await add_doc(client, auth, keep["id"])
    semantic = client.app[app_keys.indexer_key].semantic
    db = client.app[app_keys.db_key]
    hits = await retrieval.retrieve(db, gone["id"], QUESTION, 1, semantic)  # caches vectors
    assert hits[0].document_id == doc["id"]
    assert await count(client, "SELECT count(*) FROM passage_embeddings") == 6

    assert (await client.delete(f"/api/v1/agents/{gone['id']}", headers=auth)).status == 200
    assert await count(client, "SELECT count(*) FROM passage_embeddings") == 3
    assert (
        await count(
            client, "SELECT count(*) FROM passage_embeddings WHERE agent_id = ?", gone["id"]
        )
        == 0
    )
    assert await retrieval.retrieve(db, gone["id"], QUESTION, 1, semantic) == []
    assert [
        p.document_id for p in await retrieval.retrieve(db, keep["id"], QUESTION, 1, semantic)
    ] == [kept["id"]]

    resp = await client.delete(f"/api/v1/documents/{kept['id']}", headers=auth)
    assert resp.status == 200
    assert await count(client, "SELECT count(*) FROM passage_embeddings") == 0
    assert await retrieval.retrieve(db, keep["id"], QUESTION, 1, semantic) == []


async def test_vector_cache_sees_new_documents(make_client, fake):
    client = await make_client(**embedding_settings(fake, top_k=1))
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    await add_doc(client, auth, agent["id"], content="Opening hours: nine to six.", title="Hours")
    stream = await chat(client, {"agentId": agent["id"], "messages": user(QUESTION)})
    assert stream.of("message_stop")[0]["sources"][0]["title"] == "Hours"  # the only passage
    doc = await add_doc(client, auth, agent["id"])
    stream = await chat(client, {"agentId": agent["id"], "messages": user(QUESTION)})
    assert stream.of("message_stop")[0]["sources"] == [
        {"documentId": doc["id"], "title": "Store policy"}
    ]


async def test_numpy_ranking_matches_cosine(make_client, fake):
    client = await make_client(**embedding_settings(fake))
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    await add_doc(client, auth, agent["id"])
    semantic = client.app[app_keys.indexer_key].semantic
    vectors = VectorIndex(client.app[app_keys.db_key], f"emb/{MODEL}", path="numpy")
    await vectors.open()
    assert vectors.mode == "numpy"
    query = (await semantic.embedder.embed(["refund"]))[0]
    rows = await client.app[app_keys.db_key].reader.fetchall(
        "SELECT passage_id, vector FROM passage_embeddings"
    )
    cosine = {pid: float(np.frombuffer(blob, "<f4") @ query) for pid, blob in rows}
    expected = sorted(cosine, key=lambda pid: -cosine[pid])
    assert await vectors.nearest(agent["id"], query, 3) == expected
    assert await vectors.nearest(agent["id"], query, 1) == expected[:1]
    assert await vectors.nearest(agent["id"], np.ones(8, np.float32), 3) == []  # other size
    await vectors.close()


async def test_malformed_answers_are_provider_errors(make_client, fake):
    client = await make_client(**embedding_settings(fake))
    embedder = client.app[app_keys.indexer_key].semantic.embedder
    from agentsvc.llm.embeddings import parse

    with pytest.raises(ProviderError, match="returned 1 vectors for 2 texts"):
        parse(b'{"data": [{"index": 0, "embedding": [1.0]}]}', 2)
    with pytest.raises(ProviderError, match="malformed JSON"):
        parse(b"<html>", 1)
    with pytest.raises(ProviderError, match="different sizes"):
        parse(b'{"data": [{"index": 0, "embedding": [1]}, {"index": 1, "embedding": [1, 2]}]}', 2)
    assert (await embedder.embed([])).shape == (0, 0)


def test_embedding_model_is_validated_at_start():
    openai = {"kind": "openai", "base_url": "http://127.0.0.1:1/v1"}
    anthropic = {"kind": "anthropic", "base_url": "http://127.0.0.1:1"}
    cases = [
        ("nope/m", {"emb": openai}, "knowledge.embedding_model: no provider named 'nope'"),
        ("emb", {"emb": openai}, "knowledge.embedding_model: must be PROVIDER/MODEL"),
        ("claude/m", {"claude": anthropic}, "embeddings need an 'openai'-kind provider"),
    ]
    for model, providers, message in cases:
        with pytest.raises(ConfigError, match=message):
            load_settings(
                environ={},
                overrides={"providers": providers, "knowledge": {"embedding_model": model}},
            )
    settings = load_settings(
        environ={},
        overrides={"providers": {"emb": openai}, "knowledge": {"embedding_model": "emb/x"}},
    )
    assert settings.knowledge.embedding_model == "emb/x"


async def test_documents_api_errors_unchanged_with_embeddings(make_client, fake):
    client = await make_client(**embedding_settings(fake))
    auth = bearer(await new_api_key(client))
    resp = await client.post(
        "/api/v1/agents/agent_missing/documents", json={"title": "t", "content": "x"}, headers=auth
    )
    await assert_error(resp, 404, "NOT_FOUND", "Agent not found")
    assert fake.requests == []


async def test_vector_search_paths_agree(make_client, fake):
    """sqlite-vec runs where this Python's sqlite3 can load it; both paths rank alike."""
    client = await make_client(**embedding_settings(fake))
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    await add_doc(client, auth, agent["id"])
    semantic = client.app[app_keys.indexer_key].semantic
    assert semantic.vectors.mode == ("sqlite-vec" if sqlite_vec_available() else "numpy")
    numpy_path = VectorIndex(client.app[app_keys.db_key], f"emb/{MODEL}", path="numpy")
    await numpy_path.open()
    for question in (QUESTION, "opening hours", "tracked parcels"):
        query = (await semantic.embedder.embed([question]))[0]
        expected = await numpy_path.nearest(agent["id"], query, 3)
        assert await semantic.vectors.nearest(agent["id"], query, 3) == expected
    await numpy_path.close()


async def test_vector_search_path_is_configurable(make_client, fake):
    client = await make_client(**embedding_settings(fake, vector_search="numpy"))
    assert client.app[app_keys.indexer_key].semantic.vectors.mode == "numpy"
    forced = embedding_settings(fake, vector_search="sqlite-vec")
    if sqlite_vec_available():
        client = await make_client(**forced)
        assert client.app[app_keys.indexer_key].semantic.vectors.mode == "sqlite-vec"
    else:
        with pytest.raises(ConfigError, match="'sqlite-vec' needs a Python whose sqlite3 can"):
            await make_client(**forced)


async def test_interrupted_indexing_resumes_with_embeddings(make_client, fake):
    client = await make_client(**embedding_settings(fake, background_index_kb=1))
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    doc = await add_doc(client, auth, agent["id"], content=POLICY * 10)
    done = await wait_status(client, auth, doc["id"])
    db = client.app[app_keys.db_key]
    # As if the service had stopped half-way: status indexing, some passages written.
    async with db.write() as conn:
        await conn.execute("UPDATE documents SET status = 'indexing' WHERE id = ?", (doc["id"],))
        await conn.execute(
            "DELETE FROM passages WHERE document_id = ? AND position > 2", (doc["id"],)
        )
    indexer = client.app[app_keys.indexer_key]
    assert await indexer.resume() == 1
    again = await wait_status(client, auth, doc["id"])
    assert again["status"] == "ready" and again["passageCount"] == done["passageCount"]
    assert await count(client, "SELECT count(*) FROM passage_embeddings") == done["passageCount"]
    hits = await retrieval.retrieve(db, agent["id"], QUESTION, 1, indexer.semantic)
    assert "refund" in hits[0].text
