"""Monthly budgets (issue 36): the team's (PUT /team/budget) and an agent's (its `budget`
field); owners warned once per month and threshold by e-mail and a `budget.warning` event;
at the limit the agent answers with its offline message (a visitor can still ask for a
person) until the month ends or the limit is raised; one budget for every process of a
cluster (two apps on one PostgreSQL)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from agentsvc.api import app_keys
from agentsvc.app import create_app
from tests.support import pg
from tests.support.accounts import add_member, bearer, create_user, key_for, new_api_key
from tests.support.chat import get_conversation, new_agent
from tests.support.errors import assert_error
from tests.support.fakes.webhook_receiver import WebhookReceiver
from tests.support.live import VISITOR_SESSION
from tests.support.mail import outbox
from tests.support.settings import make_settings
from tests.support.usage import (
    FAST_WEBHOOKS,
    OAI,
    PRICE,
    agent_budget,
    ask,
    data,
    priced_client,
    providers,
    script_answers,
    team_budget,
)

OFFLINE = "We are away for now: ask for a person and we will answer."
VISITOR = {"X-Session-Id": VISITOR_SESSION}
MONTH = datetime.now(UTC).strftime("%Y-%m")


@pytest.fixture
async def receiver():
    rec = await WebhookReceiver().start()
    yield rec
    await rec.close()


async def owner_of(client, email: str = "owner@example.com"):
    user_, team = await create_user(client, email, name="Olivia")
    return team, bearer(await key_for(client, team.id, user_.id))


async def budgeted_agent(client, auth, name: str = "Helper", **budget) -> dict:
    """An agent of the priced fake model that hands over, with an offline message."""
    agent = await new_agent(client, auth, name=name, model=OAI)
    handoff = {"enabled": True, "offlineMessage": OFFLINE}
    resp = await client.patch(
        f"/api/v1/agents/{agent['id']}", json={"handoff": handoff}, headers=auth
    )
    assert resp.status == 200, await resp.text()
    if budget:
        return await agent_budget(client, auth, agent["id"], budget)
    return agent


async def visitor_says(client, agent_id: str, conversation_id: str | None = None):
    extra = {"conversationId": conversation_id} if conversation_id else {}
    return await ask(client, agent_id, "Hello", sessionId=VISITOR_SESSION, **extra)


async def warnings_hooked(client, auth, receiver) -> None:
    body = {"url": receiver.url("/ok"), "events": ["budget.warning"]}
    assert (await client.post("/api/v1/webhooks", json=body, headers=auth)).status == 201


async def mails_to(client, address: str, count: int) -> list:
    """The outbox's messages to `address` once there are `count` (newest first)."""
    for _ in range(100):
        kept = [m for m in await outbox(client, address) if "Budget" in m.subject]
        if len(kept) >= count:
            return kept
        await asyncio.sleep(0.05)
    raise AssertionError(f"{len(kept)} budget mails to {address}")


