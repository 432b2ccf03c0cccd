"""Durable, signed webhook delivery of form submissions: retries on schedule, timeouts,
refused addresses, redelivery, and the job that delivers what is due."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac

import pytest
from standardwebhooks.webhooks import Webhook

from agentsvc.api import app_keys
from agentsvc.services.team import accounts
from tests.support.accounts import bearer, new_api_key
from tests.support.errors import assert_error
from tests.support.fakes.webhook_receiver import free_port
from tests.support.forms import (
    FAST,
    FIELDS,
    detail,
    fast_client,
    make_agent,
    make_form,
    submitted,
    wait_status,
)
from tests.support.saved_tools import save_tool_as_if_private_allowed


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
