"""Tool calls a person approves first (issue 36): the turn pauses at the call, a member
approves (maybe with an edited input) or denies it, and the turn goes on in the visitor's
open stream, or, when the visitor left, in the conversation."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.accounts import bearer, new_api_key
from tests.support.approvals import (
    FAST,
    agent_with_refund,
    answer_of,
    ask_refund,
    data_of,
    decide,
    pending_of,
)
from tests.support.errors import assert_error


@pytest.fixture
async def fast(make_client):
    return await make_client(**FAST)


@pytest.fixture
async def fast_auth(fast):
    return bearer(await new_api_key(fast))


async def test_approved_in_the_open_stream_the_turn_goes_on(fast, fast_auth):
    client, auth = fast, fast_auth
    agent_id = await agent_with_refund(client, auth)
    stream = await ask_refund(client, agent_id)
    conversation_id, approval_id = await pending_of(client, auth, stream)
    pending = await data_of(await client.get("/api/v1/approvals?status=pending", headers=auth))
    assert [(a["id"], a["toolName"], a["input"]) for a in pending] == [
        (approval_id, "refund", {"order": "A1"})
    ]
    assert pending[0]["conversationId"] == conversation_id
    found = await data_of(await decide(client, auth, approval_id, "approve"))
    assert found["status"] == "approved" and found["decidedBy"]["id"]
    decided = await stream.until("approval_decided")
    assert decided["status"] == "approved" and decided["input"] == {"order": "A1"}
    result = await stream.until("tool_result")
    assert result["output"] == {"refunded": True} and result["isError"] is False
    rest = await stream.rest()
    assert [name for name, _ in rest][-1] == "message_stop"
    answer = await answer_of(client, auth, conversation_id)
    assert "refunded" in answer["content"]
    assert answer["toolCalls"][0]["output"] == {"refunded": True}
    again = await decide(client, auth, approval_id, "approve")
    await assert_error(again, 409, "CONFLICT", "already approved")


async def test_an_edited_input_is_checked_then_runs(fast, fast_auth, receiver):
    """A member may change the input: it is checked against the tool's inputSchema as the
    model's is (400 with the reason, nothing decided), then the tool runs with it."""
    client, auth = fast, fast_auth
    agent_id = await agent_with_refund(
        client,
        auth,
        executionType="http",
        httpUrl=receiver.url("/refunds"),
        httpMethod="POST",
    )
    stream = await ask_refund(client, agent_id, order="A1")
    conversation_id, approval_id = await pending_of(client, auth, stream)
    for bad in ({"order": "nope"}, {"order": 7}, {}):
        resp = await decide(client, auth, approval_id, "approve", {"input": bad})
        await assert_error(resp, 400, "VALIDATION_ERROR", "input:")
    resp = await decide(client, auth, approval_id, "approve", {"input": "A2"})
    await assert_error(resp, 400, "VALIDATION_ERROR", "input")
    found = await data_of(await client.get(f"/api/v1/approvals/{approval_id}", headers=auth))
    assert found["status"] == "pending" and found["decidedBy"] is None
    found = await data_of(
        await decide(client, auth, approval_id, "approve", {"input": {"order": "A2"}})
    )
    assert found["editedInput"] == {"order": "A2"} and found["input"] == {"order": "A1"}
    decided = await stream.until("approval_decided")
    assert decided["input"] == {"order": "A2"}
    await stream.until("tool_result")
    await stream.rest()
    await receiver.wait_for(1, "/refunds")
    assert [h.json for h in receiver.at("/refunds")] == [{"order": "A2"}]
    answer = await answer_of(client, auth, conversation_id)
    assert answer["toolCalls"][0]["input"] == {"order": "A2"}
    found = await data_of(await client.get(f"/api/v1/approvals/{approval_id}", headers=auth))
    assert found["ranAt"] and found["output"]["status"] == 200 and found["isError"] is False


async def test_denied_the_model_reads_the_reason(fast, fast_auth):
    client, auth = fast, fast_auth
    agent_id = await agent_with_refund(client, auth)
    stream = await ask_refund(client, agent_id)
    conversation_id, approval_id = await pending_of(client, auth, stream)
    for body in ({}, {"reason": ""}, {"reason": "   "}, {"reason": "x" * 1001}):
        resp = await decide(client, auth, approval_id, "deny", body)
        await assert_error(resp, 400, "VALIDATION_ERROR", "reason")
    found = await data_of(
        await decide(client, auth, approval_id, "deny", {"reason": "Order shipped already"})
    )
    assert found["status"] == "denied" and found["reason"] == "Order shipped already"
    decided = await stream.until("approval_decided")
    assert decided["status"] == "denied" and decided["reason"] == "Order shipped already"
    result = await stream.until("tool_result")
    assert result["isError"] is True and "Order shipped already" in result["output"]
    await stream.rest()
    answer = await answer_of(client, auth, conversation_id)
    assert "Order shipped already" in answer["content"]
    assert found["ranAt"] is None
    for verb, body in (("approve", {}), ("deny", {"reason": "again"})):
        resp = await decide(client, auth, approval_id, verb, body)
        error = await assert_error(resp, 409, "CONFLICT", "already denied")
        assert "cannot be changed" in error["message"]


