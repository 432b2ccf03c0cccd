"""Managing form submissions: listing, filters, pagination, team scope, what outlives a
tool, files removed with their submission, CORS of the public endpoints, and analytics."""

from __future__ import annotations

from agentsvc.api import app_keys
from agentsvc.services.forms.files import remove_orphan_files
from tests.support.accounts import bearer, new_api_key
from tests.support.errors import assert_error
from tests.support.forms import (
    FIELDS,
    data_url,
    detail,
    event,
    fast_client,
    make_agent,
    make_form,
    submitted,
)
from tests.support.storage import files_of, stored, stored_keys


async def test_list_filters_paginates_and_is_team_scoped(make_client, receiver):
    client, auth = await fast_client(make_client)
    ok_tool = await make_form(client, auth, formWebhookUrl=receiver.url("/ok"))
    gone_tool = await make_form(
        client,
        auth,
        agent_id=ok_tool["agentId"],
        name="other",
        formWebhookUrl=receiver.url("/gone"),
    )
    second_agent = await make_agent(client, auth, "Second")
    client_tool = await make_form(
        client,
        auth,
        second_agent,
        formExecutionMode="client",
        formClientHandler="h",
        formWebhookUrl=None,
    )
    ids = []
    for tool in (ok_tool, ok_tool, gone_tool, client_tool):
        ids.append((await submitted(client, tool["id"], {"email": "a@b.co"}))["submissionId"])

    async def listing(query: str = "", headers=auth) -> dict:
        resp = await client.get(f"/api/v1/form-submissions{query}", headers=headers)
        assert resp.status == 200, await resp.text()
        return await resp.json()

    everything = await listing()
    assert [s["id"] for s in everything["submissions"]] == ids[::-1]  # newest first
    assert everything["pagination"] == {"total": 4, "limit": 20, "offset": 0, "nextCursor": None}
    first = everything["submissions"][-1]
    assert set(first) == {
        "id",
        "toolId",
        "toolName",
        "agentId",
        "conversationId",
        "formData",
        "fieldsCompleted",
        "status",
        "executionMode",
        "webhookAttempts",
        "lastError",
        "clientResult",
        "createdAt",
        "updatedAt",
    }
    assert first["fieldsCompleted"] == ["email"]
    assert (await listing("?status=webhook_success"))["pagination"]["total"] == 2
    assert [s["id"] for s in (await listing("?status=webhook_failed"))["submissions"]] == [ids[2]]
    assert [s["id"] for s in (await listing("?status=submitted"))["submissions"]] == [ids[3]]
    assert (await listing(f"?agentId={second_agent}"))["pagination"]["total"] == 1
    assert (await listing(f"?toolId={ok_tool['id']}"))["pagination"]["total"] == 2
    page = await listing("?limit=2&offset=1")
    assert [s["id"] for s in page["submissions"]] == [ids[2], ids[1]]
    assert page["pagination"]["total"] == 4 and page["pagination"]["nextCursor"]
    # Cursors walk every page in the same order, whatever the depth.
    walked, cursor = [], None
    while True:
        step = await listing("?limit=3" + (f"&cursor={cursor}" if cursor else ""))
        walked += [s["id"] for s in step["submissions"]]
        cursor = step["pagination"]["nextCursor"]
        if cursor is None:
            break
    assert walked == ids[::-1]
    past = await listing("?offset=10")
    assert past["submissions"] == [] and past["pagination"]["total"] == 4

    for query, field in (
        ("?status=done", "query.status"),
        ("?limit=101", "query.limit"),
        ("?limit=0", "query.limit"),
        ("?offset=-1", "query.offset"),
        ("?limit=ten", "query.limit"),
        ("?cursor=nonsense", "cursor"),
    ):
        resp = await client.get(f"/api/v1/form-submissions{query}", headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)

    stranger = bearer(await new_api_key(client, "stranger@example.com"))
    assert (await listing(headers=stranger))["pagination"]["total"] == 0
    resp = await client.get(f"/api/v1/form-submissions/{ids[0]}", headers=stranger)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get("/api/v1/form-submissions")
    await assert_error(resp, 401, "UNAUTHORIZED")
    resp = await client.get(f"/api/v1/form-submissions/{ids[0]}")
    await assert_error(resp, 401, "UNAUTHORIZED")
    resp = await client.get("/api/v1/form-submissions/sub_missing", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_submissions_outlive_their_tool_and_go_with_their_agent(make_client, receiver):
    client, auth = await fast_client(make_client)
    tool = await make_form(client, auth, formWebhookUrl=receiver.url("/ok"))
    result = await submitted(client, tool["id"], {"email": "a@b.co"})
    resp = await client.delete(f"/api/v1/tools/{tool['id']}", headers=auth)
    assert resp.status == 200
    sub = await detail(client, auth, result["submissionId"])
    assert sub["toolName"] == "contact"
    resp = await client.delete(f"/api/v1/agents/{tool['agentId']}", headers=auth)
    assert resp.status == 200
    resp = await client.get(f"/api/v1/form-submissions/{result['submissionId']}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_files_of_deleted_submissions_are_removed(make_client, receiver):
    client, auth = await fast_client(make_client)
    files = files_of(client)
    kept_tool = await make_form(client, auth, formWebhookUrl=receiver.url("/ok"))
    doomed_tool = await make_form(client, auth, formWebhookUrl=receiver.url("/ok"))
    kept = await submitted(client, kept_tool["id"], {"email": "a@b.co", "cv": data_url(b"1")})
    doomed = await submitted(client, doomed_tool["id"], {"email": "a@b.co", "cv": data_url(b"2")})
    resp = await client.delete(f"/api/v1/agents/{doomed_tool['agentId']}", headers=auth)
    assert resp.status == 200
    db = client.app[app_keys.db_key]
    # Young folders are left alone (their submit may still be committing).
    assert await remove_orphan_files(db, files) == 0
    assert await remove_orphan_files(db, files, grace=0) == 1
    assert await stored_keys(client, doomed["submissionId"]) == []
    assert await stored(client, f"{kept['submissionId']}/cv.pdf") == b"1"


async def test_public_endpoints_answer_cors_preflights(client):
    for path in (
        "/api/v1/form-submissions/submit",
        "/api/v1/form-submissions/client-result",
        "/api/v1/form-submissions/event",
        "/api/v1/triggers/form/tool_x",
    ):
        resp = await client.options(
            path,
            headers={"Origin": "https://shop.example", "Access-Control-Request-Method": "POST"},
        )
        assert resp.status == 204
        assert resp.headers["Access-Control-Allow-Origin"] == "*"


async def test_analytics(make_client, receiver):
    client, auth = await fast_client(make_client)
    tool = await make_form(client, auth, formWebhookUrl=receiver.url("/ok"))
    agent_id = tool["agentId"]
    quiet = await make_form(
        client, auth, agent_id=agent_id, name="quiet", formWebhookUrl=receiver.url("/gone")
    )
    for kind in ("impression",) * 4 + ("started",) * 3:
        resp = await event(client, tool["id"], kind)
        assert resp.status == 202 and await resp.json() == {"success": True}
    # As the widget sends them: with the times of the impression and start it reported.
    seen = {"impressionAt": 1763719200000, "startedAt": 1763719205000}
    await submitted(client, tool["id"], {"email": "a@b.co", "name": "Ada"}, **seen)
    await submitted(client, tool["id"], {"email": "b@b.co"}, **seen)
    resp = await event(client, quiet["id"], "impression", None)
    assert resp.status == 202
    failed = await submitted(client, quiet["id"], {"email": "a@b.co"}, impressionAt=1)
    assert failed["status"] == "webhook_failed"

    resp = await client.get(f"/api/v1/form-submissions/analytics?agentId={agent_id}", headers=auth)
    assert resp.status == 200, await resp.text()
    entries = {e["toolId"]: e for e in (await resp.json())["analytics"]}
    main = entries[tool["id"]]
    assert main == {
        "toolId": tool["id"],
        "toolName": "contact",
        "impressions": 4,
        "started": 3,
        "submitted": 2,
        "successful": 2,
        "failed": 0,
        "conversionRate": 50.0,
        "completionRate": 66.7,
        "fieldCompletionRates": {
            **{f["name"]: 0.0 for f in FIELDS},
            "email": 100.0,
            "name": 50.0,
        },
    }
    other = entries[quiet["id"]]
    # Sent with no startedAt (and no start event): the submission was its own start.
    assert other["impressions"] == 1 and other["started"] == 1
    assert other["submitted"] == 1 and other["failed"] == 1 and other["successful"] == 0
    assert other["conversionRate"] == 100.0
    assert other["completionRate"] == 100.0

    fresh = await make_agent(client, auth, "Fresh")
    await make_form(client, auth, fresh)
    resp = await client.get(f"/api/v1/form-submissions/analytics?agentId={fresh}", headers=auth)
    [empty] = (await resp.json())["analytics"]
    assert empty["conversionRate"] == 0 and empty["completionRate"] == 0
    assert set(empty["fieldCompletionRates"].values()) == {0}

    resp = await client.get("/api/v1/form-submissions/analytics", headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "query.agentId")
    stranger = bearer(await new_api_key(client, "stranger@example.com"))
    resp = await client.get(
        f"/api/v1/form-submissions/analytics?agentId={agent_id}", headers=stranger
    )
    await assert_error(resp, 404, "NOT_FOUND")


async def test_event_errors_and_rate_limit(make_client):
    client = await make_client(ratelimit={"trigger_events_per_minute": 3})
    auth = bearer(await new_api_key(client))
    tool = await make_form(client, auth)
    resp = await event(client, "tool_missing", "impression")
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await event(client, tool["id"], "clicked")
    await assert_error(resp, 400, "VALIDATION_ERROR", "eventType")
    for _ in range(2):
        assert (await event(client, tool["id"], "impression")).status == 202
    resp = await event(client, tool["id"], "impression")
    error = await assert_error(resp, 429, "RATE_LIMITED")
    assert error["message"]
    assert int(resp.headers["Retry-After"]) >= 1
