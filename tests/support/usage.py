"""Helpers for the usage and budget tests: priced fake providers, reports and budgets."""

from __future__ import annotations

from typing import Any

from tests.support.chat import Stream, chat, user
from tests.support.fakes import openai_server as oai

OAI = "oai/gpt-4o-mini"
ANTH = "anth/claude-fake-1"
# 10,000 per million tokens: a token costs 0.01, so the fake's usual answer (12 input and
# 7 output tokens) costs 0.19 EUR.
PRICE = {"input_per_million": 10_000, "output_per_million": 10_000, "currency": "EUR"}
ANSWER_COST = 0.19
FAST_WEBHOOKS = {"retry_schedule_seconds": [0, 0.2, 0.4], "timeout_seconds": 2, "poll_seconds": 0.2}


def providers(openai_fake, anthropic_fake=None) -> dict[str, Any]:
    """The `[providers]` naming the fake servers."""
    found = {"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}}
    if anthropic_fake is not None:
        found["anth"] = {"kind": "anthropic", "base_url": anthropic_fake.base_url, "api_key": "k"}
    return found


async def priced_client(make_client, openai_fake, anthropic_fake=None, prices=None, **sections):
    """An app whose providers are the fakes and whose prices are `prices` (default: OAI's)."""
    return await make_client(
        providers=providers(openai_fake, anthropic_fake),
        prices=prices if prices is not None else {OAI: PRICE},
        **sections,
    )


def script_answers(fake, count: int = 1, text: str = "Hello.", usage=(12, 7)) -> None:
    """Queue `count` plain answers on the fake OpenAI server, each reporting `usage`."""
    for _ in range(count):
        fake.script(oai.stream(oai.text_events([text], usage=usage)))


async def ask(
    client, agent_id: str, text: str = "Hi", headers: dict | None = None, **body: Any
) -> Stream:
    """One turn through POST /chat (with a key in `headers`, or as a widget's visitor)."""
    return await chat(client, {"agentId": agent_id, "messages": user(text), **body}, headers)


async def data(resp, status: int = 200) -> Any:
    """The envelope's data of a successful answer."""
    assert resp.status == status, await resp.text()
    return (await resp.json())["data"]


async def usage_report(client, auth: dict, **params: str) -> dict[str, Any]:
    return await data(await client.get("/api/v1/usage", params=params, headers=auth))


async def team_budget(client, auth: dict, body: dict | None = None) -> dict[str, Any]:
    """PUT /team/budget with `body` (GET without); the bare answer."""
    if body is None:
        resp = await client.get("/api/v1/team/budget", headers=auth)
    else:
        resp = await client.put("/api/v1/team/budget", json=body, headers=auth)
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def agent_budget(client, auth: dict, agent_id: str, budget: dict | None) -> dict[str, Any]:
    """PATCH the agent's budget; the agent as answered."""
    resp = await client.patch(f"/api/v1/agents/{agent_id}", json={"budget": budget}, headers=auth)
    return await data(resp)