async def test_no_decision_in_time_denies_the_call(fast, fast_auth):
    client, auth = fast, fast_auth
    agent_id = await agent_with_refund(client, auth, approvalTimeoutSeconds=1)
    stream = await ask_refund(client, agent_id)
    conversation_id, approval_id = await pending_of(client, auth, stream)
    decided = await stream.until("approval_decided")
    assert decided["status"] == "expired"
    assert decided["reason"] == "No one from the team decided within 1 second"
    result = await stream.until("tool_result")
    assert result["isError"] and "not run" in result["output"]
    await stream.rest()
    for verb, body in (("approve", {}), ("deny", {"reason": "late"})):
        resp = await decide(client, auth, approval_id, verb, body)
        await assert_error(
            resp,
            409,
            "CONFLICT",
            "This call can no longer be decided: no one from the team decided within 1 second,"
            " so it was denied",
        )
    answer = await answer_of(client, auth, conversation_id)
    assert "not run" in answer["content"]
    log = await data_of(await client.get("/api/v1/audit-log?action=approval.expired", headers=auth))
    assert [(e["target"]["id"], e["actor"]["via"]) for e in log] == [(approval_id, "system")]


async def test_every_decision_is_in_the_audit_log(fast, fast_auth):
    client, auth = fast, fast_auth
    agent_id = await agent_with_refund(client, auth)
    ids = []
    for verb, body in (("approve", {"input": {"order": "A9"}}), ("deny", {"reason": "No"})):
        stream = await ask_refund(client, agent_id)
        _, approval_id = await pending_of(client, auth, stream)
        await data_of(await decide(client, auth, approval_id, verb, body))
        await stream.rest()
        ids.append(approval_id)
    log = await data_of(await client.get("/api/v1/audit-log", headers=auth))
    decisions = [e for e in log if e["action"].startswith("approval.")]
    assert [(e["action"], e["target"]["id"], e["target"]["label"]) for e in decisions] == [
        ("approval.denied", ids[1], "refund"),
        ("approval.approved", ids[0], "refund"),
    ]
    assert decisions[0]["details"]["reason"] == "No"
    assert decisions[1]["details"]["inputEdited"] is True
    assert decisions[1]["actor"]["via"] == "apiKey"


