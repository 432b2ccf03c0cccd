"""Helpers for the evaluation tests: API calls, a set with cases, a run waited for."""

from __future__ import annotations

import asyncio
import time


async def post(client, auth, path: str, body: dict, status: int = 201) -> dict:
    resp = await client.post(f"/api/v1{path}", json=body, headers=auth)
    assert resp.status == status, await resp.text()
    return await resp.json()


async def set_with_cases(client, auth, agent_id: str, cases: list[dict]) -> str:
    found = (await post(client, auth, f"/agents/{agent_id}/evalsets", {"name": "Hours"}))["data"]
    for case in cases:
        await post(client, auth, f"/evalsets/{found['id']}/cases", case)
    return found["id"]


async def finished(client, auth, run_id: str, seconds: float = 20) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        resp = await client.get(f"/api/v1/eval-runs/{run_id}", headers=auth)
        run = (await resp.json())["data"]
        if run["status"] in ("done", "failed") or time.monotonic() > deadline:
            return run
        await asyncio.sleep(0.05)
