"""An agent's guardrails through the API: their shape and defaults, a change of some fields,
versions and drafts, the "try it" route, and every refusal (RE2's, the limits, another
team's agent)."""

from __future__ import annotations

import pytest

from agentsvc.services.guardrails import settings as limits
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import new_agent
from tests.support.errors import assert_error
from tests.support.guardrails import ALL_KINDS, data_of, set_guardrails, try_text

TOPIC = {"name": "legal", "words": ["lawsuit", " small   claims "], "reply": "Ask our lawyer."}


async def test_an_agent_has_every_guardrail_off_until_set(client, auth):
    agent = await new_agent(client, auth)
    shown = await data_of(await client.get(f"/api/v1/agents/{agent['id']}", headers=auth))
    assert shown["guardrails"] == {
        "redact": {"kinds": [], "patterns": []},
        "redactFrom": ["model", "storage"],
        "blockedTopics": [],
        "mustNotSay": {"words": [], "patterns": [], "fallback": limits.DEFAULT_FALLBACK},
        "maxVisitorMessageChars": None,
    }


async def test_the_fields_given_replace_the_stored_ones_as_a_new_version(client, auth):
    agent = await new_agent(client, auth)
    first = await set_guardrails(
        client,
        auth,
        agent["id"],
        redact={"kinds": ["iban", "email"]},
        blockedTopics=[TOPIC],
        maxVisitorMessageChars=2000,
    )
    guard = first["guardrails"]
    assert guard["redact"] == {"kinds": ["email", "iban"], "patterns": []}  # in their order
    assert guard["blockedTopics"] == [
        {
            "name": "legal",
            "words": ["lawsuit", "small claims"],
            "patterns": [],
            "reply": "Ask our lawyer.",
        }
    ]
    assert (guard["maxVisitorMessageChars"], first["version"]) == (2000, 2)
    second = await set_guardrails(
        client, auth, agent["id"], redactFrom=["storage"], maxVisitorMessageChars=None
    )
    assert second["guardrails"]["redact"]["kinds"] == ["email", "iban"]  # kept
    assert second["guardrails"]["redactFrom"] == ["storage"]
    assert second["guardrails"]["maxVisitorMessageChars"] is None
    same = await set_guardrails(client, auth, agent["id"], redactFrom=["storage"])
    assert same["version"] == second["version"] == 3  # nothing changed: no version

    url = f"/api/v1/agents/{agent['id']}/versions"
    diff = await data_of(await client.get(f"{url}/2/diff/3", headers=auth))
    assert [c["field"] for c in diff["changes"]] == ["guardrails"]
    restored = await data_of(await client.post(f"{url}/1/restore", headers=auth))
    assert restored["agent"]["guardrails"]["redact"]["kinds"] == []  # version 1 had none


async def test_in_draft_mode_guardrails_wait_in_the_draft(client, auth):
    agent = await new_agent(client, auth)
    url = f"/api/v1/agents/{agent['id']}"
    await data_of(await client.patch(url, json={"versioning": "draft"}, headers=auth))
    drafted = await set_guardrails(client, auth, agent["id"], redact={"kinds": ["card"]})
    assert drafted["guardrails"]["redact"]["kinds"] == []  # the live agent
    assert drafted["draft"]["snapshot"]["guardrails"]["redact"]["kinds"] == ["card"]
    both = await set_guardrails(client, auth, agent["id"], redactFrom=["model"])
    assert both["draft"]["snapshot"]["guardrails"]["redact"]["kinds"] == ["card"]  # merged
    # The try box tries the draft's guardrails, as the dashboard shows them.
    tried = await try_text(client, auth, agent["id"], "4111 1111 1111 1111")
    assert (tried["modelSees"], tried["stored"]) == ("[card]", "4111 1111 1111 1111")
    published = await data_of(await client.post(f"{url}/publish", json={}, headers=auth))
    assert published["agent"]["guardrails"]["redact"]["kinds"] == ["card"]