async def test_tool_fields_and_their_refusals(client, auth):
    agent_id = await agent_with_refund(client, auth)
    tools = await client.get(f"/api/v1/tools?agentId={agent_id}", headers=auth)
    (tool,) = await tools.json()
    assert tool["requiresApproval"] is True and tool["approvalTimeoutSeconds"] == 3600
    path = f"/api/v1/tools/{tool['id']}"
    for bad in (0, 604801, "60", 1.5, True):
        resp = await client.put(path, json={"approvalTimeoutSeconds": bad}, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", "approvalTimeoutSeconds")
    resp = await client.put(path, json={"requiresApproval": "yes"}, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "requiresApproval")
    resp = await client.put(path, json={"approvalTimeoutSeconds": 90}, headers=auth)
    assert (await resp.json())["approvalTimeoutSeconds"] == 90
    resp = await client.put(path, json={"requiresApproval": False}, headers=auth)
    assert (await resp.json())["requiresApproval"] is False
    form = {
        "agentId": agent_id,
        "name": "contact",
        "description": "Contact form",
        "executionType": "form",
        "formSchema": {"fields": [{"name": "email", "label": "E-mail", "type": "email"}]},
        "requiresApproval": True,
    }
    resp = await client.post("/api/v1/tools", json=form, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "a form tool cannot require approval")


async def test_bad_queries_and_bodies_are_refused(fast, fast_auth):
    client, auth = fast, fast_auth
    for query in ("status=maybe", "limit=0", "limit=101", "cursor=nonsense", "agentId="):
        resp = await client.get(f"/api/v1/approvals?{query}", headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR")
    agent_id = await agent_with_refund(client, auth)
    stream = await ask_refund(client, agent_id)
    _, approval_id = await pending_of(client, auth, stream)
    for body in ({"input": [1]}, {"input": None}, {"inputs": {}}, {"input": {}, "reason": "x"}):
        resp = await decide(client, auth, approval_id, "approve", body)
        await assert_error(resp, 400, "VALIDATION_ERROR")
    resp = await client.post(f"/api/v1/approvals/{approval_id}/approve", data=b"{", headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR")
    resp = await decide(client, auth, "apr_missing", "approve")
    await assert_error(resp, 404, "NOT_FOUND", "Approval not found")
    found = await data_of(await client.get(f"/api/v1/approvals/{approval_id}", headers=auth))
    assert found["status"] == "pending"
    stream.close()


async def test_another_team_neither_sees_nor_decides(fast, fast_auth):
    client, auth = fast, fast_auth
    agent_id = await agent_with_refund(client, auth)
    stream = await ask_refund(client, agent_id)
    _, approval_id = await pending_of(client, auth, stream)
    other = bearer(await new_api_key(client, "other@example.com"))
    assert await data_of(await client.get("/api/v1/approvals", headers=other)) == []
    resp = await client.get(f"/api/v1/approvals?agentId={agent_id}", headers=other)
    assert await data_of(resp) == []
    for method, suffix, body in (
        ("GET", "", None),
        ("POST", "/approve", {}),
        ("POST", "/deny", {"reason": "mine now"}),
    ):
        resp = await client.request(
            method, f"/api/v1/approvals/{approval_id}{suffix}", json=body, headers=other
        )
        await assert_error(resp, 404, "NOT_FOUND")
    await data_of(await decide(client, auth, approval_id, "approve"))
    await stream.rest()


async def test_a_tool_deleted_while_its_call_waits_does_not_run(fast, fast_auth):
    client, auth = fast, fast_auth
    agent_id = await agent_with_refund(client, auth)
    (tool,) = await (await client.get(f"/api/v1/tools?agentId={agent_id}", headers=auth)).json()
    stream = await ask_refund(client, agent_id)
    conversation_id, approval_id = await pending_of(client, auth, stream)
    resp = await client.delete(f"/api/v1/tools/{tool['id']}", headers=auth)
    assert resp.status == 200
    resp = await decide(client, auth, approval_id, "approve", {"input": {"order": "A5"}})
    await assert_error(resp, 409, "CONFLICT", "no longer available to this agent")
    await data_of(await decide(client, auth, approval_id, "approve"))
    result = await stream.until("tool_result")
    assert result["isError"] and "no longer available" in result["output"]
    await stream.rest()
    found = await data_of(await client.get(f"/api/v1/approvals/{approval_id}", headers=auth))
    assert found["ranAt"] is None and found["status"] == "approved"
    assert "no longer available" in (await answer_of(client, auth, conversation_id))["content"]


async def test_the_list_pages_and_filters(fast, fast_auth):
    client, auth = fast, fast_auth
    agent_id = await agent_with_refund(client, auth)
    streams, ids = [], []
    for order in ("A1", "A2", "A3"):
        stream = await ask_refund(client, agent_id, order=order)
        ids.append((await pending_of(client, auth, stream))[1])
        streams.append(stream)
        await asyncio.sleep(0.005)  # times in milliseconds: each call in one of its own
    resp = await client.get("/api/v1/approvals?status=pending&limit=2", headers=auth)
    first = await resp.json()
    assert [a["id"] for a in first["data"]] == ids[:2]  # the longest wait first
    cursor = first["pagination"]["nextCursor"]
    resp = await client.get(
        f"/api/v1/approvals?status=pending&limit=2&cursor={cursor}", headers=auth
    )
    second = await resp.json()
    assert [a["id"] for a in second["data"]] == ids[2:]
    assert second["pagination"]["nextCursor"] is None
    await data_of(await decide(client, auth, ids[1], "deny", {"reason": "No"}))
    denied = await data_of(await client.get("/api/v1/approvals?status=denied", headers=auth))
    assert [a["id"] for a in denied] == [ids[1]]
    every = await data_of(await client.get(f"/api/v1/approvals?agentId={agent_id}", headers=auth))
    assert [a["id"] for a in every] == ids[::-1]  # newest first
    conversation = every[0]["conversationId"]
    resp = await client.get(f"/api/v1/approvals?conversationId={conversation}", headers=auth)
    assert [a["id"] for a in await data_of(resp)] == [ids[2]]
    for approval_id in (ids[0], ids[2]):
        await data_of(await decide(client, auth, approval_id, "approve"))
    for stream in streams:
        await stream.rest()
