"""Guardrails in chat turns, end to end: what the model receives (a fake OpenAI-compatible
server records it), what is stored (messages, the title, exports, webhook payloads),
blocked topics without a model call, mustNotSay while the answer streams, the longest
visitor message, and what every hit leaves: counters, notes, the review flag."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from tests.support.accounts import bearer, new_api_key
from tests.support.channels import PROMPT, message, new_channel, send
from tests.support.chat import chat, get_conversation, new_agent, user
from tests.support.errors import assert_error
from tests.support.fakes import openai_server as oai
from tests.support.fakes.webhook_receiver import WebhookReceiver
from tests.support.guardrails import ALL_KINDS, data_of, hits, notes_of, set_guardrails
from tests.support.pg import stored_bytes

CARD, MAIL, PHONE = "4111 1111 1111 1111", "jane.doe@example.com", "+44 20 7946 0958"
SAID = f"My card {CARD} was charged twice; mail {MAIL} or call {PHONE}. Order #100234."
REDACTED = "My card [card] was charged twice; mail [email] or call [phone]. Order #100234."
FAST = {"retry_schedule_seconds": [0, 0.2], "timeout_seconds": 2, "poll_seconds": 0.1}
MUST = {
    "words": ["guaranteed refund"],
    "patterns": [r"(?i)\bfree of charge\b"],
    "fallback": "A person will answer.",
}


@pytest.fixture
async def receiver():
    rec = await WebhookReceiver(slow_seconds=0).start()
    yield rec
    await rec.close()


@pytest.fixture
async def gclient(make_client, openai_fake):
    return await make_client(
        providers={"oai": {"kind": "openai", "base_url": openai_fake.base_url, "api_key": "k"}},
        webhooks=FAST,
    )


@pytest.fixture
async def gauth(gclient):
    return bearer(await new_api_key(gclient))


async def shop(client, auth, **guardrails) -> dict:
    agent = await new_agent(client, auth, model="oai/gpt-4o-mini", systemPrompt="Be kind.")
    await set_guardrails(client, auth, agent["id"], **guardrails)
    return agent


def said_to_model(fake, n: int = -1) -> list[str]:
    return [m["content"] for m in fake.requests[n]["json"]["messages"]]


async def test_the_model_reads_placeholders_and_storage_keeps_them(
    gclient, gauth, openai_fake, receiver
):
    agent = await shop(gclient, gauth, redact={"kinds": ALL_KINDS})
    hook = {"url": receiver.url("/ok"), "events": ["conversation.created", "message.created"]}
    await data_of(await gclient.post("/api/v1/webhooks", json=hook, headers=gauth), 201)
    openai_fake.script(
        oai.stream(oai.text_events([f"Noted, I will write to {MAIL}."])),
        oai.stream(oai.text_events(["Done."])),
    )
    first = await chat(gclient, {"agentId": agent["id"], "messages": user(SAID)}, gauth)
    assert first.text == f"Noted, I will write to {MAIL}."  # the visitor sees the answer
    conv_id = first.start["conversationId"]
    await chat(
        gclient,
        {"agentId": agent["id"], "conversationId": conv_id, "messages": user("Thanks")},
        gauth,
    )
    assert said_to_model(openai_fake, 0) == ["Be kind.", REDACTED]
    assert said_to_model(openai_fake, 1) == [
        "Be kind.", REDACTED, "Noted, I will write to [email].", "Thanks"
    ]  # fmt: skip
    conv = await get_conversation(gclient, gauth, conv_id)
    assert [m["content"] for m in conv["messages"]] == [
        REDACTED, "Noted, I will write to [email].", "Thanks", "Done."
    ]  # fmt: skip
    assert conv["title"] == REDACTED  # the title is the first message, as stored
    stored = await stored_bytes(gclient.app)
    assert CARD.encode() not in stored and MAIL.encode() not in stored and b"[card]" in stored
    export = await gclient.get(
        f"/api/v1/conversations/export?agentId={agent['id']}&format=jsonl", headers=gauth
    )
    raw = await export.read()
    assert CARD.encode() not in raw and MAIL.encode() not in raw and b"[card]" in raw
    for _ in range(100):
        if len(receiver.at("/ok")) >= 5:
            break
        await asyncio.sleep(0.05)
    sent = b"".join(h.body for h in receiver.at("/ok"))
    assert len(receiver.at("/ok")) == 5 and b"[card]" in sent
    assert CARD.encode() not in sent and MAIL.encode() not in sent and PHONE.encode() not in sent
    assert await hits(gclient, gauth, agent["id"]) == {
        "email": 2, "phone": 1, "card": 1, "iban": 0, "pattern": 0,
        "blocked": 0, "mustNotSay": 0, "tooLong": 0,
    }  # fmt: skip
    assert await notes_of(gclient, gauth, conv_id) == [
        "1 e-mail address, 1 phone number and 1 card number in the visitor's message: hidden"
        " from the model and storage.",
        "1 e-mail address in the agent's answer: hidden from storage.",
    ]


async def test_redacting_from_the_model_only_keeps_the_stored_words(gclient, gauth, openai_fake):
    agent = await shop(gclient, gauth, redact={"kinds": ["card"]}, redactFrom=["model"])
    openai_fake.script(*(oai.stream(oai.text_events(["Ok"])) for _ in range(2)))
    first = await chat(gclient, {"agentId": agent["id"], "messages": user(SAID)}, gauth)
    conv_id = first.start["conversationId"]
    body = {"agentId": agent["id"], "conversationId": conv_id, "messages": user("And?")}
    await chat(gclient, body, gauth)
    conv = await get_conversation(gclient, gauth, conv_id)
    assert conv["messages"][0]["content"] == SAID
    expected = SAID.replace(CARD, "[card]")
    assert said_to_model(openai_fake, 0)[1] == expected
    assert said_to_model(openai_fake, 1)[1] == expected  # the stored history, redacted again


async def test_redacting_from_storage_only_lets_the_model_read_the_message(
    gclient, gauth, openai_fake
):
    agent = await shop(gclient, gauth, redact={"kinds": ["card"]}, redactFrom=["storage"])
    openai_fake.script(oai.stream(oai.text_events(["Ok"])))
    first = await chat(gclient, {"agentId": agent["id"], "messages": user(SAID)}, gauth)
    assert said_to_model(openai_fake)[1] == SAID
    conv = await get_conversation(gclient, gauth, first.start["conversationId"])
    assert conv["messages"][0]["content"] == SAID.replace(CARD, "[card]")


async def test_a_blocked_topic_gets_its_reply_and_the_model_is_not_called(
    gclient, gauth, openai_fake
):
    topic = {"name": "legal", "words": ["lawsuit"], "reply": "Please write to legal@shop.test."}
    agent = await shop(gclient, gauth, blockedTopics=[topic], redact={"kinds": ["card"]})
    stream = await chat(
        gclient, {"agentId": agent["id"], "messages": user(f"A LAWSUIT over {CARD}!")}, gauth
    )
    assert openai_fake.requests == []
    assert stream.text == "Please write to legal@shop.test."
    assert stream.names[-1] == "message_stop" and stream.of("message_stop")[0]["sources"] == []
    conv_id = stream.start["conversationId"]
    conv = await get_conversation(gclient, gauth, conv_id)
    assert [m["content"] for m in conv["messages"]] == [
        "A LAWSUIT over [card]!", "Please write to legal@shop.test."
    ]  # fmt: skip
    assert conv["messages"][1]["unanswered"] is False
    assert (await hits(gclient, gauth, agent["id"]))["blocked"] == 1
    assert await notes_of(gclient, gauth, conv_id) == [
        "1 card number in the visitor's message: hidden from the model and storage. The"
        " visitor's message is about the blocked topic “legal” (the word “lawsuit”): the"
        " agent gave the topic's reply without asking the model."
    ]


async def test_must_not_say_replaces_the_answer_and_flags_the_conversation(
    gclient, gauth, openai_fake
):
    agent = await shop(gclient, gauth, mustNotSay=MUST)
    pieces = [
        "Good ",
        "news! ",
        *["You may return it within 30 days. "] * 6,
        "It is free",
        " of",
        " charge",
        " and more.",
    ]
    openai_fake.script(oai.stream(oai.text_events(pieces)))
    stream = await chat(gclient, {"agentId": agent["id"], "messages": user("Returns?")}, gauth)
    assert "free" not in stream.text and "Good news!" in stream.text  # shown before the hit
    assert stream.of("answer_replaced") == [
        {"type": "answer_replaced", "text": "A person will answer."}
    ]
    assert stream.names[-2:] == ["answer_replaced", "message_stop"]
    conv_id = stream.start["conversationId"]
    conv = await get_conversation(gclient, gauth, conv_id)
    assert conv["messages"][1]["content"] == "A person will answer."
    assert conv["flaggedAt"] is not None
    shown = orjson.dumps(conv["messages"]).decode()
    assert "free of charge" not in shown and "30 days" not in shown
    stored = await stored_bytes(gclient.app)
    assert b"It is free" not in stored and b"30 days" not in stored  # never written at all
    assert (await hits(gclient, gauth, agent["id"]))["mustNotSay"] == 1
    assert await notes_of(gclient, gauth, conv_id) == [
        "The agent's answer said the pattern “(?i)\\bfree of charge\\b”, which it must not say:"
        " the visitor got the fallback answer instead, and the conversation is flagged for"
        " review."
    ]
    listed = await gclient.get(
        f"/api/v1/conversations?agentId={agent['id']}&flagged=true", headers=gauth
    )
    assert [c["id"] for c in await data_of(listed)] == [conv_id]
    cleared = await gclient.delete(f"/api/v1/conversations/{conv_id}/flag", headers=gauth)
    assert await data_of(cleared) == {"id": conv_id, "flaggedAt": None}
    listed = await gclient.get(
        f"/api/v1/conversations?agentId={agent['id']}&flagged=true", headers=gauth
    )
    assert await data_of(listed) == []
    other = bearer(await new_api_key(gclient, "other@example.com"))
    resp = await gclient.delete(f"/api/v1/conversations/{conv_id}/flag", headers=other)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_a_forbidden_answer_before_a_tool_call_runs_no_tool(gclient, gauth, openai_fake):
    agent = await shop(gclient, gauth, mustNotSay=MUST)
    openai_fake.script(
        oai.stream(
            oai.tool_events([("call_1", "lookup", ['{"q": 1}'])], text="A guaranteed refund!")
        )
    )
    stream = await chat(gclient, {"agentId": agent["id"], "messages": user("Refund?")}, gauth)
    assert stream.text == "" and "tool_use_start" not in stream.names
    assert stream.of("answer_replaced")[0]["text"] == "A person will answer."
    assert len(openai_fake.requests) == 1
    conv = await get_conversation(gclient, gauth, stream.start["conversationId"])
    assert conv["messages"][1]["content"] == "A person will answer."
    assert conv["messages"][1]["toolCalls"] is None


async def test_a_message_over_the_limit_is_refused_in_words_and_counted(
    gclient, gauth, openai_fake
):
    agent = await shop(gclient, gauth, maxVisitorMessageChars=50)
    openai_fake.script(oai.stream(oai.text_events(["Hello"])))
    first = await chat(gclient, {"agentId": agent["id"], "messages": user("Hi")})
    conv_id = first.start["conversationId"]
    body = {
        "agentId": agent["id"],
        "conversationId": conv_id,
        "sessionId": None,
        "messages": user("x" * 1234),
    }
    resp = await gclient.post("/api/v1/chat", json=body, headers=gauth)
    await assert_error(
        resp,
        400,
        "VALIDATION_ERROR",
        "Your message is too long: 1,234 characters, and this chat takes at most 50. Please"
        " shorten it and send it again.",
    )
    conv = await get_conversation(gclient, gauth, conv_id)
    assert len(conv["messages"]) == 2  # nothing stored
    assert await notes_of(gclient, gauth, conv_id) == [
        "A visitor's message of 1,234 characters was refused: this agent takes at most 50."
    ]
    resp = await gclient.post(
        "/api/v1/chat", json={"agentId": agent["id"], "messages": user("y" * 51)}
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "too long")
    assert (await hits(gclient, gauth, agent["id"]))["tooLong"] == 2
    assert len(openai_fake.requests) == 1


async def test_hits_are_counted_per_kind_per_day(gclient, gauth, openai_fake):
    agent = await shop(
        gclient,
        gauth,
        redact={"kinds": ["iban"], "patterns": [{"name": "customer", "pattern": r"CU-\d+"}]},
    )
    openai_fake.script(*(oai.stream(oai.text_events(["Ok"])) for _ in range(2)))
    text = "CU-1 and CU-2 pay from DE89 3704 0044 0532 0130 00"
    for _ in range(2):
        await chat(gclient, {"agentId": agent["id"], "messages": user(text)}, gauth)
    resp = await gclient.get(f"/api/v1/agents/{agent['id']}/analytics", headers=gauth)
    figures = await data_of(resp)
    today = [d for d in figures["days"] if d["guardrailHits"]["iban"]]
    assert len(today) == 1 and today[0]["guardrailHits"]["pattern"] == 4
    assert figures["totals"]["guardrailHits"]["iban"] == 2


async def test_a_channel_sends_the_fallback_not_what_was_said(gclient, gauth, receiver):
    """Off the widget (an api channel), the reply sent is the stored one: the fallback."""
    agent = await new_agent(gclient, gauth, systemPrompt=PROMPT)  # the builtin model
    await set_guardrails(gclient, gauth, agent["id"], mustNotSay=MUST | {"words": ["nine"]})
    channel = await new_channel(gclient, gauth, agent["id"], receiver.url("/ok"))
    await send(gclient, channel, channel["secret"], message("u-1", "When do you open?", "m-1"))
    await receiver.wait_for(1, "/ok")
    assert receiver.at("/ok")[0].json["text"] == "A person will answer."
