"""Evaluation sets and runs: cases written and imported, runs of the builtin model scored
by word stems (deterministic), progress over SSE, a judge model on 127.0.0.1 (a verdict,
a refusal, garbage), plan limits and bad input, other teams kept out."""

from __future__ import annotations

from agentsvc.llm.sse import SseParser
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, new_agent, user
from tests.support.errors import assert_error
from tests.support.evals import finished, post, set_with_cases
from tests.support.fakes import openai_server as oai

PROMPT = "We open at nine on Saturdays. Parcels ship within a day."
OPEN = "When do you open on Saturdays?"


FOUR_CASES = [
    {"question": OPEN, "mustInclude": ["nine"]},
    {"question": OPEN, "mustInclude": ["ten o'clock"]},
    {"question": OPEN, "mustNotInclude": ["Saturdays"], "tags": ["tone"]},
    {"question": "How fast do parcels ship?", "expected": "Parcels ship within a day."},
]


async def test_a_run_of_the_builtin_model_scores_each_case_with_a_reason(client, auth):
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    set_id = await set_with_cases(client, auth, agent["id"], FOUR_CASES)
    cases = await (await client.get(f"/api/v1/evalsets/{set_id}/cases", headers=auth)).json()
    assert [c["tags"] for c in cases["data"]] == [[], [], ["tone"], []]
    started = await post(client, auth, f"/evalsets/{set_id}/runs", {}, status=202)
    assert started["data"]["status"] in ("queued", "running") and started["data"]["version"] == "1"
    run = await finished(client, auth, started["data"]["id"])
    assert (run["status"], run["total"], run["done"], run["passed"]) == ("done", 4, 4, 2)
    assert run["passRate"] == 50.0 and run["finishedAt"]
    results = run["results"]
    assert [r["passed"] for r in results] == [True, False, False, True]
    assert results[0]["answer"] == "We open at nine on Saturdays."
    assert results[1]["reason"] == 'It does not say "ten o\'clock"'
    assert results[2]["reason"] == 'It says "Saturdays", which it must not'
    assert all(r["latencyMs"] >= 0 for r in results)
    # The run stored no conversation: it is not a visitor.
    listed = await client.get(f"/api/v1/conversations?agentId={agent['id']}", headers=auth)
    assert (await listed.json())["data"] == []
    runs = await client.get(f"/api/v1/evalsets/{set_id}/runs", headers=auth)
    assert [r["id"] for r in (await runs.json())["data"]] == [run["id"]]


async def test_runs_name_a_version_or_the_draft(client, auth):
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    set_id = await set_with_cases(client, auth, agent["id"], FOUR_CASES[:1])
    await client.patch(
        f"/api/v1/agents/{agent['id']}",
        json={"versioning": "draft", "systemPrompt": "We open at ten on Saturdays."},
        headers=auth,
    )
    draft = await post(client, auth, f"/evalsets/{set_id}/runs", {"version": "draft"}, 202)
    first = await post(client, auth, f"/evalsets/{set_id}/runs", {"version": 1}, 202)
    draft_run = await finished(client, auth, draft["data"]["id"])
    first_run = await finished(client, auth, first["data"]["id"])
    assert (draft_run["version"], draft_run["passed"]) == ("draft", 0)
    assert (first_run["version"], first_run["passed"]) == ("1", 1)
    body = await post(client, auth, f"/evalsets/{set_id}/runs", {"version": 5}, 404)
    assert body["error"]["message"] == "This agent has no version 5"
    await client.delete(f"/api/v1/agents/{agent['id']}/draft", headers=auth)
    body = await post(client, auth, f"/evalsets/{set_id}/runs", {"version": "draft"}, 404)
    assert "no draft" in body["error"]["message"]


