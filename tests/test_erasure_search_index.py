"""Issue 29, item 5: erasure leaves nothing in the search index. A deleted message's words
stay in the full-text index (SQLite: in the segments of `messages_fts_data`, which VACUUM
keeps; PostgreSQL: as keys of the GIN index) until it is merged or rebuilt; the erasure
does that, and the raw bytes of the index no longer hold the erased words."""

from __future__ import annotations

import time

from agentsvc.api import app_keys
from agentsvc.services.privacy.search_index import scrub_message_index
from tests.support.accounts import bearer, create_user, key_for
from tests.support.chat import chat, new_agent, user
from tests.support.pg import postgres_only

# Distinctive words (the porter stemmer leaves them whole), and a neighbour's that stays.
ERASED = ["zanzibarquokka", "fjordwombat", "xylophonequeen"]
KEPT = "marmaladekiwi"


def needle(word: str) -> bytes:
    """What of a word is stored whole: FTS5 writes a term after the first of a page as its
    prefix length plus the rest, and a neighbour ("for", "found") may share a letter or two."""
    return word[3:].encode()


async def raw_index_bytes(db) -> bytes:
    """Every byte of the search index as stored: SQLite's FTS5 shadow tables, or every page
    of PostgreSQL's GIN index (pageinspect's get_raw_page)."""
    tx = db.reader
    if tx.dialect == "sqlite":
        tables = await tx.fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'messages_fts_%'"
        )
        assert {t for (t,) in tables} >= {"messages_fts_data", "messages_fts_idx"}
        out = b""
        for (table,) in tables:
            for row in await tx.fetchall(f'SELECT * FROM "{table}"'):  # noqa: S608 (catalog)
                for value in row:
                    if isinstance(value, bytes):
                        out += value
                    elif value is not None:
                        out += str(value).encode()
        return out
    async with db.write() as wtx:
        await wtx.execute("CREATE EXTENSION IF NOT EXISTS pageinspect SCHEMA public")
    pages = await tx.fetchval(
        "SELECT pg_relation_size('messages_search') / current_setting('block_size')::int"
    )
    out = b""
    for page in range(int(pages)):
        out += await tx.fetchval("SELECT public.get_raw_page('messages_search', ?)", (page,))
    return out


async def talk(client, auth, agent_id: str, user_id: str, text: str) -> str:
    body = {"agentId": agent_id, "messages": user(text), "user": {"id": user_id}}
    return (await chat(client, body, auth)).start["conversationId"]


async def test_erasure_leaves_nothing_in_the_search_index(client):
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    agent = await new_agent(client, auth, systemPrompt="Parcels ship daily.")
    db = client.app[app_keys.db_key]
    # Each chat commits on its own, so the index holds many segments, old and new.
    for n in range(12):
        await talk(client, auth, agent["id"], f"someone-{n}", f"question {n} about parcels")
    erin = [
        await talk(client, auth, agent["id"], "erin-5", f"my {word} is private") for word in ERASED
    ]
    kept = await talk(client, auth, agent["id"], "bob-6", f"the {KEPT} stays")
    for n in range(5):
        await talk(client, auth, agent["id"], f"later-{n}", f"later question {n}")
    before = await raw_index_bytes(db)
    assert [w for w in [*ERASED, KEPT] if needle(w) not in before] == []  # seen before

    gone = await client.delete("/api/v1/end-users/erin-5", headers=auth)
    assert gone.status == 200, await gone.text()
    assert (await gone.json())["data"]["deleted"]["conversations"] == len(erin)
    await client.app[app_keys.index_scrubber_key].idle()  # PostgreSQL rebuilds in the background

    after = await raw_index_bytes(db)
    assert [word for word in ERASED if needle(word) in after] == []
    assert needle(KEPT) in after
    # The index still answers: the kept conversation is found, the erased ones are not.
    for q, found in ((KEPT, [kept]), (ERASED[0], [])):
        resp = await client.get(
            "/api/v1/conversations", params={"agentId": agent["id"], "q": q}, headers=auth
        )
        assert [c["id"] for c in (await resp.json())["data"]] == found
    # Chat goes on; a later erasure merges again (a no-op costs one short step or so).
    await talk(client, auth, agent["id"], "erin-5", f"again {ERASED[1]}")
    resp = await client.delete("/api/v1/end-users/erin-5", headers=auth)
    assert resp.status == 200
    await client.app[app_keys.index_scrubber_key].idle()
    assert needle(ERASED[1]) not in await raw_index_bytes(db)
    if db.reader.dialect == "sqlite":
        started = time.perf_counter()
        scrubbed = await scrub_message_index(db)
        assert scrubbed.steps <= 2 and time.perf_counter() - started < 1


@postgres_only
async def test_erasure_rebuild_drops_a_half_done_rebuild_first(client):
    """A rebuild cut off half-way leaves an invalid copy every insert still maintains."""
    db = client.app[app_keys.db_key]
    async with db.maintenance() as tx:
        await tx.execute(
            "CREATE INDEX CONCURRENTLY messages_search_ccnew ON messages"
            " USING GIN (to_tsvector('english'::regconfig, content))"
        )
        await tx.execute(
            "UPDATE pg_index SET indisvalid = false"
            " WHERE indexrelid = 'messages_search_ccnew'::regclass"
        )
    await scrub_message_index(db)
    rows = await db.reader.fetchall(
        "SELECT indexname FROM pg_indexes"
        " WHERE schemaname = current_schema() AND tablename = 'messages'"
    )
    names = {r[0] for r in rows}
    assert "messages_search" in names and "messages_search_ccnew" not in names
