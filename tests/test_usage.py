"""Usage and costs (issue 36): each answer's tokens as its provider reports them (OpenAI's
`include_usage` chunk, Anthropic's `message_start`/`message_delta`, the builtin model's own
count), priced from `[prices]`, on the message, its conversation (list, get, export) and in
`GET /usage` by day, agent and model, read from counters."""

from __future__ import annotations

import logging
import sqlite3
from datetime import UTC, datetime, timedelta

import orjson
import pytest

from agentsvc.config import ConfigError
from agentsvc.db.migrations import schema_at
from agentsvc.db.sqlite import SqliteDatabase
from tests.support import pg
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import get_conversation, new_agent, new_tool
from tests.support.errors import assert_error
from tests.support.fakes import anthropic_server as anth
from tests.support.fakes import openai_server as oai
from tests.support.settings import make_settings
from tests.support.usage import (
    ANSWER_COST,
    ANTH,
    OAI,
    PRICE,
    ask,
    data,
    priced_client,
    script_answers,
    usage_report,
)

TODAY = datetime.now(UTC).date().isoformat()


@pytest.fixture
async def priced(make_client, openai_fake, anthropic_fake):
    prices = {
        OAI: PRICE,
        ANTH: {"input_per_million": 3, "output_per_million": 15, "currency": "EUR"},
        "builtin": {"input_per_million": 1000, "output_per_million": 1000, "currency": "EUR"},
    }
    client = await priced_client(make_client, openai_fake, anthropic_fake, prices=prices)
    return client, bearer(await new_api_key(client))


async def test_each_answer_keeps_its_tokens_and_cost_and_its_conversation_the_sum(
    priced, openai_fake
):
    client, auth = priced
    agent = await new_agent(client, auth, model=OAI)
    await new_tool(client, auth, agent["id"], "lookup", mockResponse="found")
    # A turn of two model calls (a tool call, then the answer): both calls' usage count.
    openai_fake.script(oai.stream(oai.tool_events([("call_1", "lookup", ["{}"])])))
    script_answers(openai_fake, text="Here it is.")
    first = await ask(client, agent["id"], "Find it", auth)
    script_answers(openai_fake, 1, "Again.")
    await ask(client, agent["id"], "Again", auth, conversationId=first.start["conversationId"])

    conv = await get_conversation(client, auth, first.start["conversationId"])
    answers = [m for m in conv["messages"] if m["role"] == "assistant"]
    assert answers[0]["usage"] == {"inputTokens": 32, "outputTokens": 16, "cost": 0.48}
    assert answers[1]["usage"] == {"inputTokens": 12, "outputTokens": 7, "cost": ANSWER_COST}
    assert conv["usage"] == {
        "inputTokens": 44,
        "outputTokens": 23,
        "cost": 0.67,
        "currency": "EUR",
    }
    listed = await data(
        await client.get("/api/v1/conversations", params={"agentId": agent["id"]}, headers=auth)
    )
    assert listed[0]["usage"] == conv["usage"]


async def test_anthropic_and_builtin_usage_is_counted_too(priced, anthropic_fake):
    client, auth = priced
    claude = await new_agent(client, auth, model=ANTH)
    # message_start: 25 fresh input tokens and 100 read from the prompt cache; 15 output.
    anthropic_fake.script(anth.stream(anth.text_events(["Hi."], cache_read_input_tokens=100)))
    stream = await ask(client, claude["id"], "Hello", auth)
    conv = await get_conversation(client, auth, stream.start["conversationId"])
    # 125 x 3 / 1e6 + 15 x 15 / 1e6
    assert conv["messages"][1]["usage"] == {
        "inputTokens": 125,
        "outputTokens": 15,
        "cost": 0.0006,
    }

    builtin = await new_agent(client, auth, systemPrompt="We ship worldwide in three days.")
    stream = await ask(client, builtin["id"], "Do you ship worldwide?", auth)
    reply = (await get_conversation(client, auth, stream.start["conversationId"]))["messages"][1]
    words_in, words_out = 4, len(reply["content"].split())  # the builtin model counts words
    assert reply["usage"] == {
        "inputTokens": words_in,
        "outputTokens": words_out,
        "cost": (words_in + words_out) / 1000,
    }


