"""GET /agents/:id/analytics: figures per day and in total (conversations, visitor messages,
answers, ratings, unanswered answers), the trigger funnel, the most frequent unanswered
questions; date ranges and their bad values; counters kept through deletes."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from agentsvc.api import app_keys
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, new_agent, new_tool, user
from tests.support.errors import assert_error

PROMPT = "Refunds are paid within five days. Parcels ship worldwide."
FORM = {"fields": [{"name": "email", "label": "E-mail", "type": "email"}]}


def today() -> str:
    return datetime.now(UTC).date().isoformat()


async def analytics(client, auth, agent_id: str, query: str = "") -> dict:
    resp = await client.get(f"/api/v1/agents/{agent_id}/analytics?{query}", headers=auth)
    assert resp.status == 200, await resp.text()
    return (await resp.json())["data"]


async def ask(client, auth, agent_id: str, text: str, **extra) -> tuple[str, str]:
    stream = await chat(client, {"agentId": agent_id, "messages": user(text), **extra}, auth)
    return stream.start["conversationId"], stream.start["messageId"]


async def rate(client, auth, conv_id: str, message_id: str, rating: str) -> None:
    resp = await client.post(
        f"/api/v1/conversations/{conv_id}/feedback",
        json={"messageId": message_id, "rating": rating},
        headers=auth,
    )
    assert resp.status == 200, await resp.text()


async def test_daily_figures_answers_ratings_and_unanswered_questions(client, auth):
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    conv, answered = await ask(client, auth, agent["id"], "When are refunds paid?")
    body = {"agentId": agent["id"], "conversationId": conv, "messages": user("Do you sell hats?")}
    stream = await chat(client, body, auth)
    unanswered = stream.start["messageId"]
    for text in ("Do you sell hats", "do you SELL hats?!", "Is there a discount code?"):
        await ask(client, auth, agent["id"], text)
    await rate(client, auth, conv, answered, "up")
    await rate(client, auth, conv, unanswered, "down")
    await rate(client, auth, conv, unanswered, "up")  # changed: counted once, as up

    data = await analytics(client, auth, agent["id"])
    assert data["agentId"] == agent["id"] and data["to"] == today()
    assert len(data["days"]) == 30 and data["days"][-1]["date"] == today()
    assert data["from"] == (datetime.now(UTC).date() - timedelta(days=29)).isoformat()
    day = data["days"][-1]
    assert day["conversations"] == 4 and day["visitorMessages"] == 5 and day["answers"] == 5
    assert day["answersRatedUp"] == 2 and day["answersRatedDown"] == 0
    assert day["unanswered"] == 4
    assert data["days"][0]["conversations"] == 0
    totals = data["totals"]
    assert totals["conversations"] == 4 and totals["unanswered"] == 4
    assert totals["unansweredRate"] == 80.0
    questions = data["unansweredQuestions"]
    assert questions[0]["count"] == 3 and questions[0]["lastAskedAt"].startswith(today())
    assert questions[0]["question"] == "do you SELL hats?!"  # the latest wording
    assert [q["count"] for q in questions] == [3, 1]
    assert questions[1]["question"] == "Is there a discount code?"
    conv_body = await (await client.get(f"/api/v1/conversations/{conv}", headers=auth)).json()
    flags = [m["unanswered"] for m in conv_body["data"]["messages"]]
    assert flags == [None, False, None, True]

    # A deleted conversation keeps counting (history) but its questions leave the list.
    await client.delete(f"/api/v1/conversations/{conv}", headers=auth)
    data = await analytics(client, auth, agent["id"])
    assert data["totals"]["conversations"] == 4
    assert [q["count"] for q in data["unansweredQuestions"]] == [2, 1]


async def test_the_trigger_funnel(client, auth):
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    form = await new_tool(
        client, auth, agent["id"], "lead", executionType="form", formSchema=FORM,
        formExecutionMode="client", formClientHandler="save",
    )  # fmt: skip
    created = []
    for name, action, config in (
        ("Chat invite", "open_chat", {"message": "Hi"}),
        ("Lead form", "show_form", {"toolId": form["id"]}),
    ):
        resp = await client.post(
            f"/api/v1/triggers?agentId={agent['id']}",
            json={"name": name, "triggerType": "exit_intent", "conditions": {},
                  "actionType": action, "actionConfig": config},
            headers=auth,
        )  # fmt: skip
        assert resp.status == 201, await resp.text()
        created.append(await resp.json())
    invite, lead = created

    async def event(trigger: dict, kind: str) -> None:
        resp = await client.post(
            "/api/v1/triggers/event",
            json={"agentId": agent["id"], "triggerId": trigger["id"],
                  "triggerName": trigger["name"], "triggerType": "exit_intent",
                  "actionType": trigger["actionType"], "eventType": kind, "sessionId": "s1"},
        )  # fmt: skip
        assert resp.status == 202, await resp.text()

    for _ in range(3):
        await event(invite, "fired")
    await event(invite, "converted")
    await event(lead, "fired")
    # A chat started from the invite; its form submission counts for the invite too.
    conv, _ = await ask(client, auth, agent["id"], "hello", triggerId=invite["id"])
    # A trigger id that is not this agent's is not kept.
    other = await new_agent(client, auth, name="Other")
    stray, _ = await ask(client, auth, other["id"], "hello", triggerId=invite["id"])
    for extra in ({"conversationId": conv}, {"triggerId": lead["id"]}, {"triggerId": "trg_x"}):
        resp = await client.post(
            "/api/v1/form-submissions/submit",
            json={"toolId": form["id"], "formData": {"email": "a@b.co"},
                  "fieldsCompleted": ["email"], **extra},
            headers=auth,
        )  # fmt: skip
        assert resp.status == 200, await resp.text()

    data = await analytics(client, auth, agent["id"])
    day = data["days"][-1]
    assert (day["triggerFired"], day["triggerConverted"]) == (4, 1)
    assert (day["triggerConversations"], day["triggerSubmissions"]) == (1, 2)
    by_id = {t["triggerId"]: t for t in data["triggers"]}
    assert by_id[invite["id"]] == {
        "triggerId": invite["id"], "name": "Chat invite", "fired": 3, "converted": 1,
        "conversations": 1, "submissions": 1,
    }  # fmt: skip
    assert (by_id[lead["id"]]["fired"], by_id[lead["id"]]["submissions"]) == (1, 1)
    assert [t["triggerId"] for t in data["triggers"]] == [invite["id"], lead["id"]]
    listed = await (await client.get(f"/api/v1/conversations/{conv}", headers=auth)).json()
    assert listed["data"]["triggerId"] == invite["id"]
    stray_body = await (await client.get(f"/api/v1/conversations/{stray}", headers=auth)).json()
    assert stray_body["data"]["triggerId"] is None
    subs = await (await client.get(f"/api/v1/form-submissions?agentId={agent['id']}",
                                   headers=auth)).json()  # fmt: skip
    assert sorted(str(s.get("conversationId")) for s in subs["submissions"]) == sorted(
        [conv, "None", "None"]
    )
    # A deleted trigger keeps its figures, without a name.
    await client.delete(f"/api/v1/triggers/{lead['id']}", headers=auth)
    data = await analytics(client, auth, agent["id"])
    assert {t["triggerId"]: t["name"] for t in data["triggers"]}[lead["id"]] is None


async def test_ranges_of_days(client, auth):
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    conv, _ = await ask(client, auth, agent["id"], "hello")
    db = client.app[app_keys.db_key]
    async with db.write() as tx:  # figures of earlier days, as the counters keep them
        await tx.execute(
            "INSERT INTO agent_daily (agent_id, day, conversations, visitor_messages)"
            " VALUES (?, '2026-01-05', 7, 9)",
            (agent["id"],),
        )
    data = await analytics(client, auth, agent["id"], "from=2026-01-04&to=2026-01-06")
    assert [d["date"] for d in data["days"]] == ["2026-01-04", "2026-01-05", "2026-01-06"]
    assert [d["conversations"] for d in data["days"]] == [0, 7, 0]
    assert data["totals"]["visitorMessages"] == 9 and data["totals"]["unansweredRate"] == 0
    one = await analytics(client, auth, agent["id"], "from=2026-01-05&to=2026-01-05")
    assert len(one["days"]) == 1
    year = (date(2026, 1, 1) + timedelta(days=365)).isoformat()
    assert (
        len((await analytics(client, auth, agent["id"], f"from=2026-01-01&to={year}"))["days"])
        == 366
    )
    # The first and last days there are.
    edge = await analytics(client, auth, agent["id"], "to=0001-01-05")
    assert [d["date"] for d in edge["days"]][0] == "0001-01-01" and len(edge["days"]) == 5
    edge = await analytics(client, auth, agent["id"], "from=9999-12-31&to=9999-12-31")
    assert [d["date"] for d in edge["days"]] == ["9999-12-31"]
    base = f"/api/v1/agents/{agent['id']}/analytics"
    for query, named in (
        ("from=2026-01-06&to=2026-01-05", "from: must not be after to"),
        (f"from=2026-01-01&to={date(2027, 1, 2).isoformat()}", "at most 366 days"),
        ("from=2000-01-01", "at most 366 days"),
        ("from=2026-02-29", "query.from: must be a calendar date"),
        ("to=26-01-01", "query.to"),
        ("from=2026-01-01T00:00:00Z", "query.from"),
    ):
        resp = await client.get(f"{base}?{query}", headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", named)
    other = bearer(await new_api_key(client, "other@example.com"))
    resp = await client.get(base, headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get("/api/v1/agents/agt_missing/analytics", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    # Deleting the agent removes its figures.
    await client.delete(f"/api/v1/agents/{agent['id']}", headers=auth)
    rows = await db.reader.fetchall("SELECT * FROM agent_daily WHERE agent_id = ?", (agent["id"],))
    assert rows == [] and conv
