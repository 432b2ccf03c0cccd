"""Forms handled by the embedding page: client mode, the client result and its errors,
and "both" mode."""

from __future__ import annotations

from tests.support.errors import assert_error
from tests.support.forms import (
    client_result,
    detail,
    fast_client,
    make_form,
    submitted,
    wait_status,
)


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