async def test_a_running_total_counts_once_and_garbage_counts_nothing(priced, openai_fake):
    client, auth = priced
    agent = await new_agent(client, auth, model=OAI)
    openai_fake.script(oai.stream(oai.running_usage_events(["a", "b", "c"], 10, 2)))
    first = await ask(client, agent["id"], "Count", auth)
    for garbage in (
        {"prompt_tokens": "12", "completion_tokens": -3},
        {"prompt_tokens": 10**12, "completion_tokens": True},
        {"prompt_tokens": 1.5},
    ):
        openai_fake.script(oai.stream(oai.odd_usage_events(["Fine."], garbage)))
        stream = await ask(client, agent["id"], "Again", auth)
        assert stream.text == "Fine." and stream.names[-1] == "message_stop"
    conv = await get_conversation(client, auth, first.start["conversationId"])
    assert conv["messages"][1]["usage"] == {"inputTokens": 10, "outputTokens": 6, "cost": 0.16}
    report = await usage_report(client, auth, groupBy="agent")
    # The garbage answers reported no usable count: only the first answer is counted.
    assert report["rows"][0]["answers"] == 1
    assert report["totals"]["inputTokens"] == 10 and report["totals"]["outputTokens"] == 6


async def test_usage_by_day_agent_and_model_with_costs_from_the_prices(
    make_client, openai_fake, anthropic_fake
):
    client = await priced_client(make_client, openai_fake, anthropic_fake)  # OAI priced only
    auth = bearer(await new_api_key(client))
    sales = await new_agent(client, auth, name="Sales", model=OAI)
    support = await new_agent(client, auth, name="Support", model=ANTH)
    script_answers(openai_fake, 3)
    for _ in range(3):
        await ask(client, sales["id"], "Hi", auth)
    anthropic_fake.script(anth.stream(anth.text_events(["Hi."])))
    await ask(client, support["id"], "Hi", auth)

    by_day = await usage_report(client, auth)
    assert (by_day["groupBy"], by_day["to"], by_day["currency"]) == ("day", TODAY, "EUR")
    assert len(by_day["rows"]) == 30 and by_day["rows"][-1]["day"] == TODAY
    assert by_day["rows"][0] == {
        "day": by_day["from"],
        "answers": 0,
        "inputTokens": 0,
        "outputTokens": 0,
        "cost": 0.0,
    }
    assert by_day["totals"] == {
        "answers": 4,
        "inputTokens": 36 + 25,
        "outputTokens": 21 + 15,
        "cost": 0.57,  # Anthropic's model has no price: its answer costs nothing
    }
    assert by_day["rows"][-1] | {"day": TODAY} == by_day["totals"] | {"day": TODAY}

    by_agent = await usage_report(client, auth, groupBy="agent", **{"from": TODAY})
    assert [(r["agentName"], r["answers"], r["cost"]) for r in by_agent["rows"]] == [
        ("Sales", 3, 0.57),
        ("Support", 1, 0.0),
    ]
    by_model = await usage_report(client, auth, groupBy="model")
    assert [(r["model"], r["inputTokens"], r["priced"]) for r in by_model["rows"]] == [
        (OAI, 36, True),
        (ANTH, 25, False),  # its answers cost 0: the page says it has no price
    ]
    one = await usage_report(client, auth, groupBy="model", agentId=support["id"])
    assert [r["model"] for r in one["rows"]] == [ANTH] and one["agentId"] == support["id"]

    # Spending outlives a deleted agent (no name any more); other teams see nothing of it.
    assert (await client.delete(f"/api/v1/agents/{sales['id']}", headers=auth)).status == 200
    after = await usage_report(client, auth, groupBy="agent")
    assert after["rows"][0] == {**by_agent["rows"][0], "agentName": None}
    other = bearer(await new_api_key(client, "other@example.com"))
    assert (await usage_report(client, other))["totals"]["answers"] == 0


async def test_an_export_carries_each_conversations_totals(priced, openai_fake):
    client, auth = priced
    agent = await new_agent(client, auth, model=OAI)
    script_answers(openai_fake)
    await ask(client, agent["id"], "Hi", auth)
    resp = await client.get(
        "/api/v1/conversations/export",
        params={"agentId": agent["id"], "format": "jsonl"},
        headers=auth,
    )
    assert resp.status == 200, await resp.text()
    rows = [orjson.loads(line) for line in (await resp.read()).splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert row["conversationInputTokens"] == 12 and row["conversationOutputTokens"] == 7
        assert row["conversationCost"] == ANSWER_COST and row["currency"] == "EUR"
    csv = await client.get(
        "/api/v1/conversations/export", params={"agentId": agent["id"]}, headers=auth
    )
    head, first = (await csv.text()).split("\r\n")[:2]
    assert "conversationCost,currency" in head and ",0.19,EUR," in first


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"groupBy": "week"}, "groupBy"),
        ({"groupBy": ""}, "groupBy"),
        ({"from": "2026-13-01"}, "from"),
        ({"from": "yesterday"}, "from"),
        ({"to": "2026-02-30"}, "to"),
        ({"from": "2026-03-02", "to": "2026-03-01"}, "from: must not be after to"),
        ({"from": "2024-01-01", "to": "2026-01-01"}, "at most 366 days"),
        ({"agentId": ""}, "agentId"),
    ],
)
async def test_bad_report_questions_are_refused_in_words(client, auth, params, named):
    resp = await client.get("/api/v1/usage", params=params, headers=auth)
    error = await assert_error(resp, 400, "VALIDATION_ERROR", named)
    assert "pydantic" not in error["message"].lower()