async def test_a_warning_once_at_the_threshold_then_the_offline_message_at_the_limit(
    make_client, openai_fake, receiver
):
    client = await priced_client(make_client, openai_fake, webhooks=FAST_WEBHOOKS)
    _, auth = await owner_of(client)
    await warnings_hooked(client, auth, receiver)
    agent = await budgeted_agent(client, auth, monthlyLimit=0.5, warnAtPercent=50)
    assert agent["budget"]["monthlyLimit"] == 0.5 and agent["budget"]["spent"] == 0
    script_answers(openai_fake, 3)  # 0.19 EUR each
    first = await visitor_says(client, agent["id"])
    conv_id = first.start["conversationId"]
    await visitor_says(client, agent["id"], conv_id)  # 0.38: 76 % (the warning at 50 %)
    await receiver.wait_for(1, "/ok")
    await visitor_says(client, agent["id"], conv_id)  # 0.57: the limit
    await receiver.wait_for(2, "/ok")

    held = await visitor_says(client, agent["id"], conv_id)
    assert held.text == OFFLINE and held.names[-1] == "message_stop"
    assert len(openai_fake.requests) == 3  # the model was not called
    events = [h.json for h in receiver.at("/ok")]
    assert [(e["type"], e["data"]["threshold"]) for e in events] == [
        ("budget.warning", 50),
        ("budget.warning", 100),
    ]
    assert events[1]["data"] == {
        "scope": "agent",
        "agentId": agent["id"],
        "agentName": "Helper",
        "month": MONTH,
        "threshold": 100,
        "limitReached": True,
        "monthlyLimit": 0.5,
        "spent": 0.57,
        "percentUsed": 114.0,
        "currency": "EUR",
        "resetsAt": events[1]["data"]["resetsAt"],
    }
    mails = await mails_to(client, "owner@example.com", 2)
    assert [m.subject for m in mails] == [
        "Budget reached: Helper has used all of its monthly budget",
        "Budget warning: Helper has used 50 % of its monthly budget",
    ]
    assert "0.38 EUR of its 0.50 EUR budget" in mails[1].body
    assert "/#/usage" in mails[1].body and "offline message" in mails[0].body

    # The offline answer is stored (no usage), and the visitor can still ask for a person.
    conv = await get_conversation(client, auth, conv_id)
    assert conv["messages"][-1]["content"] == OFFLINE and conv["messages"][-1]["usage"] is None
    resp = await client.post(f"/api/v1/conversations/{conv_id}/handoff", json={}, headers=VISITOR)
    assert (await data(resp))["status"] == "waiting"
    shown = await data(await client.get(f"/api/v1/agents/{agent['id']}", headers=auth))
    assert shown["budget"]["limitReached"] is True and shown["budget"]["spent"] == 0.57

    # Raised, the agent answers again at once; nothing more is sent for the old limit.
    raised = await agent_budget(client, auth, agent["id"], {"monthlyLimit": 5})
    assert raised["budget"]["warnAtPercent"] == 80 and not raised["budget"]["limitReached"]
    resp = await client.post(f"/api/v1/conversations/{conv_id}/release", headers=auth)
    assert resp.status == 200, await resp.text()
    script_answers(openai_fake, text="Back again.")
    again = await visitor_says(client, agent["id"], conv_id)
    assert again.text == "Back again." and len(openai_fake.requests) == 4
    await asyncio.sleep(0.3)
    assert len(receiver.at("/ok")) == 2
    assert len(await mails_to(client, "owner@example.com", 2)) == 2


