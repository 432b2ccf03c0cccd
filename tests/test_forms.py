"""Form submissions: public form, validation, durable signed delivery, post actions,
client results, management and analytics."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
import re
import signal
import sys
from typing import Any

import aiohttp
import pytest
from standardwebhooks.webhooks import Webhook

from agentsvc.api import app_keys
from agentsvc.services.forms.files import remove_orphan_files
from agentsvc.services.team import accounts
from tests.conftest import assert_error, bearer, new_api_key
from tests.fakes.webhook_receiver import WebhookReceiver, free_port
from tests.saved_tools import save_tool_as_if_private_allowed

FAST = {"retry_schedule_seconds": [0, 0.2, 0.4], "timeout_seconds": 0.5}

FIELDS = [
    {
        "name": "email",
        "label": "E-mail",
        "type": "email",
        "validation": {"required": {"value": True, "message": "Please give your e-mail"}},
    },
    {"name": "name", "label": "Name", "type": "text", "validation": {"maxLength": {"value": 20}}},
    {"name": "phone", "label": "Phone", "type": "tel"},
    {"name": "seats", "label": "Seats", "type": "number", "validation": {"min": {"value": 1}}},
    {"name": "day", "label": "Day", "type": "date"},
    {"name": "at", "label": "At", "type": "datetime"},
    {
        "name": "plan",
        "label": "Plan",
        "type": "select",
        "options": [{"label": "Basic", "value": "basic"}, {"label": "Pro", "value": "pro"}],
    },
    {
        "name": "extras",
        "label": "Extras",
        "type": "multiselect",
        "options": [{"label": "A", "value": "a"}, {"label": "B", "value": "b"}],
    },
    {"name": "cv", "label": "CV", "type": "file"},
    {"name": "photo", "label": "Photo", "type": "image"},
]


@pytest.fixture
async def receiver():
    rec = await WebhookReceiver(slow_seconds=2.0).start()
    yield rec
    await rec.close()


async def make_agent(client, auth, name: str = "Shop") -> str:
    resp = await client.post("/api/v1/agents", json={"name": name}, headers=auth)
    assert resp.status == 201, await resp.text()
    return (await resp.json())["data"]["id"]


async def make_form(client, auth, agent_id: str | None = None, **over: Any) -> dict:
    """Create a form tool through the API and return it (with its formWebhookSecret)."""
    agent_id = agent_id or await make_agent(client, auth)
    body = {
        "agentId": agent_id,
        "name": "contact",
        "description": "Collect contact details",
        "executionType": "form",
        "inputSchema": {"type": "object", "properties": {}},
        "formSchema": {"fields": FIELDS, "submitLabel": "Send"},
        "formExecutionMode": "webhook",
        "formWebhookUrl": "http://127.0.0.1:9/never",
        **over,
    }
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    assert resp.status == 201, await resp.text()
    return await resp.json()


async def submit(client, tool_id: str, form_data: dict, **extra: Any):
    body = {"toolId": tool_id, "formData": form_data, "fieldsCompleted": list(form_data), **extra}
    return await client.post("/api/v1/form-submissions/submit", json=body)


async def submitted(client, tool_id: str, form_data: dict, **extra: Any) -> dict:
    resp = await submit(client, tool_id, form_data, **extra)
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def detail(client, auth, sub_id: str) -> dict:
    resp = await client.get(f"/api/v1/form-submissions/{sub_id}", headers=auth)
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def wait_status(client, auth, sub_id: str, status: str, timeout: float = 10) -> dict:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        sub = await detail(client, auth, sub_id)
        if sub["status"] == status:
            return sub
        assert asyncio.get_running_loop().time() < deadline, sub
        await asyncio.sleep(0.05)


def data_url(raw: bytes, kind: str = "application/pdf", name: str | None = None) -> str:
    params = f";name={name}" if name else ""
    return f"data:{kind}{params};base64,{base64.b64encode(raw).decode()}"


# ── public form ─────────────────────────────────────────────────────────────────────────
async def test_public_form_by_id_and_by_name(client, auth):
    tool = await make_form(
        client,
        auth,
        formExecutionMode="both",
        formClientHandler="crm",
        formWebhookUrl="http://x.test/h",
    )
    for path in (
        f"/api/v1/triggers/form/{tool['id']}",
        f"/api/v1/triggers/form/contact?agentId={tool['agentId']}",
    ):
        resp = await client.get(path)
        assert resp.status == 200, await resp.text()
        assert resp.headers["Access-Control-Allow-Origin"] == "*"
        body = await resp.json()
        assert body == {
            "toolId": tool["id"],
            "toolName": "contact",
            "formSchema": tool["formSchema"],
            "executionMode": "both",
            "clientHandler": "crm",
        }
    resp = await client.get("/api/v1/triggers/form/contact")
    await assert_error(resp, 404, "NOT_FOUND", "give agentId")
    resp = await client.get(f"/api/v1/triggers/form/nope?agentId={tool['agentId']}")
    await assert_error(resp, 404, "NOT_FOUND", "Form not found")
    # A disabled form is not offered.
    resp = await client.put(f"/api/v1/tools/{tool['id']}", json={"isEnabled": False}, headers=auth)
    assert resp.status == 200, await resp.text()
    resp = await client.get(f"/api/v1/triggers/form/{tool['id']}")
    await assert_error(resp, 404, "NOT_FOUND")


async def test_public_form_of_a_non_form_tool_is_not_found(client, auth):
    agent_id = await make_agent(client, auth)
    body = {
        "agentId": agent_id,
        "name": "lookup",
        "description": "x",
        "executionType": "mock",
        "inputSchema": {"type": "object", "properties": {}},
        "mockResponse": "{}",
    }
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    tool_id = (await resp.json())["id"]
    resp = await client.get(f"/api/v1/triggers/form/{tool_id}")
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await submit(client, tool_id, {})
    await assert_error(resp, 404, "NOT_FOUND")


# ── validation ──────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize(
    ("form_data", "message"),
    [
        ({}, "formData.email: Please give your e-mail"),
        ({"email": "   "}, "formData.email: Please give your e-mail"),
        ({"email": "not-an-address"}, "formData.email: must be an e-mail address"),
        ({"email": "a@b.co", "name": "x" * 21}, "formData.name: must be at most 20"),
        ({"email": "a@b.co", "phone": "call me"}, "formData.phone: must be a telephone number"),
        ({"email": "a@b.co", "seats": "many"}, "formData.seats: must be a number"),
        ({"email": "a@b.co", "seats": 0}, "formData.seats: must be at least 1"),
        ({"email": "a@b.co", "day": "21/11/2026"}, "formData.day: must be an ISO date"),
        ({"email": "a@b.co", "day": "2026-02-30"}, "formData.day: must be an ISO date"),
        ({"email": "a@b.co", "at": "tomorrow"}, "formData.at: must be an ISO date and time"),
        ({"email": "a@b.co", "plan": "gold"}, "formData.plan: must be one of the options"),
        ({"email": "a@b.co", "extras": "a"}, "formData.extras: must be a list of options"),
        ({"email": "a@b.co", "extras": ["a", "z"]}, "formData.extras: 'z' is not one of"),
        ({"email": "a@b.co", "cv": "hello"}, "formData.cv: must be a base64 data URL"),
        ({"email": "a@b.co", "cv": "data:text/plain;base64,@@@"}, "not valid base64"),
        ({"email": "a@b.co", "photo": data_url(b"%PDF")}, "formData.photo: must be an image"),
        ({"email": "a@b.co", "colour": "red"}, "formData.colour: is not a field of this form"),
    ],
)
async def test_submit_validation(client, auth, form_data, message):
    tool = await make_form(client, auth)
    resp = await submit(client, tool["id"], form_data)
    await assert_error(resp, 400, "VALIDATION_ERROR", message)
    listed = await client.get("/api/v1/form-submissions", headers=auth)
    assert (await listed.json())["pagination"]["total"] == 0  # nothing half-written


async def test_submit_body_errors(client, auth):
    tool = await make_form(client, auth)
    resp = await client.post("/api/v1/form-submissions/submit", json={"toolId": tool["id"]})
    await assert_error(resp, 400, "VALIDATION_ERROR", "formData: is required")
    resp = await submit(client, tool["id"], {"email": "a@b.co"}, fieldsCompleted=["email", "zzz"])
    await assert_error(resp, 400, "VALIDATION_ERROR", "fieldsCompleted: 'zzz' is not a field")
    resp = await submit(client, "tool_missing", {"email": "a@b.co"})
    await assert_error(resp, 404, "NOT_FOUND", "Form not found")
    resp = await client.post("/api/v1/form-submissions/submit", data=b"{nope")
    await assert_error(resp, 400, "VALIDATION_ERROR", "malformed JSON")


async def test_several_problems_are_reported_together(client, auth):
    tool = await make_form(client, auth)
    resp = await submit(client, tool["id"], {"seats": -1, "plan": "x"})
    error = await assert_error(resp, 400, "VALIDATION_ERROR")
    for part in ("formData.email", "formData.seats", "formData.plan"):
        assert part in error["message"]


async def test_valid_values_are_normalised_and_files_kept_on_disk(client, auth, receiver):
    tool = await make_form(client, auth, formWebhookUrl=receiver.url("/ok"))
    pdf = b"%PDF-1.4 " + bytes(range(256)) * 10
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 100
    form = {
        "email": " a@b.co ",
        "name": "Ada",
        "phone": "+44 (0)20 7946-0000",
        "seats": "3",
        "day": "2026-11-21",
        "at": "2026-11-21T10:00:00Z",
        "plan": "pro",
        "extras": ["b", "a", "b"],
        "cv": data_url(pdf, name="cv.pdf"),
        "photo": data_url(png, "image/png"),
    }
    result = await submitted(client, tool["id"], form)
    sub = await detail(client, auth, result["submissionId"])
    assert sub["formData"]["email"] == "a@b.co"
    assert sub["formData"]["seats"] == 3
    assert sub["formData"]["extras"] == ["b", "a"]
    assert sub["formData"]["cv"] == {
        "fileName": "cv.pdf",
        "contentType": "application/pdf",
        "size": len(pdf),
    }
    assert sub["formData"]["photo"]["contentType"] == "image/png"
    data_dir = client.app[app_keys.settings_key].server.data_dir
    stored = data_dir / "files" / sub["id"] / "cv.pdf"
    assert stored.read_bytes() == pdf
    # The database holds the description, not the bytes.
    db = client.app[app_keys.db_key]
    rows = await db.reader.fetchall(
        "SELECT length(form_data) FROM form_submissions WHERE id = ?", (sub["id"],)
    )
    assert rows[0][0] < 1000
    # The receiver gets the file back as the data URL that was sent.
    hook = receiver.at("/ok")[0].json
    assert hook["formData"]["cv"] == data_url(pdf, name="cv.pdf")
    assert hook["formData"]["photo"] == data_url(png, "image/png")


async def test_file_over_5_mb_and_body_over_25_mb(make_client, tmp_path):
    client = await make_client()
    auth = bearer(await new_api_key(client))
    tool = await make_form(client, auth)
    big = data_url(b"\x00" * (5 * 1024 * 1024 + 1))
    resp = await submit(client, tool["id"], {"email": "a@b.co", "cv": big})
    await assert_error(resp, 400, "FILE_TOO_LARGE", "formData.cv")
    exactly = data_url(b"\x00" * (5 * 1024 * 1024))
    resp = await submit(client, tool["id"], {"email": "a@b.co", "cv": exactly})
    assert resp.status == 200, await resp.text()
    # Bodies over the submit limit are refused before they are read.
    huge = "x" * (26 * 1024 * 1024)
    resp = await submit(client, tool["id"], {"email": "a@b.co", "name": huge})
    await assert_error(resp, 413, "PAYLOAD_TOO_LARGE")
    # Other endpoints keep the general limit (2 MB).
    resp = await client.post(
        "/api/v1/form-submissions/event",
        json={"toolId": tool["id"], "eventType": "impression", "sessionId": "x" * (3 * 2**20)},
    )
    await assert_error(resp, 413, "PAYLOAD_TOO_LARGE")


# ── delivery ────────────────────────────────────────────────────────────────────────────
async def fast_client(make_client, **sections: Any):
    client = await make_client(webhooks=FAST, **sections)
    return client, bearer(await new_api_key(client))


async def test_webhook_success_is_signed_and_recorded(make_client, receiver):
    client, auth = await fast_client(make_client)
    tool = await make_form(client, auth, formWebhookUrl=receiver.url("/ok"))
    result = await submitted(
        client, tool["id"], {"email": "a@b.co", "name": "Ada"}, conversationId="conv_given"
    )
    assert result["success"] is True
    assert result["executionMode"] == "webhook"
    assert result["webhookResult"] == {"success": True, "error": None}
    assert result["postActionResults"] == []
    assert result["clientHandler"] is None
    assert result["status"] == "webhook_success"
    assert result["submissionId"].startswith("sub_")

    hook = receiver.at("/ok")[0]
    payload = hook.json
    assert payload == {
        "submissionId": result["submissionId"],
        "toolId": tool["id"],
        "toolName": "contact",
        "conversationId": "conv_given",
        "formData": {"email": "a@b.co", "name": "Ada"},
        "submittedAt": payload["submittedAt"],
    }
    assert payload["submittedAt"].endswith("Z")
    # Verified by the reference implementation of Standard Webhooks ...
    secret = tool["formWebhookSecret"]
    assert secret.startswith("whsec_")
    verified = Webhook(secret).verify(hook.body, hook.headers)
    assert verified["submissionId"] == result["submissionId"]
    assert hook.headers["webhook-id"] == result["submissionId"]
    # ... and by an independent HMAC.
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{hook.headers['webhook-id']}.{hook.headers['webhook-timestamp']}.".encode()
    expected = base64.b64encode(hmac.new(key, signed + hook.body, hashlib.sha256).digest())
    assert hook.headers["webhook-signature"] == "v1," + expected.decode()
    # A tampered body does not verify.
    with pytest.raises(Exception, match="(?i)signature"):
        Webhook(secret).verify(hook.body.replace(b"Ada", b"Eve"), hook.headers)

    sub = await detail(client, auth, result["submissionId"])
    assert sub["status"] == "webhook_success"
    assert sub["webhookAttempts"] == 1 and sub["lastError"] is None
    [delivery] = sub["deliveries"]
    assert delivery["type"] == "webhook" and delivery["status"] == "success"
    [attempt] = delivery["log"]
    assert attempt["statusCode"] == 200 and attempt["success"] is True
    assert attempt["responseBody"] == '{"received": true}'
    assert attempt["latencyMs"] >= 0 and attempt["error"] is None


async def test_failing_webhook_retries_on_schedule_then_fails(make_client, receiver):
    client, auth = await fast_client(make_client)
    tool = await make_form(client, auth, formWebhookUrl=receiver.url("/fail"))
    result = await submitted(client, tool["id"], {"email": "a@b.co"})
    assert result["webhookResult"] == {"success": False, "error": "HTTP 500"}
    assert result["success"] is True  # stored: the outbox keeps trying
    assert result["status"] == "pending"
    sub = await wait_status(client, auth, result["submissionId"], "webhook_failed")
    assert sub["webhookAttempts"] == 3
    assert sub["lastError"] == "HTTP 500"
    log = sub["deliveries"][0]["log"]
    assert [a["statusCode"] for a in log] == [500, 500, 500]
    assert [a["attempt"] for a in log] == [1, 2, 3]
    assert log[0]["responseBody"] == "receiver broke"
    hooks = receiver.at("/fail")
    assert len(hooks) == 3
    # The same webhook-id on every attempt; each signature verifies.
    assert {h.headers["webhook-id"] for h in hooks} == {result["submissionId"]}
    for hook in hooks:
        Webhook(tool["formWebhookSecret"]).verify(hook.body, hook.headers)
    # No fourth attempt.
    await asyncio.sleep(0.6)
    assert len(receiver.at("/fail")) == 3


async def test_flaky_webhook_succeeds_on_a_retry(make_client, receiver):
    client, auth = await fast_client(make_client)
    receiver.flaky_failures = 1
    tool = await make_form(client, auth, formWebhookUrl=receiver.url("/flaky"))
    result = await submitted(client, tool["id"], {"email": "a@b.co"})
    assert result["webhookResult"]["success"] is False
    sub = await wait_status(client, auth, result["submissionId"], "webhook_success")
    assert sub["webhookAttempts"] == 2 and sub["lastError"] is None
    assert [a["statusCode"] for a in sub["deliveries"][0]["log"]] == [503, 200]


async def test_slow_webhook_times_out_and_is_retried(make_client, receiver):
    client, auth = await fast_client(make_client)
    tool = await make_form(client, auth, formWebhookUrl=receiver.url("/slow"))
    result = await submitted(client, tool["id"], {"email": "a@b.co"})
    assert result["webhookResult"] == {"success": False, "error": "timed out"}
    sub = await wait_status(client, auth, result["submissionId"], "webhook_failed")
    assert [a["error"] for a in sub["deliveries"][0]["log"]] == ["timed out"] * 3
    assert all(a["statusCode"] is None for a in sub["deliveries"][0]["log"])


async def test_410_stops_retrying(make_client, receiver):
    client, auth = await fast_client(make_client)
    tool = await make_form(client, auth, formWebhookUrl=receiver.url("/gone"))
    result = await submitted(client, tool["id"], {"email": "a@b.co"})
    assert result["status"] == "webhook_failed"
    assert "410" in result["webhookResult"]["error"]
    await asyncio.sleep(0.6)
    assert len(receiver.at("/gone")) == 1
    sub = await detail(client, auth, result["submissionId"])
    assert sub["status"] == "webhook_failed" and sub["webhookAttempts"] == 1


async def test_unreachable_receiver_is_an_attempt_error(make_client):
    client, auth = await fast_client(make_client)
    tool = await make_form(client, auth, formWebhookUrl=f"http://127.0.0.1:{free_port()}/x")
    result = await submitted(client, tool["id"], {"email": "a@b.co"})
    assert result["webhookResult"]["success"] is False
    assert "could not connect" in result["webhookResult"]["error"]


async def test_private_addresses_are_refused_by_default(make_client, receiver):
    client = await make_client(webhooks=FAST, outbound={"allow_private": False})
    db = client.app[app_keys.db_key]
    _, team = await accounts.ensure_user_with_team(db, email="o@example.com", name="", plan="pro")
    auth = bearer(await new_api_key(client, "o@example.com"))
    body = {
        "agentId": await make_agent(client, auth),
        "name": "contact",
        "description": "Collect contact details",
        "executionType": "form",
        "formSchema": {"fields": FIELDS},
        "formWebhookUrl": receiver.url("/ok"),
    }
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "[outbound] allow_private")
    # Saved while the setting was on: still stopped at delivery.
    tool = await save_tool_as_if_private_allowed(client, team.id, body)
    result = await submitted(client, tool.id, {"email": "a@b.co"})
    assert result["webhookResult"]["success"] is False
    assert "refused" in result["webhookResult"]["error"]
    assert receiver.hooks == []


async def test_redeliver_replays_a_failed_delivery(make_client, receiver):
    client, auth = await fast_client(make_client)
    tool = await make_form(client, auth, formWebhookUrl=receiver.url("/gone"))
    result = await submitted(client, tool["id"], {"email": "a@b.co"})
    sub_id = result["submissionId"]
    resp = await client.post(f"/api/v1/form-submissions/{sub_id}/redeliver", headers=auth)
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert body["deliveries"][0]["attempts"] == 2
    assert len(receiver.at("/gone")) == 2
    # Nothing left to redeliver once it is not failed; other teams see nothing.
    receiver_ok = await make_form(
        client, auth, agent_id=tool["agentId"], name="other", formWebhookUrl=receiver.url("/ok")
    )
    ok = await submitted(client, receiver_ok["id"], {"email": "a@b.co"})
    resp = await client.post(
        f"/api/v1/form-submissions/{ok['submissionId']}/redeliver", headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "no failed delivery")
    stranger = bearer(await new_api_key(client, "stranger@example.com"))
    resp = await client.post(f"/api/v1/form-submissions/{sub_id}/redeliver", headers=stranger)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.post(f"/api/v1/form-submissions/{sub_id}/redeliver")
    await assert_error(resp, 401, "UNAUTHORIZED")


async def test_redeliver_after_exhaustion_succeeds(make_client, receiver):
    client, auth = await fast_client(make_client)
    receiver.flaky_failures = 3
    tool = await make_form(client, auth, formWebhookUrl=receiver.url("/flaky"))
    result = await submitted(client, tool["id"], {"email": "a@b.co"})
    sub_id = result["submissionId"]
    await wait_status(client, auth, sub_id, "webhook_failed")
    resp = await client.post(f"/api/v1/form-submissions/{sub_id}/redeliver", headers=auth)
    body = await resp.json()
    assert body["status"] == "webhook_success"
    assert body["webhookAttempts"] == 4 and body["lastError"] is None
    assert [a["success"] for a in body["deliveries"][0]["log"]] == [False, False, False, True]


async def test_deliver_due_job_can_be_called_directly(make_client, receiver):
    # Long schedule: only an explicit run of the job makes the second attempt.
    client = await make_client(webhooks={"retry_schedule_seconds": [0, 0], "timeout_seconds": 1})
    auth = bearer(await new_api_key(client))
    receiver.flaky_failures = 1
    tool = await make_form(client, auth, formWebhookUrl=receiver.url("/flaky"))
    result = await submitted(client, tool["id"], {"email": "a@b.co"})
    # The scheduler may already have run it; the job is idempotent either way.
    await client.app[app_keys.deliverer_key].deliver_due()
    sub = await wait_status(client, auth, result["submissionId"], "webhook_success")
    assert sub["webhookAttempts"] == 2


# ── post actions ────────────────────────────────────────────────────────────────────────
async def test_post_actions_run_after_the_webhook_in_order(make_client, receiver, smtp_server):
    client = await make_client(webhooks=FAST, smtp=smtp_server.settings())
    db = client.app[app_keys.db_key]
    owner, team = await accounts.ensure_user_with_team(
        db, email="owner@example.com", name="Owner", plan="pro"
    )
    auth = bearer(await new_api_key(client))
    outsider, _ = await accounts.ensure_user_with_team(
        db, email="outsider@example.com", name="", plan="pro"
    )
    actions = [
        {
            "type": "webhook",
            "url": receiver.url("/crm"),
            "headers": {"X-Api-Key": "k1", "webhook-id": "forged"},
            "payload": {
                "contact": "{{email}}",
                "seats": "{{seats}}",
                "line": "{{name}} ({{email}}) via {{_toolName}}{{missing}}",
                "nested": [{"plan": "{{plan}}"}],
            },
        },
        {
            "type": "team_chat",
            "webhookUrl": receiver.url("/chat"),
            "messageTemplate": "New lead: {{name}} <{{email}}> {{nothing}}",
        },
        {"type": "email", "recipientIds": [owner.id, outsider.id], "subject": "Lead from {{name}}"},
        {"type": "webhook", "webhookUrl": receiver.url("/plain")},
        {"type": "team_chat", "webhookUrl": receiver.url("/fail"), "message": "x"},
    ]
    tool = await make_form(
        client, auth, formWebhookUrl=receiver.url("/ok"), formPostActions=actions
    )
    form = {"email": "ada@example.com", "name": "Ada", "seats": 4, "plan": "pro"}
    result = await submitted(client, tool["id"], form)
    assert result["webhookResult"]["success"] is True
    assert [(r["type"], r["success"]) for r in result["postActionResults"]] == [
        ("webhook", True),
        ("team_chat", True),
        ("email", True),
        ("webhook", True),
        ("team_chat", False),
    ]
    assert result["postActionResults"][4]["error"] == "HTTP 500"
    # The primary webhook went first.
    assert receiver.hooks[0].path == "/ok"

    crm = receiver.at("/crm")[0]
    assert crm.json == {
        "contact": "ada@example.com",
        "seats": 4,
        "line": "Ada (ada@example.com) via contact",
        "nested": [{"plan": "pro"}],
    }
    assert crm.headers["X-Api-Key"] == "k1"
    # Signed like the primary webhook, with its own stable id.
    assert crm.headers["webhook-id"] == f"{result['submissionId']}_pa1"
    Webhook(tool["formWebhookSecret"]).verify(crm.body, crm.headers)

    chat = receiver.at("/chat")[0]
    assert chat.json == {"text": "New lead: Ada <ada@example.com> "}

    plain = receiver.at("/plain")[0]
    assert plain.json["submissionId"] == result["submissionId"]
    assert plain.json["formData"] == form
    Webhook(tool["formWebhookSecret"]).verify(plain.body, plain.headers)

    [mail] = await smtp_server.wait_for(1)
    assert mail.rcpt_tos == ["owner@example.com"]  # the non-member is left out
    assert mail.subject == "Lead from Ada"
    assert "email: ada@example.com" in mail.text and "seats: 4" in mail.text
    assert result["submissionId"] in mail.text

    # The failing team_chat action is retried on the schedule, then marked failed.
    await receiver.wait_for(3, "/fail")
    sub = await detail(client, auth, result["submissionId"])
    kinds = [(d["type"], d["actionType"], d["position"]) for d in sub["deliveries"]]
    assert kinds == [
        ("webhook", "webhook", 0),
        ("post_action", "webhook", 1),
        ("post_action", "team_chat", 2),
        ("post_action", "email", 3),
        ("post_action", "webhook", 4),
        ("post_action", "team_chat", 5),
    ]
    # Post actions do not change the submission's status.
    assert sub["status"] == "webhook_success"


async def test_email_without_smtp_goes_to_the_outbox(make_client):
    client = await make_client(webhooks=FAST)
    db = client.app[app_keys.db_key]
    owner, _ = await accounts.ensure_user_with_team(
        db, email="owner@example.com", name="", plan="pro"
    )
    auth = bearer(await new_api_key(client))
    tool = await make_form(
        client,
        auth,
        formExecutionMode="client",
        formClientHandler="crm",
        formWebhookUrl=None,
        formPostActions=[{"type": "email", "recipientIds": [owner.id]}],
    )
    result = await submitted(client, tool["id"], {"email": "a@b.co"})
    assert result["postActionResults"] == [{"type": "email", "success": True, "error": None}]
    rows = await db.reader.fetchall("SELECT to_address, subject FROM mail_outbox")
    assert [tuple(r) for r in rows] == [("owner@example.com", "New submission: contact")]


async def test_failing_smtp_is_retried(make_client, smtp_server):
    client = await make_client(webhooks=FAST, smtp=smtp_server.settings())
    db = client.app[app_keys.db_key]
    owner, _ = await accounts.ensure_user_with_team(
        db, email="owner@example.com", name="", plan="pro"
    )
    auth = bearer(await new_api_key(client))
    tool = await make_form(
        client,
        auth,
        formExecutionMode="client",
        formClientHandler="crm",
        formWebhookUrl=None,
        formPostActions=[{"type": "email", "recipientIds": [owner.id]}],
    )
    smtp_server.fail = True
    result = await submitted(client, tool["id"], {"email": "a@b.co"})
    assert result["postActionResults"][0]["success"] is False
    assert "e-mail failed" in result["postActionResults"][0]["error"]
    smtp_server.fail = False
    [mail] = await smtp_server.wait_for(1)
    assert mail.rcpt_tos == ["owner@example.com"]


# ── client handler flow ─────────────────────────────────────────────────────────────────
async def client_result(client, sub_id: str, success: bool, **extra: Any):
    body = {"submissionId": sub_id, "success": success, **extra}
    return await client.post("/api/v1/form-submissions/client-result", json=body)


async def test_client_mode(make_client):
    client, auth = await fast_client(make_client)
    tool = await make_form(
        client, auth, formExecutionMode="client", formClientHandler="crm", formWebhookUrl=None
    )
    result = await submitted(client, tool["id"], {"email": "a@b.co"})
    assert result["executionMode"] == "client"
    assert result["clientHandler"] == "crm"
    assert result["webhookResult"] is None
    assert result["status"] == "submitted"
    sub_id = result["submissionId"]
    resp = await client_result(client, sub_id, True, message="Saved", data={"crmId": 7})
    assert resp.status == 200 and await resp.json() == {"success": True}
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    sub = await detail(client, auth, sub_id)
    assert sub["status"] == "client_success"
    assert sub["clientResult"]["success"] is True
    assert sub["clientResult"]["message"] == "Saved"
    assert sub["clientResult"]["data"] == {"crmId": 7}
    # Repeating the same result is harmless; contradicting it is refused.
    resp = await client_result(client, sub_id, True)
    assert resp.status == 200
    resp = await client_result(client, sub_id, False)
    await assert_error(resp, 409, "CONFLICT", "already reported")
    assert (await detail(client, auth, sub_id))["status"] == "client_success"

    other = await submitted(client, tool["id"], {"email": "a@b.co"})
    await client_result(client, other["submissionId"], False, message="CRM down")
    assert (await detail(client, auth, other["submissionId"]))["status"] == "client_failed"


async def test_client_result_errors(make_client, receiver):
    client, auth = await fast_client(make_client)
    resp = await client_result(client, "sub_nope", True)
    await assert_error(resp, 404, "NOT_FOUND", "Submission not found")
    resp = await client.post(
        "/api/v1/form-submissions/client-result", json={"submissionId": "sub_x"}
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "success: is required")
    resp = await client_result(client, "sub_x", "yes")
    await assert_error(resp, 400, "VALIDATION_ERROR", "success")
    tool = await make_form(client, auth, formWebhookUrl=receiver.url("/ok"))
    result = await submitted(client, tool["id"], {"email": "a@b.co"})
    resp = await client_result(client, result["submissionId"], True)
    await assert_error(resp, 400, "VALIDATION_ERROR", "no client handler")


async def test_both_mode_needs_webhook_and_client(make_client, receiver):
    client, auth = await fast_client(make_client)
    tool = await make_form(
        client,
        auth,
        formExecutionMode="both",
        formClientHandler="crm",
        formWebhookUrl=receiver.url("/ok"),
    )
    result = await submitted(client, tool["id"], {"email": "a@b.co"})
    assert result["clientHandler"] == "crm"
    assert result["webhookResult"]["success"] is True
    assert result["status"] == "webhook_success"  # waiting for the client handler
    await client_result(client, result["submissionId"], True)
    assert (await detail(client, auth, result["submissionId"]))["status"] == "success"

    second = await submitted(client, tool["id"], {"email": "a@b.co"})
    await client_result(client, second["submissionId"], False)
    assert (await detail(client, auth, second["submissionId"]))["status"] == "failed"

    # Client first, then the webhook fails for good: failed.
    failing = await make_form(
        client,
        auth,
        agent_id=tool["agentId"],
        name="failing",
        formExecutionMode="both",
        formClientHandler="crm",
        formWebhookUrl=receiver.url("/fail"),
    )
    third = await submitted(client, failing["id"], {"email": "a@b.co"})
    assert third["status"] == "pending"
    await client_result(client, third["submissionId"], True)
    assert (await detail(client, auth, third["submissionId"]))["status"] == "client_success"
    await wait_status(client, auth, third["submissionId"], "failed")

    # Analytics count only final outcomes of `both` forms.
    resp = await client.get(
        f"/api/v1/form-submissions/analytics?agentId={tool['agentId']}", headers=auth
    )
    entries = {e["toolName"]: e for e in (await resp.json())["analytics"]}
    assert (entries["contact"]["successful"], entries["contact"]["failed"]) == (1, 1)
    assert (entries["failing"]["successful"], entries["failing"]["failed"]) == (0, 1)


# ── management ──────────────────────────────────────────────────────────────────────────
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
    data_dir = client.app[app_keys.settings_key].server.data_dir
    kept_tool = await make_form(client, auth, formWebhookUrl=receiver.url("/ok"))
    doomed_tool = await make_form(client, auth, formWebhookUrl=receiver.url("/ok"))
    kept = await submitted(client, kept_tool["id"], {"email": "a@b.co", "cv": data_url(b"1")})
    doomed = await submitted(client, doomed_tool["id"], {"email": "a@b.co", "cv": data_url(b"2")})
    resp = await client.delete(f"/api/v1/agents/{doomed_tool['agentId']}", headers=auth)
    assert resp.status == 200
    db = client.app[app_keys.db_key]
    # Young folders are left alone (their submit may still be committing).
    assert await remove_orphan_files(db, data_dir) == 0
    assert await remove_orphan_files(db, data_dir, grace=0) == 1
    assert not (data_dir / "files" / doomed["submissionId"]).exists()
    assert (data_dir / "files" / kept["submissionId"] / "cv.pdf").read_bytes() == b"1"


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


# ── analytics ───────────────────────────────────────────────────────────────────────────
async def event(client, tool_id: str, kind: str, session_id: str | None = "s1"):
    body = {"toolId": tool_id, "eventType": kind, "sessionId": session_id}
    return await client.post("/api/v1/form-submissions/event", json=body)


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


# ── a restart loses nothing ─────────────────────────────────────────────────────────────
class ServeProcess:
    """`agentsvc serve` in a subprocess on a free port, on a given data directory."""

    def __init__(self, proc: asyncio.subprocess.Process, url: str):
        self.proc = proc
        self.url = url

    @classmethod
    async def start(cls, data_dir, env: dict[str, str]) -> ServeProcess:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agentsvc",
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(data_dir),
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **env},
        )
        log = []
        async with asyncio.timeout(30):
            while True:
                line = (await proc.stderr.readline()).decode()
                assert line, "server did not start: " + "".join(log)
                log.append(line)
                match = re.search(r"listening on (http://\S+)", line)
                if match:
                    break
        # Keep draining the log so the server never blocks on a full pipe.
        asyncio.get_running_loop().create_task(proc.stderr.read())
        return cls(proc, match.group(1))


async def test_restart_after_sigkill_delivers_everything(tmp_path, aiohttp_client):
    data_dir = tmp_path / "data"
    env = {
        "AGENTSVC_OUTBOUND_ALLOW_PRIVATE": "true",
        "AGENTSVC_WEBHOOKS_RETRY_SCHEDULE_SECONDS": "[0, 2, 2]",
        "AGENTSVC_WEBHOOKS_TIMEOUT_SECONDS": "20",
    }
    down_port = free_port()
    slow = await WebhookReceiver(slow_seconds=60).start()
    first = await ServeProcess.start(data_dir, env)
    created = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agentsvc",
        "apikey",
        "create",
        "--email",
        "o@example.com",
        "--data-dir",
        str(data_dir),
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, **env},
    )
    key = (await created.communicate())[0].decode().strip()
    auth = bearer(key)
    down = WebhookReceiver()
    try:
        async with aiohttp.ClientSession(first.url) as http:
            resp = await http.post("/api/v1/agents", json={"name": "A"}, headers=auth)
            agent_id = (await resp.json())["data"]["id"]
            tools = {}
            for name, url in (
                ("down", f"http://127.0.0.1:{down_port}/ok"),
                ("hang", slow.url("/slow")),
            ):
                body = {
                    "agentId": agent_id,
                    "name": name,
                    "description": "d",
                    "executionType": "form",
                    "inputSchema": {"type": "object", "properties": {}},
                    "formSchema": {"fields": [{"name": "n", "label": "N", "type": "number"}]},
                    "formWebhookUrl": url,
                }
                resp = await http.post("/api/v1/tools", json=body, headers=auth)
                assert resp.status == 201, await resp.text()
                tools[name] = (await resp.json())["id"]
            sent = []
            for n in range(5):
                resp = await http.post(
                    "/api/v1/form-submissions/submit",
                    json={"toolId": tools["down"], "formData": {"n": n}, "fieldsCompleted": ["n"]},
                )
                result = await resp.json()
                assert result["webhookResult"]["success"] is False, result
                sent.append(result["submissionId"])
            # One attempt is in flight (the receiver hangs) when the server is killed.
            hanging = asyncio.ensure_future(
                http.post(
                    "/api/v1/form-submissions/submit",
                    json={"toolId": tools["hang"], "formData": {"n": 9}, "fieldsCompleted": ["n"]},
                )
            )
            await slow.wait_for(1, "/slow")
            first.proc.send_signal(signal.SIGKILL)
            await first.proc.wait()
            with pytest.raises(aiohttp.ClientError):
                await hanging

        # The receivers come back; a new process starts on the same database.
        slow.slow_seconds = 0
        await down.start(down_port)
        second = await ServeProcess.start(data_dir, env)
        try:
            await down.wait_for(5, "/ok", timeout=15)
            await slow.wait_for(2, "/slow", timeout=15)
            assert sorted(h.json["submissionId"] for h in down.at("/ok")) == sorted(sent)
            interrupted = slow.at("/slow")
            assert interrupted[0].headers["webhook-id"] == interrupted[1].headers["webhook-id"]
            async with aiohttp.ClientSession(second.url) as http:
                deadline = asyncio.get_running_loop().time() + 10
                while True:
                    resp = await http.get("/api/v1/form-submissions?limit=100", headers=auth)
                    listed = (await resp.json())["submissions"]
                    if {s["status"] for s in listed} == {"webhook_success"}:
                        break
                    assert asyncio.get_running_loop().time() < deadline, listed
                    await asyncio.sleep(0.1)
                assert len(listed) == 6
        finally:
            second.proc.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(second.proc.wait(), 30) == 0
    finally:
        if first.proc.returncode is None:
            first.proc.kill()
            await first.proc.wait()
        await down.close()
        await slow.close()


# ── the conversation learns of the submission ───────────────────────────────────────────
async def test_submission_is_recorded_in_its_conversation(make_client):
    from tests.chat_helpers import chat, new_agent, user
    from tests.fakes import openai_server as oai

    fake = await oai.FakeOpenAI().start()
    try:
        client = await make_client(
            providers={"oai": {"kind": "openai", "base_url": fake.base_url, "api_key": "k"}}
        )
        auth = bearer(await new_api_key(client))
        agent = await new_agent(client, auth, model="oai/gpt-4o-mini")
        tool = await make_form(
            client,
            auth,
            agent["id"],
            formExecutionMode="client",
            formClientHandler="crm",
            formWebhookUrl=None,
        )
        fake.script(oai.stream(oai.tool_events([("c1", "contact", ["{}"])])))
        # A widget visitor's conversation: its submit carries the visitor's session.
        start = {"agentId": agent["id"], "messages": user("call me"), "sessionId": "s_visitor"}
        stream = await chat(client, start)
        conv_id = stream.start["conversationId"]

        result = await submitted(
            client,
            tool["id"],
            {"email": "ada@example.com", "seats": 2},
            conversationId=conv_id,
            sessionId="s_visitor",
        )
        resp = await client.get(f"/api/v1/conversations/{conv_id}", headers=auth)
        messages = (await resp.json())["data"]["messages"]
        note = messages[-1]
        assert note["role"] == "user"
        assert '"contact"' in note["content"] and result["submissionId"] in note["content"]
        assert "email: ada@example.com" in note["content"] and "seats: 2" in note["content"]

        # The model's next turn sees it.
        fake.script(oai.stream(oai.text_events(["Thanks, Ada."])))
        body = {"agentId": agent["id"], "conversationId": conv_id, "messages": user("done?")}
        await chat(client, body, auth)
        sent = fake.requests[-1]["json"]["messages"]
        assert any("email: ada@example.com" in str(m.get("content")) for m in sent), sent

        # An id naming no conversation of this agent is kept as given and links nothing.
        other_agent = await new_agent(client, auth, name="Other", model="oai/gpt-4o-mini")
        fake.script(oai.stream(oai.text_events(["hi"])))
        other = await chat(client, {"agentId": other_agent["id"], "messages": user("hi")}, auth)
        other_conv = other.start["conversationId"]
        for given in (other_conv, "conv_nowhere"):
            stray = await submitted(
                client, tool["id"], {"email": "x@example.com"}, conversationId=given
            )
            assert (await detail(client, auth, stray["submissionId"]))["conversationId"] == given
        resp = await client.get(f"/api/v1/conversations/{other_conv}", headers=auth)
        assert all(
            "x@example.com" not in m["content"] for m in (await resp.json())["data"]["messages"]
        )
    finally:
        await fake.close()