async def test_progress_streams_as_events_until_the_end(client, auth):
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    set_id = await set_with_cases(client, auth, agent["id"], FOUR_CASES)
    started = await post(client, auth, f"/evalsets/{set_id}/runs", {}, status=202)
    resp = await client.get(f"/api/v1/eval-runs/{started['data']['id']}/events", headers=auth)
    assert resp.status == 200 and resp.content_type == "text/event-stream"
    events = [(e.event, e.data) for e in SseParser().feed(await resp.read())]
    names = [name for name, _ in events]
    assert names[-1] == "end" and set(names[:-1]) == {"progress"}
    assert '"status":"done"' in events[-1][1] and '"passed":2' in events[-1][1]
    resp = await client.get("/api/v1/eval-runs/evr_nope/events", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_cases_are_imported_from_curated_and_thumbs_down_answers_once(client, auth):
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    set_id = await set_with_cases(client, auth, agent["id"], [])
    hats = {"question": "Do you sell hats?", "answer": "We sell caps and beanies, not hats."}
    await post(client, auth, f"/agents/{agent['id']}/answers", hats)
    stream = await chat(
        client, {"agentId": agent["id"], "messages": user("Do you sell gloves?")}, auth
    )
    await client.post(
        f"/api/v1/conversations/{stream.start['conversationId']}/feedback",
        json={"messageId": stream.start["messageId"], "rating": "down"},
        headers=auth,
    )
    gloves = {"question": "Do you sell gloves?", "answer": "Gloves come in winter."}
    await post(client, auth, f"/agents/{agent['id']}/answers", gloves)

    curated = await post(client, auth, f"/evalsets/{set_id}/import", {"from": "curated"}, 200)
    assert curated["data"]["imported"] == 2
    assert {c["expected"] for c in curated["data"]["cases"]} == {hats["answer"], gloves["answer"]}
    again = await post(client, auth, f"/evalsets/{set_id}/import", {"from": "curated"}, 200)
    assert again["data"]["imported"] == 0
    other = await new_agent(client, auth, systemPrompt=PROMPT)
    await post(client, auth, f"/agents/{other['id']}/answers", gloves)
    rated = await set_with_cases(client, auth, agent["id"], [])
    found = await post(client, auth, f"/evalsets/{rated}/import", {"from": "feedback"}, 200)
    assert [(c["question"], c["expected"], c["tags"]) for c in found["data"]["cases"]] == [
        ("Do you sell gloves?", "Gloves come in winter.", ["feedback"])
    ]
    run = await post(client, auth, f"/evalsets/{set_id}/runs", {}, status=202)
    assert (await finished(client, auth, run["data"]["id"]))["passed"] == 2


async def test_a_judge_model_decides_and_garbage_fails_the_case_not_the_run(
    make_client, openai_fake
):
    client = await make_client(
        providers={"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}},
        evals={"concurrency": 1},
    )
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    expected = {"question": OPEN, "expected": "We open at nine on Saturdays."}
    set_id = await set_with_cases(client, auth, agent["id"], [expected] * 3)
    openai_fake.script(
        oai.stream(oai.text_events(['{"pass": true, "reason": "Same hours."}'])),
        oai.stream(oai.text_events(['Sure! {"pass": false, "reason": "Wrong day."}'])),
        oai.stream(oai.text_events(["I think it is fine"])),
    )
    body = {"judge": "oai/gpt-judge"}
    run = await post(client, auth, f"/evalsets/{set_id}/runs", body, status=202)
    done = await finished(client, auth, run["data"]["id"])
    assert done["status"] == "done" and done["judge"] == "oai/gpt-judge"
    assert [(r["passed"], r["reason"]) for r in done["results"]] == [
        (True, "The judge: Same hours."),
        (False, "The judge: Wrong day."),
        (False, "The judge's reply was not a verdict: 'I think it is fine'"),
    ]
    sent = openai_fake.requests[0]["json"]
    assert sent["model"] == "gpt-judge" and "grade" in sent["messages"][0]["content"]
    assert "Answer to grade: We open at nine on Saturdays." in sent["messages"][1]["content"]
    for judge, words in (("builtin", "cannot judge"), ("nope/x", "unknown provider")):
        resp = await client.post(
            f"/api/v1/evalsets/{set_id}/runs", json={"judge": judge}, headers=auth
        )
        await assert_error(resp, 400, "VALIDATION_ERROR", words)


async def test_bad_cases_plan_limits_and_other_teams(client, auth):
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    set_id = await set_with_cases(client, auth, agent["id"], [])
    bad = [
        {"question": OPEN},
        {"question": OPEN, "expected": "   "},
        {"question": "  ", "mustInclude": ["x"]},
        {"question": OPEN, "mustInclude": ["x"] * 21},
        {"question": OPEN, "mustInclude": [""]},
        {"question": "x" * 2001, "mustInclude": ["x"]},
        {"question": OPEN, "mustInclude": "nine"},
        {"question": OPEN, "mustInclude": ["nine"], "tags": ["t"] * 11},
    ]
    for case in bad:
        body = await post(client, auth, f"/evalsets/{set_id}/cases", case, status=400)
        assert body["error"]["code"] == "VALIDATION_ERROR"
    body = await post(client, auth, f"/evalsets/{set_id}/runs", {}, status=400)
    assert "no cases" in body["error"]["message"]
    await post(client, auth, f"/evalsets/{set_id}/import", {"from": "elsewhere"}, status=400)
    free = bearer(await new_api_key(client, "free@example.com", plan="free"))
    for method, path in (
        ("get", f"/evalsets/{set_id}"),
        ("get", f"/evalsets/{set_id}/cases"),
        ("get", f"/agents/{agent['id']}/evalsets"),
        ("delete", f"/evalsets/{set_id}"),
    ):
        resp = await getattr(client, method)(f"/api/v1{path}", headers=free)
        await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.post(f"/api/v1/evalsets/{set_id}/runs", json={}, headers=free)
    await assert_error(resp, 404, "NOT_FOUND")
    await client.delete(f"/api/v1/agents/{agent['id']}", headers=auth)
    resp = await client.get(f"/api/v1/evalsets/{set_id}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_a_team_runs_a_bounded_number_at_once(make_client, openai_fake):
    client = await make_client(
        providers={"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}},
        evals={"runs_per_team": 1},
    )
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    set_id = await set_with_cases(client, auth, agent["id"], [{"question": OPEN, "expected": "x"}])
    verdict = oai.text_events(['{"pass": true, "reason": "ok"}'])
    openai_fake.script(oai.stream(verdict, delay=1.0), oai.stream(verdict))
    first = await post(client, auth, f"/evalsets/{set_id}/runs", {"judge": "oai/j"}, 202)
    body = await post(client, auth, f"/evalsets/{set_id}/runs", {}, status=409)
    assert "under way" in body["error"]["message"]
    await finished(client, auth, first["data"]["id"])
    await post(client, auth, f"/evalsets/{set_id}/runs", {}, status=202)


async def test_a_set_holds_as_many_cases_as_the_plan_allows(make_client):
    client = await make_client(plans={"tiny": {"eval_cases": 3}})
    auth = bearer(await new_api_key(client, plan="tiny"))
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    set_id = await set_with_cases(client, auth, agent["id"], [FOUR_CASES[0]] * 3)
    body = await post(client, auth, f"/evalsets/{set_id}/cases", FOUR_CASES[0], 400)
    assert body["error"]["message"] == "This set holds 3 cases; your plan allows 3 in a set"
    await post(
        client, auth, f"/agents/{agent['id']}/answers", {"question": "Hats?", "answer": "No."}
    )
    imported = await post(client, auth, f"/evalsets/{set_id}/import", {"from": "curated"}, 200)
    assert imported["data"]["imported"] == 0  # no room: nothing added, no error
