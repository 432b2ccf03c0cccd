"""Helpers of the form tests: a form tool, a submission, its detail, analytics events."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from tests.support.accounts import bearer, new_api_key

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


# ── delivery ────────────────────────────────────────────────────────────────────────────
async def fast_client(make_client, **sections: Any):
    client = await make_client(webhooks=FAST, **sections)
    return client, bearer(await new_api_key(client))


# ── client handler flow ─────────────────────────────────────────────────────────────────
async def client_result(client, sub_id: str, success: bool, **extra: Any):
    body = {"submissionId": sub_id, "success": success, **extra}
    return await client.post("/api/v1/form-submissions/client-result", json=body)


# ── analytics ───────────────────────────────────────────────────────────────────────────
async def event(client, tool_id: str, kind: str, session_id: str | None = "s1"):
    body = {"toolId": tool_id, "eventType": kind, "sessionId": session_id}
    return await client.post("/api/v1/form-submissions/event", json=body)