async def test_try_it_says_what_would_happen_without_a_model(client, auth):
    agent = await new_agent(client, auth)
    await set_guardrails(
        client,
        auth,
        agent["id"],
        redact={"kinds": ALL_KINDS, "patterns": [{"name": "order", "pattern": r"#\d{6}"}]},
        blockedTopics=[TOPIC],
        mustNotSay={"words": ["guaranteed refund"], "fallback": "A person will answer."},
        maxVisitorMessageChars=60,
    )
    text = "A lawsuit about #123456? Mail a@b.io, a guaranteed refund to DE89370400440532013000"
    tried = await try_text(client, auth, agent["id"], text)
    assert tried == {
        "tooLong": True,
        "maxVisitorMessageChars": 60,
        "blocked": {
            "rule": "legal",
            "word": "lawsuit",
            "pattern": None,
            "reply": "Ask our lawyer.",
        },
        "redacted": "A lawsuit about [order]? Mail [email], a guaranteed refund to [iban]",
        "redactions": {"email": 1, "iban": 1, "pattern": 1},
        "modelSees": "A lawsuit about [order]? Mail [email], a guaranteed refund to [iban]",
        "stored": "A lawsuit about [order]? Mail [email], a guaranteed refund to [iban]",
        "mustNotSay": {
            "rule": "mustNotSay",
            "word": "guaranteed refund",
            "pattern": None,
            "fallback": "A person will answer.",
        },
    }
    # Unsaved changes, tried as they would be: nothing is stored.
    tried = await try_text(
        client, auth, agent["id"], "ok", maxVisitorMessageChars=None, blockedTopics=[]
    )
    assert (tried["tooLong"], tried["blocked"], tried["mustNotSay"]) == (False, None, None)
    shown = await data_of(await client.get(f"/api/v1/agents/{agent['id']}", headers=auth))
    assert shown["guardrails"]["maxVisitorMessageChars"] == 60