async def test_the_teams_budget_holds_every_agent_and_an_agents_only_itself(
    make_client, openai_fake
):
    client = await priced_client(make_client, openai_fake)
    team, auth = await owner_of(client)
    sales = await budgeted_agent(client, auth, "Sales", monthlyLimit=0.2, warnAtPercent=None)
    support = await budgeted_agent(client, auth, "Support")
    script_answers(openai_fake, 3)
    await ask(client, sales["id"], "Hi", auth)  # 0.19 of Sales' 0.20
    await ask(client, sales["id"], "Hi", auth)  # 0.38: Sales is at its limit
    assert (await ask(client, sales["id"], "Hi", auth)).text == OFFLINE
    assert (await ask(client, support["id"], "Hi", auth)).text == "Hello."  # not Support

    state = await team_budget(client, auth, {"monthlyLimit": 0.5, "warnAtPercent": 90})
    assert state["budget"]["limitReached"] is True and state["spent"] == 0.57
    assert state["budget"]["percentUsed"] == 114.0 and state["month"] == MONTH
    assert {a["agentName"]: (a["spent"], bool(a["budget"])) for a in state["agents"]} == {
        "Sales": (0.38, True),
        "Support": (0.19, False),
    }
    assert (await ask(client, support["id"], "Hi", auth)).text == OFFLINE  # the team's limit
    assert len(openai_fake.requests) == 3

    # Spending of an earlier month does not count: raised, the team's budget frees Support.
    last_month = (datetime.now(UTC).replace(day=1) - timedelta(days=1)).strftime("%Y-%m")
    async with client.app[app_keys.db_key].write() as tx:
        await tx.execute(
            "INSERT INTO usage_monthly (team_id, month, agent_id, cost_nanos) VALUES (?, ?, ?, ?)",
            (team.id, last_month, support["id"], 10**12),
        )
    raised = await team_budget(client, auth, {"monthlyLimit": 100})
    assert raised["spent"] == 0.57 and not raised["budget"]["limitReached"]
    script_answers(openai_fake)
    assert (await ask(client, support["id"], "Hi", auth)).text == "Hello."
    freed = await client.delete("/api/v1/team/budget", headers=auth)
    assert (await freed.json())["budget"] is None
    audit = await data(await client.get("/api/v1/audit-log", headers=auth))
    actions = [e["action"] for e in audit]
    assert actions.count("team.budget_changed") == 3 and "agent.budget_changed" in actions


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"monthlyLimit": -5}, "monthlyLimit"),
        ({"monthlyLimit": 0}, "monthlyLimit"),
        ({"monthlyLimit": "ten"}, "monthlyLimit"),
        ({"monthlyLimit": "10"}, "monthlyLimit"),
        ({"monthlyLimit": True}, "monthlyLimit"),
        ({"monthlyLimit": 1e12}, "monthlyLimit"),
        ({}, "monthlyLimit"),
        ({"monthlyLimit": 10, "warnAtPercent": 0}, "warnAtPercent"),
        ({"monthlyLimit": 10, "warnAtPercent": 100}, "warnAtPercent"),
        ({"monthlyLimit": 10, "warnAtPercent": 50.5}, "warnAtPercent"),
        ({"monthlyLimit": 10, "warnAtPercent": "80"}, "warnAtPercent"),
        ({"monthlyLimit": 10, "currency": "USD"}, "budgets are in EUR"),
        ({"monthlyLimit": 10, "currency": "eur"}, "currency"),
        ({"monthlyLimit": 10, "limit": 10}, "limit"),
    ],
)
async def test_bad_budgets_are_refused_in_words_and_change_nothing(
    make_client, openai_fake, body, named
):
    client = await priced_client(make_client, openai_fake)
    _, auth = await owner_of(client)
    agent = await budgeted_agent(client, auth)
    resp = await client.put("/api/v1/team/budget", json=body, headers=auth)
    error = await assert_error(resp, 400, "VALIDATION_ERROR", named)
    assert "pydantic" not in error["message"] and "Decimal" not in error["message"]
    resp = await client.patch(
        f"/api/v1/agents/{agent['id']}", json={"name": "Renamed", "budget": body}, headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", named)
    assert (await team_budget(client, auth))["budget"] is None
    shown = await data(await client.get(f"/api/v1/agents/{agent['id']}", headers=auth))
    assert (shown["name"], shown["budget"]) == ("Helper", None)


async def test_only_owners_set_budgets_and_another_teams_agent_is_not_found(
    make_client, openai_fake
):
    client = await priced_client(make_client, openai_fake)
    team, auth = await owner_of(client)
    agent = await budgeted_agent(client, auth)
    member = await add_member(client, team.id, "member@example.com")
    as_member = bearer(await key_for(client, team.id, member.id))
    budget = {"monthlyLimit": 10}
    resp = await client.put("/api/v1/team/budget", json=budget, headers=as_member)
    await assert_error(resp, 403, "FORBIDDEN")
    resp = await client.patch(
        f"/api/v1/agents/{agent['id']}", json={"budget": budget}, headers=as_member
    )
    await assert_error(resp, 403, "FORBIDDEN", "budget")
    assert (await team_budget(client, as_member))["budget"] is None  # members may read it
    assert (await client.get("/api/v1/usage", headers=as_member)).status == 200

    _, other = await owner_of(client, "other@example.com")
    path = f"/api/v1/agents/{agent['id']}"
    resp = await client.patch(path, json={"budget": budget}, headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    assert (await team_budget(client, other))["agents"] == []
    shown = await data(await client.get(f"/api/v1/agents/{agent['id']}", headers=auth))
    assert shown["budget"] is None

    set_ = await agent_budget(client, auth, agent["id"], {"monthlyLimit": 2.5, "currency": "EUR"})
    assert set_["version"] == shown["version"]  # a budget is no version of what the agent does
    versions = await data(await client.get(f"/api/v1/agents/{agent['id']}/versions", headers=auth))
    assert all("budget" not in v.get("snapshot", {}) for v in versions)
    assert set_["budget"] | {"updatedAt": None, "resetsAt": None} == {
        "monthlyLimit": 2.5,
        "currency": "EUR",
        "warnAtPercent": 80,
        "updatedAt": None,
        "month": MONTH,
        "spent": 0.0,
        "percentUsed": 0.0,
        "limitReached": False,
        "resetsAt": None,
    }
    assert (await agent_budget(client, auth, agent["id"], None))["budget"] is None


@pg.postgres_only
async def agent_of(client, auth, agent_id: str) -> dict:
    resp = await client.get(f"/api/v1/agents/{agent_id}", headers=auth)
    assert resp.status == 200, await resp.text()
    return (await resp.json())["data"]


async def budget_becomes(client, auth, agent_id: str, limit: float) -> bool:
    for _ in range(50):  # a NOTIFY reaches the other process within milliseconds
        if (await agent_of(client, auth, agent_id))["budget"]["monthlyLimit"] == limit:
            return True
        await asyncio.sleep(0.02)
    return False


async def test_two_processes_share_one_budget_and_warn_once(aiohttp_client, tmp_path, openai_fake):
    settings = make_settings(
        tmp_path, providers=providers(openai_fake), prices={OAI: PRICE}, webhooks=FAST_WEBHOOKS
    )
    first = await aiohttp_client(create_app(settings))
    second = await aiohttp_client(create_app(settings))
    rec = await WebhookReceiver().start()
    try:
        auth = bearer(await new_api_key(first))
        await warnings_hooked(first, auth, rec)
        agent = await budgeted_agent(first, auth, monthlyLimit=0.5, warnAtPercent=50)
        script_answers(openai_fake, 3)
        await ask(first, agent["id"], "Hi", auth)
        await ask(second, agent["id"], "Hi", auth)  # the warning, from the second process
        await ask(first, agent["id"], "Hi", auth)  # the limit, from the first
        for process in (first, second):
            assert (await ask(process, agent["id"], "Hi", auth)).text == OFFLINE
        await rec.wait_for(2, "/ok")

        # Raised in one process, both answer (and the first, which kept the old budget
        # beside its cached agent, shows the new one); crossing 50 % of the new limit at the
        # same moment in both, the warning is still sent once.
        assert (await agent_of(first, auth, agent["id"]))["budget"]["monthlyLimit"] == 0.5
        await agent_budget(second, auth, agent["id"], {"monthlyLimit": 1.3, "warnAtPercent": 50})
        if pg.SERVER_URL:  # one process per SQLite database: processes share no caches
            assert await budget_becomes(first, auth, agent["id"], 1.3)
        script_answers(openai_fake, 2)
        both = await asyncio.gather(
            ask(first, agent["id"], "Hi", auth), ask(second, agent["id"], "Hi", auth)
        )
        assert [s.text for s in both] == ["Hello.", "Hello."]
        await rec.wait_for(3, "/ok")
        await asyncio.sleep(0.5)
        sent = [h.json["data"] for h in rec.at("/ok")]
        thresholds = [(d["threshold"], d["monthlyLimit"]) for d in sent]
        assert sorted(thresholds) == [(50, 0.5), (50, 1.3), (100, 0.5)]
        state = await team_budget(second, auth)
        assert state["agents"][0]["spent"] == 0.95
        assert len(await mails_to(first, "owner@example.com", 3)) == 3
    finally:
        await rec.close()