async def test_another_teams_agent_is_not_found(client, auth):
    theirs = await new_agent(client, bearer(await new_api_key(client, "them@example.com")))
    resp = await client.get("/api/v1/usage", params={"agentId": theirs["id"]}, headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    assert (await client.get("/api/v1/usage")).status == 401


async def test_a_price_of_a_model_no_provider_serves_is_ignored_with_a_warning(
    make_client, openai_fake, caplog
):
    caplog.set_level(logging.WARNING, logger="agentsvc.runtime")
    prices = {
        OAI: PRICE,
        "nobody/gpt-9": PRICE,  # no provider named nobody
        "gpt-4o": PRICE,  # not PROVIDER/MODEL
    }
    client = await priced_client(make_client, openai_fake, prices=prices)
    warned = [r.getMessage() for r in caplog.records if "prices." in r.getMessage()]
    assert len(warned) == 2
    assert 'prices."gpt-4o": no configured provider serves this model' in warned[0]
    assert warned[1].startswith('prices."nobody/gpt-9"') and "ignored" in warned[1]
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, model=OAI)
    script_answers(openai_fake)
    stream = await ask(client, agent["id"], "Hi", auth)
    conv = await get_conversation(client, auth, stream.start["conversationId"])
    assert conv["usage"]["cost"] == ANSWER_COST  # the known price still counts


@pytest.mark.parametrize(
    ("prices", "named"),
    [
        ({OAI: {**PRICE, "currency": "USD"}, "oai/x": PRICE}, "every price must be in one"),
        ({OAI: {**PRICE, "input_per_million": -1}}, "input_per_million"),
        ({OAI: {**PRICE, "currency": "euro"}}, "currency"),
        ({OAI: {"input_per_million": 1}}, "output_per_million"),
        ({OAI: {**PRICE, "output_per_million": "0.6"}}, "output_per_million"),
    ],
)
def test_bad_prices_stop_start_up_naming_the_key(tmp_path, prices, named):
    with pytest.raises(ConfigError, match=named):
        make_settings(tmp_path, prices=prices)


@pg.sqlite_only
async def test_the_upgrade_counts_the_tokens_answers_already_had(tmp_path):
    """Version 24 adds the answers stored before it to the counters (at no cost)."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(schema_at(23))
    day = (datetime.now(UTC) - timedelta(days=2)).strftime("%Y-%m-%dT10:00:00.000Z")
    rows = [
        ("INSERT INTO users (id, email, created_at, updated_at) VALUES ('usr_1', 'a@b.c', ?, ?)",
         (day, day)),
        ("INSERT INTO teams (id, name, owner_user_id, plan, created_at, updated_at)"
         " VALUES ('team_1', 'T', 'usr_1', 'pro', ?, ?)", (day, day)),
        ("INSERT INTO agents (id, team_id, name, slug, model, temperature, system_prompt,"
         " created_at, updated_at) VALUES ('agt_1', 'team_1', 'A', 'a', 'builtin', 70, '', ?, ?)",
         (day, day)),
        ("INSERT INTO conversations (id, agent_id, team_id, title, created_at, updated_at)"
         " VALUES ('conv_1', 'agt_1', 'team_1', 'x', ?, ?)", (day, day)),
    ]  # fmt: skip
    message = (
        "INSERT INTO messages (id, conversation_id, role, content, usage, status, model,"
        " created_at) VALUES (?, 'conv_1', ?, 'text', ?, 'complete', ?, ?)"
    )
    rows += [
        (message, ("msg_1", "user", None, None, day)),
        (message, ("msg_2", "assistant", '{"inputTokens": 5, "outputTokens": 3}', "x", day)),
        (message, ("msg_3", "assistant", '{"inputTokens": null, "outputTokens": 4}', "x", day)),
    ]
    with conn:
        for sql, args in rows:
            conn.execute(sql, args)
    conn.close()
    db = SqliteDatabase(path)
    await db.open()
    try:
        row = await db.reader.fetchone(
            "SELECT input_tokens, output_tokens, cost_nanos FROM conversations"
        )
        assert tuple(row) == (5, 7, 0)
        counted = await db.reader.fetchall(
            "SELECT team_id, day, agent_id, model, answers, input_tokens, output_tokens"
            " FROM usage_daily"
        )
        assert [tuple(r) for r in counted] == [("team_1", day[:10], "agt_1", "x", 2, 5, 7)]
    finally:
        await db.close()
