"""Experiments: 400 visitors split among two versions by weight, each keeping its variant;
the figures per variant with intervals and a leader; stopping with a winner; one running
per agent; bad input refused; other teams kept out; the same split in another process."""

from __future__ import annotations

import asyncio

from agentsvc.api import app_keys
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, new_agent, user
from tests.support.errors import assert_error
from tests.support.settings import make_settings

NINE, TEN = "We open at nine.", "We open at ten."


async def _agent_with_two_versions(client, auth) -> dict:
    agent = await new_agent(client, auth, systemPrompt=NINE)
    resp = await client.patch(
        f"/api/v1/agents/{agent['id']}", json={"systemPrompt": TEN}, headers=auth
    )
    assert (await resp.json())["data"]["version"] == 2
    return agent


async def _start(client, auth, agent_id: str, variants: list, status: int = 201) -> dict:
    resp = await client.post(
        f"/api/v1/agents/{agent_id}/experiments", json={"variants": variants}, headers=auth
    )
    assert resp.status == status, await resp.text()
    return await resp.json()


async def _visit(client, auth, agent_id: str, session: str) -> tuple[str, str, str]:
    """One visitor's question; (the answer, its conversation, the answer's id)."""
    body = {"agentId": agent_id, "sessionId": session, "messages": user("When do you open?")}
    stream = await chat(client, body, auth)
    return stream.text, stream.start["conversationId"], stream.start["messageId"]


async def test_400_visitors_are_split_by_weight_and_counted_per_variant(client, auth):
    agent = await _agent_with_two_versions(client, auth)
    started = await _start(
        client, auth, agent["id"], [{"version": 1, "weight": 1}, {"version": 2, "weight": 3}]
    )
    experiment = started["data"]
    assert experiment["status"] == "running" and experiment["winner"] is None
    got = await (await client.get(f"/api/v1/agents/{agent['id']}", headers=auth)).json()
    assert got["data"]["experiment"]["id"] == experiment["id"]

    visits = []
    for batch in range(40):
        visits += await asyncio.gather(
            *(_visit(client, auth, agent["id"], f"visitor-{batch}-{i}") for i in range(10))
        )
    answers = [text for text, _, _ in visits]
    assert set(answers) == {NINE, TEN}
    on_nine = answers.count(NINE)
    assert 57 <= on_nine <= 143, on_nine  # 100 expected; five standard deviations
    # A visitor keeps their variant in a new conversation.
    again = await _visit(client, auth, agent["id"], "visitor-0-0")
    assert again[0] == answers[0]

    # The first 100 visitors rate: 👍 on version 1, 👎 on version 2.
    for text, conversation_id, message_id in visits[:100]:
        resp = await client.post(
            f"/api/v1/conversations/{conversation_id}/feedback",
            json={"messageId": message_id, "rating": "up" if text == NINE else "down"},
            headers=auth,
        )
        assert resp.status == 200
    detail = (
        await (await client.get(f"/api/v1/experiments/{experiment['id']}", headers=auth)).json()
    )["data"]
    by_version = {v["version"]: v for v in detail["results"]["variants"]}
    rated_nine = sum(1 for text, _, _ in visits[:100] if text == NINE)
    assert by_version[1]["conversations"] == on_nine + (answers[0] == NINE)
    assert by_version[1]["answers"] == by_version[1]["conversations"]
    assert by_version[1]["conversations"] + by_version[2]["conversations"] == 401
    up = by_version[1]["upRate"]
    assert up["value"] == round(100 * rated_nine / by_version[1]["answers"], 2)
    assert up["low"] < up["value"] < up["high"]
    assert by_version[2]["upRate"]["value"] == 0 and by_version[2]["upRate"]["low"] == 0
    assert by_version[1]["unansweredRate"]["value"] == 0
    assert by_version[1]["submissionsPerConversation"]["value"] == 0
    leading = detail["results"]["leading"]
    assert leading["upRate"] == 1 and leading["downRate"] == 1
    assert leading["handoffRate"] is None and leading["unansweredRate"] is None


