"""Draft and publish: in draft mode an agent's changes wait in its one draft, the team talks
to the draft (or an earlier version) in a preview while visitors keep the live agent, and
publishing makes the draft the next version; bad input and other teams refused."""

from __future__ import annotations

import asyncio

from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, new_agent, user
from tests.support.errors import assert_error

OPEN = "When do you open?"


async def _patch(client, auth, agent_id: str, status: int = 200, **fields) -> dict:
    resp = await client.patch(f"/api/v1/agents/{agent_id}", json=fields, headers=auth)
    assert resp.status == status, await resp.text()
    return await resp.json()


async def _drafting(client, auth, prompt: str = "We open at nine.") -> dict:
    agent = await new_agent(client, auth, systemPrompt=prompt)
    await _patch(client, auth, agent["id"], versioning="draft")
    return agent


async def _ask(client, agent_id: str, headers=None, **extra) -> str:
    body = {"agentId": agent_id, "messages": user(OPEN), **extra}
    return (await chat(client, body, headers)).text


async def test_changes_wait_in_the_draft_while_visitors_keep_the_live_agent(client, auth):
    agent = await _drafting(client, auth)
    body = (await _patch(client, auth, agent["id"], systemPrompt="We open at ten."))["data"]
    assert body["systemPrompt"] == "We open at nine." and body["version"] == 1
    assert body["versioning"] == "draft"
    assert body["draft"]["basedOn"] == 1
    assert body["draft"]["snapshot"]["systemPrompt"] == "We open at ten."
    # The name and the widget change at once; they are not what the agent does.
    renamed = (await _patch(client, auth, agent["id"], name="Corner shop"))["data"]
    assert renamed["name"] == "Corner shop" and renamed["draft"] is not None
    assert await _ask(client, agent["id"]) == "We open at nine."  # a visitor
    assert await _ask(client, agent["id"], auth, version="draft") == "We open at ten."
    assert await _ask(client, agent["id"], auth, version=1) == "We open at nine."
    resp = await client.get(f"/api/v1/agents/{agent['id']}/versions", headers=auth)
    assert [v["number"] for v in (await resp.json())["data"]] == [1]


async def test_preview_answers_name_the_version_and_a_draft_none(client, auth):
    agent = await _drafting(client, auth)
    await _patch(client, auth, agent["id"], systemPrompt="We open at ten.")
    stream = await chat(
        client, {"agentId": agent["id"], "messages": user(OPEN), "version": "draft"}, auth
    )
    conversation_id = stream.start["conversationId"]
    await chat(
        client,
        {
            "agentId": agent["id"],
            "conversationId": conversation_id,
            "messages": user("When do you open again?"),
            "version": 1,
        },
        auth,
    )
    resp = await client.get(f"/api/v1/conversations/{conversation_id}", headers=auth)
    messages = (await resp.json())["data"]["messages"]
    assert [m["agentVersion"] for m in messages if m["role"] == "assistant"] == [None, 1]


async def test_publish_makes_the_draft_the_next_version(client, auth):
    agent = await _drafting(client, auth)
    await _patch(client, auth, agent["id"], systemPrompt="We open at ten.", temperature=15)
    await _patch(client, auth, agent["id"], handoff={"enabled": True})
    draft = await client.get(f"/api/v1/agents/{agent['id']}/versions/draft", headers=auth)
    snapshot = (await draft.json())["data"]["snapshot"]
    assert snapshot["handoff"]["enabled"] is True and snapshot["temperature"] == 15
    live = await (await client.get(f"/api/v1/agents/{agent['id']}", headers=auth)).json()
    assert live["data"]["handoff"]["enabled"] is False  # the live handoff is untouched
    resp = await client.get(f"/api/v1/agents/{agent['id']}/versions/1/diff/draft", headers=auth)
    found = (await resp.json())["data"]
    assert found["to"] == "draft"
    assert [c["field"] for c in found["changes"]] == ["systemPrompt", "temperature", "handoff"]

    resp = await client.post(
        f"/api/v1/agents/{agent['id']}/publish", json={"note": "Longer hours"}, headers=auth
    )
    assert resp.status == 200, await resp.text()
    published = (await resp.json())["data"]
    assert published["version"]["number"] == 2 and published["version"]["note"] == "Longer hours"
    assert published["agent"]["draft"] is None
    assert published["agent"]["systemPrompt"] == "We open at ten."
    assert published["agent"]["handoff"]["enabled"] is True
    assert await _ask(client, agent["id"]) == "We open at ten."
    resp = await client.post(f"/api/v1/agents/{agent['id']}/publish", json={}, headers=auth)
    await assert_error(resp, 409, "CONFLICT", "no draft to publish")
    resp = await client.get("/api/v1/audit-log?action=agent.published", headers=auth)
    assert [e["details"] for e in (await resp.json())["data"]] == [{"version": 2}]


