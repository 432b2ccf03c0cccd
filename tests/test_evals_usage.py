"""Evaluation runs cost what their model calls cost (issue 36): the agent's answers and the
judge's verdicts are counted in the usage, under their models, against the budgets, with
the budgets' warnings; at a spent budget a case fails in words without asking the model."""

from __future__ import annotations

from tests.support.accounts import bearer, new_api_key
from tests.support.chat import new_agent
from tests.support.evals import finished, post, set_with_cases
from tests.support.fakes import openai_server as oai
from tests.support.usage import OAI, PRICE, agent_budget, priced_client, usage_report

JUDGE = "oai/gpt-judge"
CASE = {"question": "When do you open?", "expected": "We open at nine."}


async def test_a_runs_answers_and_verdicts_are_counted_as_the_agents(make_client, openai_fake):
    prices = {OAI: PRICE, JUDGE: PRICE}
    client = await priced_client(make_client, openai_fake, prices=prices, evals={"concurrency": 1})
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, model=OAI)
    set_id = await set_with_cases(client, auth, agent["id"], [CASE, CASE])
    for _ in range(2):  # each case: the agent's answer (12 + 7 tokens), the judge's (30 + 5)
        openai_fake.script(oai.stream(oai.text_events(["We open at nine."], usage=(12, 7))))
        verdict = '{"pass": true, "reason": "Same."}'
        openai_fake.script(oai.stream(oai.text_events([verdict], usage=(30, 5))))
    run = await post(client, auth, f"/evalsets/{set_id}/runs", {"judge": JUDGE}, status=202)
    done = await finished(client, auth, run["data"]["id"])
    assert [r["passed"] for r in done["results"]] == [True, True]

    by_model = {r["model"]: r for r in (await usage_report(client, auth, groupBy="model"))["rows"]}
    assert by_model[OAI]["inputTokens"] == 24 and by_model[OAI]["outputTokens"] == 14
    assert by_model[JUDGE]["inputTokens"] == 60 and by_model[JUDGE]["outputTokens"] == 10
    assert round(by_model[OAI]["cost"] + by_model[JUDGE]["cost"], 2) == 1.08  # 108 tokens
    [row] = (await usage_report(client, auth, groupBy="agent"))["rows"]
    assert row["agentId"] == agent["id"] and row["answers"] == 4


async def test_a_spent_budget_fails_the_cases_without_asking_the_model(make_client, openai_fake):
    client = await priced_client(make_client, openai_fake, evals={"concurrency": 1})
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, model=OAI)
    await agent_budget(client, auth, agent["id"], {"monthlyLimit": 0.1})
    set_id = await set_with_cases(client, auth, agent["id"], [CASE, CASE])
    openai_fake.script(oai.stream(oai.text_events(["We open at nine."], usage=(12, 7))))
    run = await post(client, auth, f"/evalsets/{set_id}/runs", {}, status=202)
    done = await finished(client, auth, run["data"]["id"])
    first, second = done["results"]
    assert first["answer"] == "We open at nine."  # 0.19 spent: over the 0.10 limit
    assert second["passed"] is False and "monthly budget is spent" in second["reason"]
    assert len(openai_fake.requests) == 1
    state = (await usage_report(client, auth, groupBy="agent"))["rows"][0]
    assert state["answers"] == 1