async def test_stopping_with_a_winner_makes_it_live_and_only_one_runs(client, auth):
    agent = await _agent_with_two_versions(client, auth)
    before = await _visit(client, auth, agent["id"], "early")  # live: version 2
    variants = [{"version": 1, "weight": 1}, {"version": 2, "weight": 0}]
    experiment = (await _start(client, auth, agent["id"], variants))["data"]
    second = await _start(client, auth, agent["id"], variants, status=409)
    assert "stop it first" in second["error"]["message"]
    assert (await _visit(client, auth, agent["id"], "new-visitor"))[0] == NINE  # weight 0: never 2
    # A conversation that began before the experiment stays on the live version.
    body = {
        "agentId": agent["id"],
        "sessionId": "early",
        "conversationId": before[1],
        "messages": user("When do you open again?"),
    }
    assert (await chat(client, body, auth)).text == TEN

    url = f"/api/v1/experiments/{experiment['id']}/stop"
    resp = await client.post(url, json={"winner": 3}, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "not one of this experiment's")
    resp = await client.post(url, json={"winner": 1}, headers=auth)
    assert resp.status == 200, await resp.text()
    stopped = (await resp.json())["data"]
    assert stopped["status"] == "stopped" and stopped["winner"] == 1 and stopped["stoppedAt"]
    got = (await (await client.get(f"/api/v1/agents/{agent['id']}", headers=auth)).json())["data"]
    assert got["experiment"] is None and got["version"] == 3 and got["systemPrompt"] == NINE
    resp = await client.get(f"/api/v1/agents/{agent['id']}/versions/3", headers=auth)
    assert (await resp.json())["data"]["note"] == "Version 1 won an experiment against version 2"
    await assert_error(await client.post(url, json={}, headers=auth), 409, "CONFLICT")
    listed = await client.get(f"/api/v1/agents/{agent['id']}/experiments", headers=auth)
    assert [e["status"] for e in (await listed.json())["data"]] == ["stopped"]
    # Stopped, a new one may start.
    await _start(client, auth, agent["id"], variants)
    log = await client.get("/api/v1/audit-log?action=experiment.stopped", headers=auth)
    assert [e["details"]["winner"] for e in (await log.json())["data"]] == [1]


async def test_bad_experiments_are_refused_and_other_teams_kept_out(client, auth):
    agent = await _agent_with_two_versions(client, auth)
    bad = [
        ([{"version": 1, "weight": 1}], "2 to 5"),
        ([{"version": 1, "weight": 0}, {"version": 2, "weight": 0}], "more than 0"),
        ([{"version": 1, "weight": 1}, {"version": 1, "weight": 1}], "once"),
        ([{"version": 1, "weight": -1}, {"version": 2, "weight": 1}], None),
        ([{"version": 1, "weight": "x"}, {"version": 2, "weight": 1}], None),
        ([{"version": 0, "weight": 1}, {"version": 2, "weight": 1}], None),
        ([{"version": n, "weight": 1} for n in range(1, 7)], None),
        ([], None),
    ]
    for variants, words in bad:
        body = await _start(client, auth, agent["id"], variants, status=400)
        assert body["error"]["code"] == "VALIDATION_ERROR"
        if words:
            assert words in body["error"]["message"], body
    body = await _start(
        client, auth, agent["id"], [{"version": 1, "weight": 1}, {"version": 9, "weight": 1}], 404
    )
    assert body["error"]["message"] == "This agent has no version 9"
    experiment = (
        await _start(
            client, auth, agent["id"], [{"version": 1, "weight": 1}, {"version": 2, "weight": 1}]
        )
    )["data"]
    other = bearer(await new_api_key(client, "other@example.com"))
    for method, path, kwargs in (
        ("get", f"/experiments/{experiment['id']}", {}),
        ("post", f"/experiments/{experiment['id']}/stop", {"json": {}}),
        ("get", f"/agents/{agent['id']}/experiments", {}),
        ("post", f"/agents/{agent['id']}/experiments", {"json": {"variants": []}}),
    ):
        resp = await getattr(client, method)(f"/api/v1{path}", headers=other, **kwargs)
        assert resp.status in (404, 400), await resp.text()
        if method == "get" or "stop" in path:
            await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get("/api/v1/experiments/exp_nope", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND", "Experiment not found")
    await client.delete(f"/api/v1/agents/{agent['id']}", headers=auth)
    db = client.app[app_keys.db_key]
    assert await db.reader.fetchval("SELECT COUNT(*) FROM experiments") == 0


async def test_another_process_gives_a_visitor_the_same_variant(make_client, tmp_path):
    first = await make_client()
    auth = bearer(await new_api_key(first))
    agent = await _agent_with_two_versions(first, auth)
    variants = [{"version": 1, "weight": 1}, {"version": 2, "weight": 1}]
    await _start(first, auth, agent["id"], variants)
    second = await make_client(settings=make_settings(tmp_path))
    for i in range(20):
        one = await _visit(first, auth, agent["id"], f"v{i}")
        two = await _visit(second, auth, agent["id"], f"v{i}")
        assert one[0] == two[0]
