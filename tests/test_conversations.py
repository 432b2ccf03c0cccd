"""Conversations API: list with pagination, get, delete, feedback by key or widget session."""

from __future__ import annotations

from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, get_conversation, new_agent, user
from tests.support.errors import assert_error


async def _conversations(client, auth, agent_id: str, n: int, session: str | None = None):
    ids = []
    for i in range(n):
        body = {"agentId": agent_id, "messages": user(f"question {i}")}
        if session:
            body["sessionId"] = session
        ids.append((await chat(client, body)).start)
    return ids


async def test_list_is_newest_first_with_pagination(client, auth):
    agent = await new_agent(client, auth)
    starts = await _conversations(client, auth, agent["id"], 3)
    resp = await client.get(f"/api/v1/conversations?agentId={agent['id']}", headers=auth)
    assert resp.status == 200
    body = await resp.json()
    assert body["error"] is None
    assert body["pagination"] == {
        "total": 3,
        "limit": 20,
        "offset": 0,
        "nextCursor": None,
        "totalCapped": False,
    }
    assert [c["id"] for c in body["data"]] == [s["conversationId"] for s in reversed(starts)]
    first = body["data"][0]
    assert first["title"] == "question 2" and first["messageCount"] == 2
    assert first["agentId"] == agent["id"]
    assert set(first) >= {"id", "agentId", "title", "messageCount", "createdAt", "updatedAt"}

    resp = await client.get(
        f"/api/v1/conversations?agentId={agent['id']}&limit=1&offset=1", headers=auth
    )
    body = await resp.json()
    assert {k: v for k, v in body["pagination"].items() if k != "nextCursor"} == {
        "total": 3,
        "limit": 1,
        "offset": 1,
        "totalCapped": False,
    }
    assert body["pagination"]["nextCursor"]  # one more after this page
    assert [c["title"] for c in body["data"]] == ["question 1"]
    resp = await client.get(
        f"/api/v1/conversations?agentId={agent['id']}&limit=100&offset=10", headers=auth
    )
    body = await resp.json()
    assert body["data"] == [] and body["pagination"]["total"] == 3


async def test_cursors_walk_every_page_in_order(client, auth):
    agent = await new_agent(client, auth)
    starts = await _conversations(client, auth, agent["id"], 5)
    base = f"/api/v1/conversations?agentId={agent['id']}&limit=2"
    seen, cursor, pages = [], None, 0
    while True:
        resp = await client.get(base + (f"&cursor={cursor}" if cursor else ""), headers=auth)
        body = await resp.json()
        assert resp.status == 200 and body["pagination"]["total"] == 5
        seen += [c["id"] for c in body["data"]]
        pages += 1
        cursor = body["pagination"]["nextCursor"]
        if cursor is None:
            break
    assert pages == 3
    assert sorted(seen) == sorted(s["conversationId"] for s in starts) and len(set(seen)) == 5
    # Newest first, as with offsets.
    offsets = await (await client.get(base.replace("limit=2", "limit=5"), headers=auth)).json()
    assert seen == [c["id"] for c in offsets["data"]]


