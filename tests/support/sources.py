"""A knowledge source for the security matrix: the routes that name one, and a team
furnished with one (on an address nothing answers: its sync fails at once, making no
document, so the team's documents stay as the matrix expects)."""

from __future__ import annotations

import asyncio
from typing import Any

SECURITY_ROUTES: dict[tuple[str, str], tuple[Any, Any]] = {
    ("GET", "/api/v1/agents/{id}/sources"): ("agent", None),
    ("POST", "/api/v1/agents/{id}/sources"): (
        "agent",
        {"type": "url", "url": "http://127.0.0.1:9/stolen", "schedule": "off"},
    ),
    ("GET", "/api/v1/sources/{id}"): ("source", None),
    ("PATCH", "/api/v1/sources/{id}"): ("source", {"schedule": "weekly"}),
    ("DELETE", "/api/v1/sources/{id}"): ("source", None),
    ("POST", "/api/v1/sources/{id}/sync"): ("source", None),
    ("GET", "/api/v1/sources/{id}/pages"): ("source", None),
    ("GET", "/api/v1/sources/{id}/events"): ("source", None),
}


async def furnish(client, auth: dict, ids: dict[str, str]) -> None:
    """A source of the agent, its first sync ended: its id in `ids`."""
    body = {"type": "url", "url": "http://127.0.0.1:9/handbook", "schedule": "off"}
    resp = await client.post(f"/api/v1/agents/{ids['agent']}/sources", json=body, headers=auth)
    assert resp.status == 201, await resp.text()
    ids["source"] = (await resp.json())["data"]["id"]
    for _ in range(500):
        resp = await client.get(f"/api/v1/sources/{ids['source']}", headers=auth)
        found = (await resp.json())["data"]
        if found["status"] in ("ready", "failed"):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the sync did not end: {found}")