@pytest.mark.parametrize(
    ("guardrails", "field", "words"),
    [
        (
            {"redact": {"patterns": [{"name": "x", "pattern": "(a"}]}},
            "guardrails.redact.patterns[0].pattern",
            "“(a”",
        ),
        (
            {"blockedTopics": [{"name": "t", "patterns": ["ok", r"(\w+) \1"]}]},
            "guardrails.blockedTopics[0].patterns[1]",
            "backreferences",
        ),
        (
            {"mustNotSay": {"patterns": ["price(?= is)"]}},
            "guardrails.mustNotSay.patterns[0]",
            "lookaround",
        ),
        (
            {"mustNotSay": {"patterns": ["(.?){1000}x"]}},
            "guardrails.mustNotSay.patterns[0]",
            "too complex",
        ),
    ],
)
async def test_a_pattern_re2_refuses_is_named_in_a_400(client, auth, guardrails, field, words):
    agent = await new_agent(client, auth)
    url = f"/api/v1/agents/{agent['id']}"
    resp = await client.patch(url, json={"guardrails": guardrails}, headers=auth)
    body = await assert_error(resp, 400, "VALIDATION_ERROR", field)
    assert words in body["message"] and "RE2" in body["message"] or words == "too complex"
    resp = await client.post(
        f"{url}/guardrails/try", json={"text": "x", "guardrails": guardrails}, headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", field)
    shown = await data_of(await client.get(url, headers=auth))
    assert (shown["version"], shown["guardrails"]["mustNotSay"]["patterns"]) == (1, [])


LONG = "x" * (limits.MAX_PATTERN_CHARS + 1)


@pytest.mark.parametrize(
    ("guardrails", "field"),
    [
        ({"redact": {"kinds": ["passport"]}}, "guardrails.redact.kinds"),
        (
            {"redact": {"patterns": [{"name": "[x]", "pattern": "a"}]}},
            "guardrails.redact.patterns.0.name",
        ),
        (
            {"redact": {"patterns": [{"name": f"p{i}", "pattern": "a"} for i in range(11)]}},
            "guardrails.redact.patterns",
        ),
        ({"redactFrom": ["disk"]}, "guardrails.redactFrom"),
        ({"blockedTopics": [{"name": "t"}]}, "guardrails.blockedTopics[0]"),
        (
            {"blockedTopics": [{"name": "t", "words": ["  ?! "]}]},
            "guardrails.blockedTopics[0].words[0]",
        ),
        (
            {"blockedTopics": [{"name": "t", "words": ["a" * 101]}]},
            "guardrails.blockedTopics.0.words",
        ),
        (
            {"blockedTopics": [{"name": "t", "words": [f"w{i}" for i in range(101)]}]},
            "guardrails.blockedTopics.0.words",
        ),
        (
            {"blockedTopics": [{"name": "t", "words": ["a"]}, {"name": "T", "words": ["b"]}]},
            "guardrails.blockedTopics",
        ),
        (
            {"blockedTopics": [{"name": f"t{i}", "words": ["a"]} for i in range(21)]},
            "guardrails.blockedTopics",
        ),
        ({"mustNotSay": {"patterns": [LONG]}}, "guardrails.mustNotSay.patterns"),
        ({"mustNotSay": {"fallback": "   "}}, "guardrails.mustNotSay.fallback"),
        ({"maxVisitorMessageChars": 0}, "guardrails.maxVisitorMessageChars"),
        ({"maxVisitorMessageChars": 100_001}, "guardrails.maxVisitorMessageChars"),
        ({"maxVisitorMessageChars": "2000"}, "guardrails.maxVisitorMessageChars"),
        ({"mustNotSay": None}, "guardrails.mustNotSay"),
        ({"colour": "red"}, "guardrails.colour"),
    ],
)
async def test_bad_guardrails_are_refused_in_words_and_lose_nothing(
    client, auth, guardrails, field
):
    agent = await new_agent(client, auth)
    url = f"/api/v1/agents/{agent['id']}"
    await set_guardrails(client, auth, agent["id"], redact={"kinds": ["email"]})
    resp = await client.patch(url, json={"guardrails": guardrails}, headers=auth)
    body = await assert_error(resp, 400, "VALIDATION_ERROR")
    assert field.split(".")[1].split("[")[0] in body["message"], body
    shown = await data_of(await client.get(url, headers=auth))
    assert (shown["version"], shown["guardrails"]["redact"]["kinds"]) == (2, ["email"])


async def test_too_many_words_together_are_refused(client, auth):
    agent = await new_agent(client, auth)
    topics = [{"name": f"t{n}", "words": [f"w{n}x{i}" * 12 for i in range(100)]} for n in range(20)]
    resp = await client.patch(
        f"/api/v1/agents/{agent['id']}",
        json={"guardrails": {"blockedTopics": topics}},
        headers=auth,
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "too many to check quickly")


async def test_the_try_box_refuses_what_it_cannot_take(client, auth):
    agent = await new_agent(client, auth)
    url = f"/api/v1/agents/{agent['id']}/guardrails/try"
    for body, field in (
        ({}, "text"),
        ({"text": ""}, "text"),
        ({"text": "x" * 100_001}, "text"),
        ({"text": "x", "guardrails": {"redact": {"kinds": ["ssn"]}}}, "guardrails.redact.kinds"),
        ({"text": "x", "extra": 1}, "extra"),
    ):
        resp = await client.post(url, json=body, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)


async def test_another_teams_agent_is_not_found(client, auth):
    agent = await new_agent(client, auth)
    other = bearer(await new_api_key(client, "other@example.com"))
    url = f"/api/v1/agents/{agent['id']}"
    resp = await client.patch(
        url, json={"guardrails": {"redact": {"kinds": ["card"]}}}, headers=other
    )
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.post(f"{url}/guardrails/try", json={"text": "hi"}, headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.post(
        "/api/v1/agents/agt_missing/guardrails/try", json={"text": "hi"}, headers=auth
    )
    await assert_error(resp, 404, "NOT_FOUND")
    shown = await data_of(await client.get(url, headers=auth))
    assert shown["guardrails"]["redact"]["kinds"] == []