async def test_a_cursor_that_is_not_ours_is_refused(client, auth):
    agent = await new_agent(client, auth)
    base = f"/api/v1/conversations?agentId={agent['id']}"
    for bad in ("nonsense", "W10", "WyJhIl0", "eyJhIjoxfQ", "x" * 301):
        resp = await client.get(f"{base}&cursor={bad}", headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", "cursor")


async def test_list_rejects_bad_queries(client, auth):
    agent = await new_agent(client, auth)
    base = f"/api/v1/conversations?agentId={agent['id']}"
    for query, field in [
        ("&limit=101", "limit"),
        ("&limit=0", "limit"),
        ("&limit=abc", "limit"),
        ("&offset=-1", "offset"),
    ]:
        await assert_error(
            await client.get(base + query, headers=auth), 400, "VALIDATION_ERROR", field
        )
    resp = await client.get("/api/v1/conversations", headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "agentId")
    resp = await client.get(base)
    await assert_error(resp, 401, "UNAUTHORIZED")


async def test_another_teams_conversations_are_not_found(client, auth):
    agent = await new_agent(client, auth)
    [start] = await _conversations(client, auth, agent["id"], 1)
    conv_id = start["conversationId"]
    other = bearer(await new_api_key(client, "intruder@example.com"))
    resp = await client.get(f"/api/v1/conversations?agentId={agent['id']}", headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    await assert_error(
        await client.get(f"/api/v1/conversations/{conv_id}", headers=other), 404, "NOT_FOUND"
    )
    await assert_error(
        await client.delete(f"/api/v1/conversations/{conv_id}", headers=other), 404, "NOT_FOUND"
    )
    resp = await client.post(
        f"/api/v1/conversations/{conv_id}/feedback",
        json={"messageId": start["messageId"], "rating": "up"},
        headers=other,
    )
    await assert_error(resp, 404, "NOT_FOUND")
    # Still there for its own team.
    assert (await get_conversation(client, auth, conv_id))["id"] == conv_id


async def test_get_returns_messages_in_order(client, auth):
    agent = await new_agent(client, auth, systemPrompt="Cats purr. Dogs bark.")
    first = await chat(client, {"agentId": agent["id"], "messages": user("Do cats purr?")})
    conv_id = first.start["conversationId"]
    await chat(
        client,
        {"agentId": agent["id"], "conversationId": conv_id, "messages": user("Dogs?")},
        headers=auth,
    )
    conv = await get_conversation(client, auth, conv_id)
    assert [(m["role"], m["content"]) for m in conv["messages"]] == [
        ("user", "Do cats purr?"),
        ("assistant", "Cats purr."),
        ("user", "Dogs?"),
        ("assistant", "Dogs bark."),
    ]
    for m in conv["messages"]:
        assert m["id"].startswith("msg_") and m["createdAt"].endswith("Z")
    assert conv["agentId"] == agent["id"]
    await assert_error(
        await client.get("/api/v1/conversations/conv_missing", headers=auth), 404, "NOT_FOUND"
    )


async def test_delete_removes_the_conversation_and_its_messages(client, auth):
    agent = await new_agent(client, auth)
    [start] = await _conversations(client, auth, agent["id"], 1)
    conv_id = start["conversationId"]
    resp = await client.delete(f"/api/v1/conversations/{conv_id}", headers=auth)
    assert resp.status == 200
    assert await resp.json() == {"data": {"id": conv_id, "deleted": True}, "error": None}
    await assert_error(
        await client.get(f"/api/v1/conversations/{conv_id}", headers=auth), 404, "NOT_FOUND"
    )
    await assert_error(
        await client.delete(f"/api/v1/conversations/{conv_id}", headers=auth), 404, "NOT_FOUND"
    )
    resp = await client.get(f"/api/v1/conversations?agentId={agent['id']}", headers=auth)
    assert (await resp.json())["pagination"]["total"] == 0


async def test_deleting_the_agent_deletes_its_conversations(client, auth):
    agent = await new_agent(client, auth)
    [start] = await _conversations(client, auth, agent["id"], 1)
    assert (await client.delete(f"/api/v1/agents/{agent['id']}", headers=auth)).status == 200
    await assert_error(
        await client.get(f"/api/v1/conversations/{start['conversationId']}", headers=auth),
        404,
        "NOT_FOUND",
    )


async def test_feedback_by_api_key_replaces_the_rating(client, auth):
    agent = await new_agent(client, auth)
    [start] = await _conversations(client, auth, agent["id"], 1)
    url = f"/api/v1/conversations/{start['conversationId']}/feedback"
    for rating in ("up", "down"):
        resp = await client.post(
            url, json={"messageId": start["messageId"], "rating": rating}, headers=auth
        )
        assert resp.status == 200
        assert await resp.json() == {
            "data": {"messageId": start["messageId"], "rating": rating},
            "error": None,
        }
    conv = await get_conversation(client, auth, start["conversationId"])
    assert [m["rating"] for m in conv["messages"]] == [None, "down"]


async def test_feedback_errors(client, auth):
    agent = await new_agent(client, auth)
    [start, other] = await _conversations(client, auth, agent["id"], 2)
    url = f"/api/v1/conversations/{start['conversationId']}/feedback"
    cases = [
        ({"messageId": start["messageId"], "rating": "meh"}, 400, "VALIDATION_ERROR", "rating"),
        ({"rating": "up"}, 400, "VALIDATION_ERROR", "messageId"),
        ({"messageId": other["messageId"], "rating": "up"}, 404, "NOT_FOUND", "Message"),
        ({"messageId": "msg_nope", "rating": "up"}, 404, "NOT_FOUND", "Message"),
    ]
    for body, status, code, text in cases:
        await assert_error(await client.post(url, json=body, headers=auth), status, code, text)
    resp = await client.post(
        "/api/v1/conversations/conv_nope/feedback",
        json={"messageId": start["messageId"], "rating": "up"},
        headers=auth,
    )
    await assert_error(resp, 404, "NOT_FOUND", "Conversation")
    resp = await client.post(url, json={"messageId": start["messageId"], "rating": "up"})
    await assert_error(resp, 401, "UNAUTHORIZED")


async def test_widget_feedback_with_its_session_id(client, auth):
    agent = await new_agent(client, auth)
    [start] = await _conversations(client, auth, agent["id"], 1, session="widget-s1")
    url = f"/api/v1/conversations/{start['conversationId']}/feedback"
    body = {"messageId": start["messageId"], "rating": "up"}
    resp = await client.post(url, json=body, headers={"X-Session-Id": "someone-else"})
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.post(url, json=body, headers={"X-Session-Id": "widget-s1"})
    assert resp.status == 200
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    conv = await get_conversation(client, auth, start["conversationId"])
    assert conv["messages"][1]["rating"] == "up"


async def test_session_id_does_not_open_a_conversation_started_without_one(client, auth):
    agent = await new_agent(client, auth)
    [start] = await _conversations(client, auth, agent["id"], 1)
    resp = await client.post(
        f"/api/v1/conversations/{start['conversationId']}/feedback",
        json={"messageId": start["messageId"], "rating": "up"},
        headers={"X-Session-Id": "guess"},
    )
    await assert_error(resp, 404, "NOT_FOUND")
