"""An agent's versions, draft, experiment, evaluation set and run, for the security matrix:
the routes that name them, and a team furnished with one of each."""

from __future__ import annotations

import asyncio
from typing import Any

CASE = {"question": "When do you open?", "mustInclude": ["nine"]}

SECURITY_ROUTES: dict[tuple[str, str], tuple[Any, Any]] = {
    ("GET", "/api/v1/agents/{id}/versions"): ("agent", None),
    ("GET", "/api/v1/agents/{id}/versions/draft"): ("agent", None),
    ("GET", "/api/v1/agents/{id}/versions/{n}"): (("agent", "version"), None),
    ("GET", "/api/v1/agents/{id}/versions/{n}/diff/{m}"): (
        ("agent", "version", "version"),
        None,
    ),
    ("POST", "/api/v1/agents/{id}/versions/{n}/restore"): (("agent", "version"), None),
    ("POST", "/api/v1/agents/{id}/publish"): ("agent", {"note": "stolen"}),
    ("DELETE", "/api/v1/agents/{id}/draft"): ("agent", None),
    ("GET", "/api/v1/agents/{id}/experiments"): ("agent", None),
    ("POST", "/api/v1/agents/{id}/experiments"): (
        "agent",
        {"variants": [{"version": 1, "weight": 1}, {"version": 2, "weight": 1}]},
    ),
    ("GET", "/api/v1/experiments/{id}"): ("experiment", None),
    ("POST", "/api/v1/experiments/{id}/stop"): ("experiment", {"winner": 1}),
    ("GET", "/api/v1/agents/{id}/evalsets"): ("agent", None),
    ("POST", "/api/v1/agents/{id}/evalsets"): ("agent", {"name": "stolen"}),
    ("GET", "/api/v1/evalsets/{id}"): ("evalset", None),
    ("DELETE", "/api/v1/evalsets/{id}"): ("evalset", None),
    ("GET", "/api/v1/evalsets/{id}/cases"): ("evalset", None),
    ("POST", "/api/v1/evalsets/{id}/cases"): ("evalset", CASE),
    ("DELETE", "/api/v1/evalsets/{id}/cases/{caseId}"): (("evalset", "eval_case"), None),
    ("POST", "/api/v1/evalsets/{id}/import"): ("evalset", {"from": "curated"}),
    ("GET", "/api/v1/evalsets/{id}/runs"): ("evalset", None),
    ("POST", "/api/v1/evalsets/{id}/runs"): ("evalset", {}),
    ("GET", "/api/v1/eval-runs/{id}"): ("eval_run", None),
    ("GET", "/api/v1/eval-runs/{id}/events"): ("eval_run", None),
}


async def _data(resp, status: int) -> Any:
    assert resp.status == status, await resp.text()
    return (await resp.json())["data"]


async def furnish(client, auth: dict, ids: dict[str, str]) -> None:
    """Version 2 of the agent, an experiment on versions 1 and 2, a draft, an evaluation
    set with a case and a finished run: their ids in `ids`."""
    agent = f"/api/v1/agents/{ids['agent']}"
    await _data(
        await client.patch(agent, json={"systemPrompt": "We open at nine."}, headers=auth), 200
    )
    ids["version"] = "1"
    variants = SECURITY_ROUTES[("POST", "/api/v1/agents/{id}/experiments")][1]
    experiment = await _data(
        await client.post(f"{agent}/experiments", json=variants, headers=auth), 201
    )
    ids["experiment"] = experiment["id"]
    body = {"versioning": "draft", "systemPrompt": "We open at ten."}
    await _data(await client.patch(agent, json=body, headers=auth), 200)
    evalset = await _data(
        await client.post(f"{agent}/evalsets", json={"name": "Hours"}, headers=auth), 201
    )
    ids["evalset"] = evalset["id"]
    case = await _data(
        await client.post(f"/api/v1/evalsets/{evalset['id']}/cases", json=CASE, headers=auth), 201
    )
    ids["eval_case"] = case["id"]
    run = await _data(
        await client.post(f"/api/v1/evalsets/{evalset['id']}/runs", json={}, headers=auth), 202
    )
    ids["eval_run"] = run["id"]
    for _ in range(200):  # a one-case run of the builtin model: a few milliseconds
        found = await _data(await client.get(f"/api/v1/eval-runs/{run['id']}", headers=auth), 200)
        if found["status"] == "done":
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the run did not finish: {found}")
