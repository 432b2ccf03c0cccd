"""A form's post actions: they run after the webhook, in order; mail goes out by SMTP
(retried when it fails) or to the outbox."""

from __future__ import annotations

from standardwebhooks.webhooks import Webhook

from agentsvc.api import app_keys
from agentsvc.services.team import accounts
from tests.support.accounts import bearer, new_api_key
from tests.support.forms import (
    FAST,
    detail,
    make_form,
    submitted,
)


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
