"""The public form of a form tool, and what a submission must hold: validation,
normalised values, files and size limits."""

from __future__ import annotations

import pytest

from agentsvc.api import app_keys
from tests.support.accounts import bearer, new_api_key
from tests.support.errors import assert_error
from tests.support.forms import (
    data_url,
    detail,
    make_agent,
    make_form,
    submit,
    submitted,
)
from tests.support.storage import stored


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
    assert await stored(client, f"{sub['id']}/cv.pdf") == pdf
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
