"""Private notes between members: members see them (the conversation, their live stream);
the visitor never does (their stream, the end user's export), nor does the model (the
prompt the provider receives)."""

from __future__ import annotations

import sqlite3

import orjson

from agentsvc.db.migrations import schema_at
from agentsvc.db.sqlite import SqliteDatabase
from tests.support.accounts import bearer, create_user, key_for
from tests.support.chat import chat, get_conversation, new_agent, user
from tests.support.errors import assert_error
from tests.support.fakes import openai_server as oai
from tests.support.live import VISITOR_SESSION, handoff_agent, open_events, visitor_conversation

VISITOR = {"X-Session-Id": VISITOR_SESSION}
SECRET = "Refund approved by Olivia: do not tell the visitor yet"


async def owner_of_team(client, email="owner@example.com", name="Olivia"):
    user_, team = await create_user(client, email, name=name)
    return user_, team, bearer(await key_for(client, team.id, user_.id))


async def add_note(client, conv_id: str, auth: dict, content: str = SECRET):
    return await client.post(
        f"/api/v1/conversations/{conv_id}/notes", json={"content": content}, headers=auth
    )


async def test_a_note_is_shown_to_members_with_its_author(client):
    owner, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    resp = await add_note(client, conv_id, auth)
    assert resp.status == 201, await resp.text()
    note = (await resp.json())["data"]
    assert note["id"].startswith("note_")
    assert note["conversationId"] == conv_id
    assert note["author"] == {"type": "note", "id": owner.id, "name": "Olivia", "avatarUrl": None}
    assert note["content"] == SECRET
    second = (await (await add_note(client, conv_id, auth, "Second")).json())["data"]
    conv = await get_conversation(client, auth, conv_id)
    assert [n["id"] for n in conv["notes"]] == [note["id"], second["id"]]
    # Notes are not messages: the conversation's messages are the visitor's and the agent's.
    assert SECRET not in orjson.dumps(conv["messages"]).decode()


async def test_notes_are_validated(client):
    _, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    await assert_error(await add_note(client, conv_id, auth, "   "), 400, "VALIDATION_ERROR")
    await assert_error(await add_note(client, conv_id, auth, ""), 400, "VALIDATION_ERROR")
    too_long = await add_note(client, conv_id, auth, "x" * 20_001)
    await assert_error(too_long, 400, "VALIDATION_ERROR", "content")
    assert (await add_note(client, conv_id, auth, "x" * 20_000)).status == 201
    # A visitor (their widget session, no credential) cannot write or read notes.
    resp = await add_note(client, conv_id, VISITOR)
    await assert_error(resp, 401, "UNAUTHORIZED")
    resp = await client.get(f"/api/v1/conversations/{conv_id}", headers=VISITOR)
    await assert_error(resp, 401, "UNAUTHORIZED")
    resp = await add_note(client, "conv_missing", auth)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_members_stream_carries_notes_and_the_visitors_never(make_client):
    client = await make_client(handoff={"keepalive_seconds": 0.2})
    _, _, auth = await owner_of_team(client)
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])
    path = f"/api/v1/conversations/{conv_id}/events"
    member = await open_events(client, path, headers=auth)
    visitor = await open_events(client, path, headers=VISITOR)
    await member.until("status")
    await visitor.until("status")
    note = (await (await add_note(client, conv_id, auth)).json())["data"]
    event, event_id = await member.until("note")
    assert event == {"type": "note", "note": note}
    assert int(event_id) > 0
    # Then a reply, which both see: the visitor's stream skipped the note before it.
    reply = await client.post(
        f"/api/v1/conversations/{conv_id}/messages", json={"content": "Hello!"}, headers=auth
    )
    assert reply.status == 201
    seen = []
    while True:
        name, data, _ = await visitor.next()
        seen.append((name, data))
        if name == "message":
            break
    assert all(name != "note" for name, _ in seen)
    assert SECRET not in orjson.dumps(seen).decode()
    member.close()
    visitor.close()
    # Replaying the whole log (a reconnect from the start) gives the visitor no note either.
    replay = await open_events(client, path, headers=VISITOR, lastEventId=0)
    names = []
    while True:
        name, data, _ = await replay.next()
        names.append(name)
        assert SECRET not in orjson.dumps(data).decode()
        if name == "message" and data["message"]["content"] == "Hello!":
            break
    assert "note" not in names
    replay.close()


