"""Helpers for the guardrails' tests: set an agent's guardrails, try them, read what a hit
left (notes, counters), and the routes for the security matrix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CORPUS = json.loads(
    (Path(__file__).resolve().parent.parent / "data" / "guardrails_corpus.json").read_text()
)

# The security matrix's routes of guardrails (tests/test_security_matrix.py).
SECURITY_ROUTES: dict[tuple[str, str], tuple[Any, Any]] = {
    ("POST", "/api/v1/agents/{id}/guardrails/try"): ("agent", {"text": "hello"}),
    ("DELETE", "/api/v1/conversations/{id}/flag"): ("conversation", None),
}
ALL_KINDS = ["email", "phone", "card", "iban"]


async def furnish(client, auth: dict, ids: dict[str, str]) -> None:
    """The matrix's agent and conversation are all these routes need."""


async def data_of(resp, status: int = 200) -> Any:
    assert resp.status == status, (resp.status, await resp.text())
    return (await resp.json())["data"]


async def set_guardrails(client, auth: dict, agent_id: str, **guardrails) -> dict:
    """PATCH the agent's guardrails (the fields given); return the agent."""
    resp = await client.patch(
        f"/api/v1/agents/{agent_id}", json={"guardrails": guardrails}, headers=auth
    )
    return await data_of(resp)


async def try_text(client, auth: dict, agent_id: str, text: str, **guardrails) -> dict:
    body: dict[str, Any] = {"text": text}
    if guardrails:
        body["guardrails"] = guardrails
    resp = await client.post(f"/api/v1/agents/{agent_id}/guardrails/try", json=body, headers=auth)
    return await data_of(resp)


async def notes_of(client, auth: dict, conversation_id: str) -> list[str]:
    """The guardrails' notes in the conversation's timeline, oldest first."""
    resp = await client.get(f"/api/v1/conversations/{conversation_id}", headers=auth)
    conv = await data_of(resp)
    return [n["content"] for n in conv["notes"] if n["author"]["name"] == "Guardrails"]


async def hits(client, auth: dict, agent_id: str) -> dict[str, int]:
    """The agent's guardrail hits of the last 30 days, by kind (the analytics' totals)."""
    resp = await client.get(f"/api/v1/agents/{agent_id}/analytics", headers=auth)
    return (await data_of(resp))["totals"]["guardrailHits"]
