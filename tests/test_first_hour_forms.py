"""The first hour with forms: the interface's example works as written, the analytics
numbers a user reads are right, and webhooks keep what was sent (issue 16, items 6-8)."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import unquote

import pytest

from agentsvc.services.forms.submissions import rate
from tests.support.accounts import bearer, create_user, key_for, new_api_key, session
from tests.support.accounts import sign_in as sign_in_session
from tests.support.errors import assert_error
from tests.support.fakes.webhook_receiver import WebhookReceiver
from tests.support.forms import detail, event, make_agent, submit, submitted

PHONE = [{"name": "phone", "label": "Phone", "type": "tel"}]
NAMED = [
    {"name": "email", "label": "E-mail", "type": "email"},
    {"name": "name", "label": "Name", "type": "text"},
]


@pytest.fixture
async def receiver():
    rec = await WebhookReceiver().start()
    yield rec
    await rec.close()


async def example_form(client, auth, agent_id: str, name: str = "callback", **over: Any) -> dict:
    """The form tool example of the interface: `type: "form"` and `formFieldsSchema`."""
    body = {
        "agentId": agent_id,
        "name": name,
        "description": "Ask for a call back",
        "type": "form",
        "formFieldsSchema": PHONE,
        **over,
    }
    resp = await client.post("/api/v1/tools", json=body, headers=auth)
    assert resp.status == 201, await resp.text()
    return await resp.json()


# ── item 6: the interface's examples work as written ────────────────────────────────────


async def test_interface_form_example_without_webhook_stores_its_submissions(client, auth):
    agent_id = await make_agent(client, auth)
    tool = await example_form(client, auth, agent_id)
    assert tool["executionType"] == "form" and tool["formSchema"] == {"fields": PHONE}
    assert tool["formExecutionMode"] == "client"
    assert tool["formWebhookUrl"] is None and tool["formClientHandler"] is None

    resp = await client.get(f"/api/v1/triggers/form/{tool['id']}")
    assert resp.status == 200
    assert (await resp.json())["executionMode"] == "client"
    result = await submitted(client, tool["id"], {"phone": "+33 1 23 45 67 89"})
    assert result["success"] is True and result["status"] == "submitted"
    assert result["webhookResult"] is None and result["postActionResults"] == []
    assert result["clientHandler"] is None

    resp = await client.get("/api/v1/form-submissions?status=submitted", headers=auth)
    [listed] = (await resp.json())["submissions"]
    assert listed["id"] == result["submissionId"] and listed["toolName"] == "callback"
    assert listed["formData"] == {"phone": "+33 1 23 45 67 89"}
    sub = await detail(client, auth, result["submissionId"])
    assert sub["status"] == "submitted" and sub["deliveries"] == []
    # Nothing runs in the page, so there is no client result to report.
    resp = await client.post(
        "/api/v1/form-submissions/client-result",
        json={"submissionId": result["submissionId"], "success": True},
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "no client handler")


async def test_a_storing_form_uses_a_webhook_address_added_later(client, auth, receiver):
    agent_id = await make_agent(client, auth)
    tool = await example_form(client, auth, agent_id)
    path = f"/api/v1/tools/{tool['id']}"
    resp = await client.put(path, json={"description": "Call me"}, headers=auth)
    assert resp.status == 200 and (await resp.json())["formExecutionMode"] == "client"
    resp = await client.put(path, json={"formWebhookUrl": receiver.url("/ok")}, headers=auth)
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["formExecutionMode"] == "webhook"
    result = await submitted(client, tool["id"], {"phone": "0123"})
    assert result["status"] == "webhook_success"
    assert receiver.at("/ok")[0].json["formData"] == {"phone": "0123"}


async def test_a_storing_form_given_a_handler_runs_it(client, auth):
    agent_id = await make_agent(client, auth)
    tool = await example_form(client, auth, agent_id, formClientHandler="saveLead")
    assert tool["formExecutionMode"] == "client" and tool["formClientHandler"] == "saveLead"
    result = await submitted(client, tool["id"], {"phone": "0123"})
    assert result["clientHandler"] == "saveLead" and result["status"] == "submitted"


async def test_example_spelling_errors_name_its_fields_and_modes_keep_their_needs(client, auth):
    agent_id = await make_agent(client, auth)
    for over, field in (
        ({"formExecutionMode": "webhook"}, "formWebhookUrl: is required"),
        ({"formExecutionMode": "both", "formWebhookUrl": "https://x.example/h"}, "formClient"),
        ({"formFieldsSchema": []}, "formFieldsSchema: must be a list of 1 to 50"),
        ({"formFieldsSchema": [{**PHONE[0], "type": "colour"}]}, "formFieldsSchema.0.type"),
        ({"type": "http"}, "type:"),
    ):
        body = {
            "agentId": agent_id,
            "name": "f",
            "description": "d",
            "type": "form",
            "formFieldsSchema": PHONE,
            **over,
        }
        resp = await client.post("/api/v1/tools", json=body, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)


async def test_form_found_by_name_without_agent_id_among_the_callers_agents(client, auth):
    first = await make_agent(client, auth, "First")
    tool = await example_form(client, auth, first)
    resp = await client.get("/api/v1/triggers/form/callback", headers=auth)
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["toolId"] == tool["id"]
    # A signed-in dashboard session is a caller too.
    owner, team = await create_user(client, "olivia@example.com")
    hers = bearer(await key_for(client, team.id, owner.id))
    own_tool = await example_form(client, hers, await make_agent(client, hers), name="quote")
    token = await sign_in_session(client, "olivia@example.com")
    resp = await client.get("/api/v1/triggers/form/quote", headers=session(token))
    assert resp.status == 200 and (await resp.json())["toolId"] == own_tool["id"]

    # Without a caller, or for a caller whose agents have no such form: not found.
    resp = await client.get("/api/v1/triggers/form/callback")
    await assert_error(resp, 404, "NOT_FOUND", "give agentId")
    stranger = bearer(await new_api_key(client, "stranger@example.com"))
    resp = await client.get("/api/v1/triggers/form/callback", headers=stranger)
    await assert_error(resp, 404, "NOT_FOUND", "Form not found")
    resp = await client.get("/api/v1/triggers/form/callback", headers=bearer("sk_not_a_key"))
    await assert_error(resp, 401, "UNAUTHORIZED")

    # Two of the caller's agents have one: ambiguous, and the answer says so.
    second = await make_agent(client, auth, "Second")
    other = await example_form(client, auth, second)
    resp = await client.get("/api/v1/triggers/form/callback", headers=auth)
    error = await assert_error(resp, 400, "VALIDATION_ERROR", "agentId")
    assert "several" in error["message"] and "callback" in error["message"]
    resp = await client.get(f"/api/v1/triggers/form/callback?agentId={second}", headers=auth)
    assert (await resp.json())["toolId"] == other["id"]
    # A disabled form is not a candidate: the name is unambiguous again.
    resp = await client.put(f"/api/v1/tools/{other['id']}", json={"isEnabled": False}, headers=auth)
    assert resp.status == 200
    resp = await client.get("/api/v1/triggers/form/callback", headers=auth)
    assert (await resp.json())["toolId"] == tool["id"]


# ── item 7: numbers users read are right ────────────────────────────────────────────────


async def analytics_of(client, auth, agent_id: str) -> tuple[dict, str]:
    resp = await client.get(f"/api/v1/form-submissions/analytics?agentId={agent_id}", headers=auth)
    assert resp.status == 200, await resp.text()
    text = await resp.text()
    [entry] = (await resp.json())["analytics"]
    return entry, text


def assert_one_decimal_within_0_100(entry: dict) -> None:
    rates = [entry["conversionRate"], entry["completionRate"]]
    rates += list(entry["fieldCompletionRates"].values())
    for value in rates:
        assert isinstance(value, float) and 0 <= value <= 100 and round(value, 1) == value


async def test_submissions_without_recorded_impression_count_as_their_own(client, auth):
    agent_id = await make_agent(client, auth)
    tool = await example_form(client, auth, agent_id, formFieldsSchema=NAMED)
    # Submitted straight through the API: no impression, no start was ever reported.
    for _ in range(3):
        await submitted(client, tool["id"], {"email": "a@b.co"})
    entry, _ = await analytics_of(client, auth, agent_id)
    assert (entry["impressions"], entry["started"], entry["submitted"]) == (3, 3, 3)
    assert entry["conversionRate"] == 100.0 and entry["completionRate"] == 100.0
    assert_one_decimal_within_0_100(entry)


async def test_rates_mix_widget_and_api_submissions_with_one_decimal(client, auth):
    agent_id = await make_agent(client, auth)
    tool = await example_form(client, auth, agent_id, formFieldsSchema=NAMED)
    for kind in ("impression",) * 5 + ("started",) * 2:
        assert (await event(client, tool["id"], kind)).status == 202
    # One from the widget (it reported its impression and start), one from the API.
    times = {"impressionAt": 1763719200000, "startedAt": 1763719201000}
    await submitted(client, tool["id"], {"email": "a@b.co", "name": "Ada"}, **times)
    await submitted(client, tool["id"], {"email": "b@b.co"})
    entry, text = await analytics_of(client, auth, agent_id)
    assert (entry["impressions"], entry["started"], entry["submitted"]) == (6, 3, 2)
    assert entry["conversionRate"] == 33.3 and entry["completionRate"] == 66.7
    assert entry["fieldCompletionRates"] == {"email": 100.0, "name": 50.0}
    assert '"conversionRate":33.3,' in text and '"completionRate":66.7,' in text
    assert_one_decimal_within_0_100(entry)


async def test_lost_impression_events_never_push_rates_over_100(client, auth):
    agent_id = await make_agent(client, auth)
    tool = await example_form(client, auth, agent_id)
    # The page said it showed and started the form, but its events never arrived.
    times = {"impressionAt": 1763719200000, "startedAt": 1763719201000}
    for _ in range(2):
        await submitted(client, tool["id"], {"phone": "0123"}, **times)
    entry, _ = await analytics_of(client, auth, agent_id)
    assert (entry["impressions"], entry["started"], entry["submitted"]) == (2, 2, 2)
    assert entry["conversionRate"] == 100.0 and entry["completionRate"] == 100.0


async def test_empty_form_rates_are_zero_with_one_decimal(client, auth):
    agent_id = await make_agent(client, auth)
    await example_form(client, auth, agent_id)
    entry, text = await analytics_of(client, auth, agent_id)
    assert entry["conversionRate"] == 0.0 and entry["fieldCompletionRates"] == {"phone": 0.0}
    assert '"conversionRate":0.0,' in text


def test_rates_round_half_up_to_one_decimal():
    assert rate(2, 3) == 66.7 and rate(1, 3) == 33.3
    assert rate(1, 16) == 6.3  # 6.25: halves go up, not to the even neighbour
    assert rate(1, 8) == 12.5 and rate(3, 3) == 100.0 and rate(0, 0) == 0.0
    assert rate(10**12, 3 * 10**12) == 33.3


# ── item 8: webhooks keep what was sent ─────────────────────────────────────────────────


def file_url(raw: bytes, kind: str, name: str | None) -> str:
    params = f";name={name}" if name else ""
    return f"data:{kind}{params};base64,{base64.b64encode(raw).decode()}"


async def test_webhook_receives_the_file_name_that_was_sent(client, auth, receiver):
    agent_id = await make_agent(client, auth)
    fields = [
        {"name": "doc", "label": "Document", "type": "file"},
        {"name": "other", "label": "Other", "type": "file"},
        {"name": "bare", "label": "Bare", "type": "file"},
    ]
    tool = await example_form(
        client, auth, agent_id, formFieldsSchema=fields, formWebhookUrl=receiver.url("/ok")
    )
    assert tool["formExecutionMode"] == "webhook"
    hello = file_url(b"hello", "text/plain", "hello.txt")
    # A hostile name cannot reshape the data URL: `;` and `,` travel percent-encoded.
    tricky_name = "my cv;base64,AAAA é.pdf"
    tricky = file_url(b"%PDF", "application/pdf", "my%20cv%3Bbase64%2CAAAA%20%C3%A9.pdf")
    bare = file_url(b"x", "application/octet-stream", None)
    result = await submitted(client, tool["id"], {"doc": hello, "other": tricky, "bare": bare})
    assert result["status"] == "webhook_success"
    sent = receiver.at("/ok")[0].json["formData"]
    assert sent["doc"] == hello  # data:text/plain;name=hello.txt;base64,...
    assert sent["bare"] == bare
    header, _, payload = sent["other"].partition(",")
    assert header.split(";") == [
        "data:application/pdf",
        "name=my%20cv%3Bbase64%2CAAAA%20%C3%A9.pdf",
        "base64",
    ]
    assert unquote(header.split(";")[1].removeprefix("name=")) == tricky_name
    assert base64.b64decode(payload) == b"%PDF"
    sub = await detail(client, auth, result["submissionId"])
    assert sub["formData"]["other"]["fileName"] == tricky_name


async def test_submit_of_the_example_form_validates_like_any_form(client, auth):
    agent_id = await make_agent(client, auth)
    tool = await example_form(client, auth, agent_id)
    resp = await submit(client, tool["id"], {"phone": "call me maybe"})
    await assert_error(resp, 400, "VALIDATION_ERROR", "formData.phone")
    resp = await submit(client, tool["id"], {"unknown": "x"})
    await assert_error(resp, 400, "VALIDATION_ERROR", "formData.unknown")