async def test_the_model_never_reads_a_note(make_client, openai_fake):
    client = await make_client(
        providers={"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}}
    )
    _, _, auth = await owner_of_team(client)
    agent = await new_agent(client, auth, model="oai/gpt-fake")
    openai_fake.script(oai.stream(oai.text_events(["Hi, I am the bot."])))
    body = {"agentId": agent["id"], "messages": user("Hello"), "sessionId": VISITOR_SESSION}
    conv_id = (await chat(client, body)).start["conversationId"]
    assert (await add_note(client, conv_id, auth)).status == 201
    openai_fake.script(oai.stream(oai.text_events(["Sure."])))
    body["conversationId"] = conv_id
    body["messages"] = user("Any news on my refund?")
    stream = await chat(client, body)
    assert stream.text == "Sure."
    prompt = orjson.dumps(openai_fake.requests[-1]["json"]).decode()
    assert "Any news on my refund?" in prompt
    assert "Refund approved" not in prompt and SECRET not in prompt


async def test_the_end_users_export_holds_no_note(client):
    _, _, auth = await owner_of_team(client)
    agent = await new_agent(client, auth)
    body = {
        "agentId": agent["id"],
        "messages": user("Hello"),
        "user": {"id": "visitor-9", "email": "vera@example.com", "name": "Vera"},
    }
    conv_id = (await chat(client, body, auth)).start["conversationId"]
    assert (await add_note(client, conv_id, auth)).status == 201
    resp = await client.get("/api/v1/end-users/visitor-9/export", headers=auth)
    assert resp.status == 200, await resp.text()
    exported = await resp.text()
    assert conv_id in exported and "Hello" in exported
    assert SECRET not in exported
    resp = await client.get(
        "/api/v1/conversations/export", params={"agentId": agent["id"]}, headers=auth
    )
    assert resp.status == 200 and SECRET not in await resp.text()


async def test_a_note_makes_no_webhook_event(client):
    _, _, auth = await owner_of_team(client)
    events = ["message.created", "conversation.created", "conversation.handoff"]
    resp = await client.post(
        "/api/v1/webhooks",
        json={"url": "http://127.0.0.1:9/events", "events": events},
        headers=auth,
    )
    assert resp.status == 201, await resp.text()
    hook = (await resp.json())["data"]["id"]
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])

    async def deliveries() -> list[dict]:
        resp = await client.get(
            f"/api/v1/webhooks/{hook}/deliveries", params={"limit": 100}, headers=auth
        )
        return (await resp.json())["data"]

    before = await deliveries()
    assert before  # the conversation and its messages
    assert (await add_note(client, conv_id, auth)).status == 201
    after = await deliveries()
    assert [d["id"] for d in after] == [d["id"] for d in before]
    for delivery in after:
        resp = await client.get(
            f"/api/v1/webhooks/{hook}/deliveries/{delivery['id']}", headers=auth
        )
        assert SECRET not in await resp.text()


async def test_the_event_log_keeps_its_ids_when_version_13_rebuilds_it(tmp_path):
    """SQLite rebuilds the event log for its new `kind`: ids and the AUTOINCREMENT counter
    (even past rows deleted since) are carried over, so no id is ever handed out twice."""
    path = tmp_path / "v12.db"
    conn = sqlite3.connect(path)
    conn.executescript(schema_at(12))
    conn.executescript(
        """
        INSERT INTO users (id, email, created_at, updated_at) VALUES ('u', 'u@x.co', 'x', 'x');
        INSERT INTO teams (id, name, owner_user_id, plan, created_at, updated_at)
            VALUES ('team_a', 'T', 'u', 'pro', 'x', 'x');
        INSERT INTO agents (id, team_id, name, slug, model, temperature, created_at, updated_at)
            VALUES ('agt_a', 'team_a', 'A', 'a', 'builtin', 70, 'x', 'x');
        INSERT INTO conversations (id, agent_id, team_id, title, created_at, updated_at)
            VALUES ('conv_a', 'agt_a', 'team_a', 'Hi', 'x', 'x');
        INSERT INTO conversation_events (id, conversation_id, team_id, agent_id, kind,
            status, inbox, created_at)
        VALUES (7, 'conv_a', 'team_a', 'agt_a', 'status', 'waiting', 1, '2026-01-01'),
               (41, 'conv_a', 'team_a', 'agt_a', 'status', 'human', 1, '2026-01-02');
        DELETE FROM conversation_events WHERE id = 41;
        """
    )
    conn.commit()
    conn.close()
    db = SqliteDatabase(path)
    await db.open()
    await db.close()
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT id, kind, status FROM conversation_events").fetchall()
        assert rows == [(7, "status", "waiting")]
        conn.execute(
            "INSERT INTO conversation_events (conversation_id, team_id, agent_id, kind,"
            " note_id, inbox, created_at) VALUES ('conv_a', 'team_a', 'agt_a', 'note', 'n', 0, 'x')"
        )
        assert conn.execute("SELECT MAX(id) FROM conversation_events").fetchone()[0] == 42
    finally:
        conn.close()
