"""The cluster tests' calls: the API through nginx (or one process) with a real client."""

from __future__ import annotations

from typing import Any


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def created(http, url: str, body: dict[str, Any], key: str) -> dict[str, Any]:
    """POST `body` to `url` with the key; the answer's JSON once it is 201."""
    async with http.post(url, json=body, headers=bearer(key)) as resp:
        assert resp.status == 201, await resp.text()
        return await resp.json()


def contact_form(agent_id: str, webhook_url: str) -> dict[str, Any]:
    """A form tool whose submissions are delivered to `webhook_url` (POST /tools body)."""
    return {
        "agentId": agent_id,
        "name": "contact",
        "description": "Collect contact details",
        "executionType": "form",
        "inputSchema": {"type": "object", "properties": {}},
        "formSchema": {"fields": [{"name": "email", "label": "E-mail", "type": "email"}]},
        "formExecutionMode": "webhook",
        "formWebhookUrl": webhook_url,
    }