async def test_a_draft_equal_to_live_is_none_and_a_draft_can_be_discarded(client, auth):
    agent = await _drafting(client, auth)
    await _patch(client, auth, agent["id"], systemPrompt="Changed.")
    back = (await _patch(client, auth, agent["id"], systemPrompt="We open at nine."))["data"]
    assert back["draft"] is None
    await _patch(client, auth, agent["id"], systemPrompt="Changed.")
    # Back to changes going live at once: not while a draft waits.
    resp = await client.patch(
        f"/api/v1/agents/{agent['id']}", json={"versioning": "live"}, headers=auth
    )
    await assert_error(resp, 409, "CONFLICT", "publish it or discard it")
    resp = await client.delete(f"/api/v1/agents/{agent['id']}/draft", headers=auth)
    assert resp.status == 200
    assert (await resp.json())["data"]["agent"]["draft"] is None
    resp = await client.delete(f"/api/v1/agents/{agent['id']}/draft", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND", "no draft")
    live = (await _patch(client, auth, agent["id"], versioning="live"))["data"]
    assert live["versioning"] == "live" and live["systemPrompt"] == "We open at nine."
    changed = (await _patch(client, auth, agent["id"], systemPrompt="Now at once."))["data"]
    assert changed["systemPrompt"] == "Now at once." and changed["version"] == 2


async def test_restoring_in_draft_mode_goes_live_and_keeps_the_draft(client, auth):
    agent = await new_agent(client, auth, systemPrompt="We open at nine.")
    await _patch(client, auth, agent["id"], systemPrompt="We open at ten.")
    await _patch(client, auth, agent["id"], versioning="draft", systemPrompt="Draft hours.")
    resp = await client.post(f"/api/v1/agents/{agent['id']}/versions/1/restore", headers=auth)
    restored = (await resp.json())["data"]
    assert restored["restored"] is True and restored["agent"]["version"] == 3
    assert restored["agent"]["systemPrompt"] == "We open at nine."
    assert restored["agent"]["draft"]["snapshot"]["systemPrompt"] == "Draft hours."


async def test_previews_are_the_teams_alone_and_bad_versions_are_refused(client, auth):
    agent = await _drafting(client, auth)
    body = {"agentId": agent["id"], "messages": user(OPEN)}
    resp = await client.post("/api/v1/chat", json={**body, "version": 1})
    await assert_error(resp, 403, "FORBIDDEN", "Only the agent's team")
    other = bearer(await new_api_key(client, "other@example.com"))
    resp = await client.post("/api/v1/chat", json={**body, "version": 1}, headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.post("/api/v1/chat", json={**body, "version": "draft"}, headers=auth)
    await assert_error(resp, 404, "NOT_FOUND", "no draft")
    resp = await client.post("/api/v1/chat", json={**body, "version": 7}, headers=auth)
    await assert_error(resp, 404, "NOT_FOUND", "no version 7")
    for bad in (0, -1, "latest", 1.5, True, 10**10):
        resp = await client.post("/api/v1/chat", json={**body, "version": bad}, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR")
    for bad in ("on", 1, None):
        resp = await client.patch(
            f"/api/v1/agents/{agent['id']}", json={"versioning": bad}, headers=auth
        )
        await assert_error(resp, 400, "VALIDATION_ERROR")
    resp = await client.post(
        f"/api/v1/agents/{agent['id']}/publish", json={"note": "x" * 501}, headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR")
    for method, path in (
        ("post", "publish"),
        ("delete", "draft"),
        ("get", "versions/draft"),
        ("get", "versions/draft/diff/1"),
    ):
        kwargs = {"json": {}} if method == "post" else {}
        resp = await getattr(client, method)(
            f"/api/v1/agents/{agent['id']}/{path}", headers=other, **kwargs
        )
        await assert_error(resp, 404, "NOT_FOUND")


async def test_changes_at_once_number_their_versions_one_after_the_other(client, auth):
    agent = await new_agent(client, auth)
    results = await asyncio.gather(
        *(
            client.patch(
                f"/api/v1/agents/{agent['id']}", json={"systemPrompt": f"Rule {i}."}, headers=auth
            )
            for i in range(6)
        )
    )
    assert [r.status for r in results] == [200] * 6
    resp = await client.get(f"/api/v1/agents/{agent['id']}/versions", headers=auth)
    assert [v["number"] for v in (await resp.json())["data"]] == [7, 6, 5, 4, 3, 2, 1]
    got = await (await client.get(f"/api/v1/agents/{agent['id']}", headers=auth)).json()
    assert got["data"]["version"] == 7
