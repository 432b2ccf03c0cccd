"""GET /feedback: rated answers with the question before each, newest first, by cursor;
the curated answer a question would get now; bad cases and team isolation."""

from __future__ import annotations

from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, get_conversation, new_agent, user
from tests.support.errors import assert_error

PROMPT = "Refunds are paid within five days. Parcels ship worldwide. We open at nine."


async def rated_turn(client, auth, agent_id: str, question: str, rating: str | None,
                     conversation_id: str | None = None) -> tuple[str, str]:  # fmt: skip
    """One visitor question and its answer, rated; (conversation id, answer id)."""
    body = {"agentId": agent_id, "messages": user(question)}
    if conversation_id:
        body["conversationId"] = conversation_id
    stream = await chat(client, body, auth)
    conv_id, answer_id = stream.start["conversationId"], stream.start["messageId"]
    if rating:
        resp = await client.post(
            f"/api/v1/conversations/{conv_id}/feedback",
            json={"messageId": answer_id, "rating": rating},
            headers=auth,
        )
        assert resp.status == 200, await resp.text()
    return conv_id, answer_id


async def feedback(client, auth, query: str, status: int = 200) -> dict:
    resp = await client.get(f"/api/v1/feedback?{query}", headers=auth)
    assert resp.status == status, await resp.text()
    return await resp.json()


async def test_rated_answers_come_with_their_questions_newest_first(client, auth):
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    conv, first = await rated_turn(client, auth, agent["id"], "When are refunds paid?", "down")
    _, liked = await rated_turn(client, auth, agent["id"], "Do you ship to Peru?", "up")
    _, second = await rated_turn(
        client, auth, agent["id"], "And when do you open?", "down", conversation_id=conv
    )
    await rated_turn(client, auth, agent["id"], "Unrated question", None)

    body = await feedback(client, auth, f"agentId={agent['id']}&rating=down")
    items = body["data"]
    assert [i["messageId"] for i in items] == [second, first]
    assert items[0]["question"] == "And when do you open?"  # the message before this answer
    assert items[1]["question"] == "When are refunds paid?"
    assert items[1]["conversationId"] == conv and items[1]["rating"] == "down"
    assert "five days" in items[1]["answer"]
    assert items[1]["ratedAt"] and items[1]["createdAt"] and items[1]["curatedAnswer"] is None
    assert body["pagination"] == {"total": 2, "limit": 20, "nextCursor": None}
    both = await feedback(client, auth, f"agentId={agent['id']}")
    assert [i["messageId"] for i in both["data"]] == [second, liked, first]

    page = await feedback(client, auth, f"agentId={agent['id']}&limit=2")
    assert len(page["data"]) == 2 and page["pagination"]["total"] == 3
    rest = await feedback(
        client, auth, f"agentId={agent['id']}&limit=2&cursor={page['pagination']['nextCursor']}"
    )
    assert [i["messageId"] for i in page["data"] + rest["data"]] == [second, liked, first]

    # A rating changed to up leaves the thumbs-down list; a deleted conversation too.
    resp = await client.post(
        f"/api/v1/conversations/{conv}/feedback",
        json={"messageId": second, "rating": "up"},
        headers=auth,
    )
    assert resp.status == 200
    body = await feedback(client, auth, f"agentId={agent['id']}&rating=down")
    assert [i["messageId"] for i in body["data"]] == [first]
    await client.delete(f"/api/v1/conversations/{conv}", headers=auth)
    body = await feedback(client, auth, f"agentId={agent['id']}&rating=down")
    assert body["data"] == [] and body["pagination"]["total"] == 0


async def test_a_curated_answer_for_the_question_is_shown(client, auth):
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    _, answer_id = await rated_turn(client, auth, agent["id"], "When are refunds paid?", "down")
    resp = await client.post(
        f"/api/v1/agents/{agent['id']}/answers",
        json={"question": "When are refunds paid?", "answer": "Within five working days."},
        headers=auth,
    )
    curated = (await resp.json())["data"]
    item = (await feedback(client, auth, f"agentId={agent['id']}&rating=down"))["data"][0]
    assert item["messageId"] == answer_id
    assert item["curatedAnswer"] == {"id": curated["id"], "question": "When are refunds paid?"}
    # The next visitor asking it gets the curated answer.
    stream = await chat(client, {"agentId": agent["id"], "messages": user("refunds paid when?")})
    assert stream.text == "Within five working days."
    conv = await get_conversation(client, auth, stream.start["conversationId"])
    assert conv["messages"][1]["sources"][0]["answerId"] == curated["id"]


async def test_bad_feedback_queries(client, auth):
    agent = await new_agent(client, auth)
    for query, named in (
        ("", "query.agentId"),
        (f"agentId={agent['id']}&rating=meh", "query.rating"),
        (f"agentId={agent['id']}&limit=101", "query.limit"),
        (f"agentId={agent['id']}&limit=0", "query.limit"),
        (f"agentId={agent['id']}&cursor=nope", "cursor"),
    ):
        resp = await client.get(f"/api/v1/feedback?{query}", headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", named)
    other = bearer(await new_api_key(client, "other@example.com"))
    await rated_turn(client, auth, agent["id"], "hello", "down")
    resp = await client.get(f"/api/v1/feedback?agentId={agent['id']}", headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get(f"/api/v1/feedback?agentId={agent['id']}")
    await assert_error(resp, 401, "UNAUTHORIZED")
