"""Forms on channels (issue 32): no widget shows a form there, so the agent asks for each
field in the conversation and calls the form as a function of its fields; the server checks
the values as a submission's and submits them as the submissions API does (the webhook, the
event webhooks, the note in the conversation), linked to the channel's conversation, and
the turn goes on to the reply. Refused values store nothing and come back to the model as
lines it can ask again from. Over the api channel, with a fake OpenAI-compatible model."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.support.accounts import bearer, create_user, key_for
from tests.support.channels import (
    channel_conversations,
    data_of,
    message,
    new_channel,
    send,
    turns_done,
)
from tests.support.chat import chat, new_agent, new_tool, user
from tests.support.fakes import openai_server as oai
from tests.support.forms import make_form

FAST = {"retry_schedule_seconds": [0, 0.2, 0.2], "timeout_seconds": 1}


@pytest.fixture
async def fake():
    server = await oai.FakeOpenAI().start()
    yield server
    await server.close()


async def start(make_client, fake, email: str = "owner@example.com"):
    client = await make_client(
        webhooks=FAST,
        providers={"oai": {"kind": "openai", "base_url": fake.base_url, "api_key": "k"}},
    )
    return client, await team_of(client, email)


async def team_of(client, email: str) -> dict:
    user_, team = await create_user(client, email, name="Olivia")
    return bearer(await key_for(client, team.id, user_.id))


async def agent_on_channel(client, auth, receiver, **form: Any) -> tuple[dict, dict, dict]:
    """An agent on the model, its form `contact` (tests/support/forms.py's fields) and its
    api channel replying to the receiver's /ok."""
    agent = await new_agent(client, auth, model="oai/gpt-4o-mini")
    fields = {"formWebhookUrl": receiver.url("/form"), **form}
    tool = await make_form(client, auth, agent["id"], **fields)
    channel = await new_channel(client, auth, agent["id"], receiver.url("/ok"))
    return agent, tool, channel


def fills(values: Any, reply: str, name: str = "contact", call_id: str = "c1") -> tuple:
    """What the model does next: calls the form with these values, then says `reply`."""
    arguments = values if isinstance(values, str) else orjson.dumps(values).decode()
    return (
        oai.stream(oai.tool_events([(call_id, name, [arguments])])),
        oai.stream(oai.text_events([reply])),
    )


def tool_output(fake, request: int = -1) -> str:
    """What the model read back from the form (the last tool message it was sent)."""
    sent = fake.requests[request]["json"]["messages"]
    return [m for m in sent if m["role"] == "tool"][-1]["content"]


async def submissions(client, auth, agent_id: str) -> list[dict]:
    resp = await client.get(f"/api/v1/form-submissions?agentId={agent_id}", headers=auth)
    assert resp.status == 200, await resp.text()
    return (await resp.json())["submissions"]


async def test_the_agent_fills_the_form_in_the_conversation(make_client, fake, receiver):
    client, auth = await start(make_client, fake)
    agent, tool, channel = await agent_on_channel(client, auth, receiver)
    events = {"url": receiver.url("/events"), "events": ["form.submitted"]}
    await data_of(await client.post("/api/v1/webhooks", json=events, headers=auth), 201)
    values = {"email": "ada@example.com", "name": "Ada", "seats": 2, "plan": "pro"}
    fake.script(*fills(values, "Thanks Ada, we will call you."))

    await send(client, channel, channel["secret"], message("u-1", "Please call me", "m-1"))
    await receiver.wait_for(1, "/ok")
    assert receiver.at("/ok")[0].json["text"] == "Thanks Ada, we will call you."

    # The model was offered the form's fields (no file field), the required one named.
    [offered] = fake.requests[0]["json"]["tools"]
    function = offered["function"]
    assert function["name"] == "contact"
    assert "ask the user for its fields" in function["description"]
    params = function["parameters"]
    assert params["required"] == ["email"]
    assert set(params["properties"]) == {
        "email", "name", "phone", "seats", "day", "at", "plan", "extras"
    }  # fmt: skip
    assert params["properties"]["plan"]["enum"] == ["basic", "pro"]
    assert params["properties"]["extras"]["items"]["enum"] == ["a", "b"]
    assert params["properties"]["name"]["maxLength"] == 20
    assert params["properties"]["seats"] == {
        "type": "number", "minimum": 1, "description": "Seats"
    }  # fmt: skip
    assert "YYYY-MM-DD" in params["properties"]["day"]["description"]
    assert "was received" in tool_output(fake)

    # Submitted as the submissions API submits: stored, linked to the channel's
    # conversation, delivered to the form's webhook, heard by the event webhooks.
    [conv] = await channel_conversations(client, auth, agent["id"])
    [sub] = await submissions(client, auth, agent["id"])
    assert sub["conversationId"] == conv["id"] and sub["toolId"] == tool["id"]
    assert sub["formData"] == values
    await receiver.wait_for(1, "/form")
    assert receiver.at("/form")[0].json["formData"] == values
    await receiver.wait_for(1, "/events")
    assert receiver.at("/events")[0].json["type"] == "form.submitted"
    resp = await client.get(f"/api/v1/conversations/{conv['id']}", headers=auth)
    messages = (await resp.json())["data"]["messages"]
    assert [m["role"] for m in messages] == ["user", "user", "assistant"]
    assert "email: ada@example.com" in messages[1]["content"]  # the note, as for the widget
    assert messages[2]["toolCalls"][0]["isError"] is False


async def test_refused_values_are_asked_again_and_nothing_is_stored(make_client, fake, receiver):
    client, auth = await start(make_client, fake)
    agent, _, channel = await agent_on_channel(client, auth, receiver)
    fake.script(*fills({"email": "not an address", "seats": 0}, "Which e-mail address?"))

    await send(client, channel, channel["secret"], message("u-1", "Call me", "m-1"))
    await receiver.wait_for(1, "/ok")
    assert receiver.at("/ok")[0].json["text"] == "Which e-mail address?"
    output = tool_output(fake)
    assert output.startswith("The form was not submitted and nothing was stored")
    assert "- email: must be an e-mail address" in output
    assert "- seats: must be at least 1" in output
    assert "Ask the user for them again" in output
    assert await submissions(client, auth, agent["id"]) == []

    # The user answers; the model fills it again, and this time it goes through.
    fake.script(*fills({"email": "ada@example.com", "seats": 1}, "Done."))
    await send(client, channel, channel["secret"], message("u-1", "ada@example.com", "m-2"))
    await receiver.wait_for(2, "/ok")
    [sub] = await submissions(client, auth, agent["id"])
    assert sub["formData"] == {"email": "ada@example.com", "seats": 1}
    assert receiver.at("/ok")[1].json["text"] == "Done."


async def test_abusive_values_store_nothing(make_client, fake, receiver):
    client, auth = await start(make_client, fake)
    agent, _, channel = await agent_on_channel(client, auth, receiver)
    cases = [
        ({"email": "ada@example.com", "name": "x" * 100_000}, "- name: must be at most"),
        (
            {"email": "ada@example.com", "toolId": "tool_x", "conversationId": "conv_x"},
            "- toolId: is not a field of this form",
        ),
        ({"email": "ada@example.com", "cv": "data:application/pdf;base64,QUJD"}, "- cv: a file"),
        ({"email": ["ada@example.com"]}, "- email: must be text"),
        ('["not", "an", "object"]', "must be a JSON object"),
    ]
    for number, (values, expected) in enumerate(cases, start=1):
        fake.script(*fills(values, f"Sorry ({number})."))
        body = message("u-1", f"Message {number}", f"m-{number}")
        await send(client, channel, channel["secret"], body)
        await receiver.wait_for(number, "/ok")
        assert expected in tool_output(fake), (values, tool_output(fake))
        assert receiver.at("/ok")[-1].json["text"] == f"Sorry ({number})."
    assert await submissions(client, auth, agent["id"]) == []
    assert receiver.at("/form") == []


async def test_a_form_of_another_team_cannot_be_filled(make_client, fake, receiver):
    client, victim = await start(make_client, fake)
    victim_agent, _, _ = await agent_on_channel(client, victim, receiver)
    attacker = await team_of(client, "mallory@example.com")
    agent = await new_agent(client, attacker, model="oai/gpt-4o-mini")
    await new_tool(client, attacker, agent["id"], "lookup")
    channel = await new_channel(client, attacker, agent["id"], receiver.url("/ok"))
    fake.script(*fills({"email": "ada@example.com"}, "No such form."))

    await send(client, channel, channel["secret"], message("u-1", "Fill contact", "m-1"))
    await receiver.wait_for(1, "/ok")
    offered = [t["function"]["name"] for t in fake.requests[0]["json"]["tools"]]
    assert offered == ["lookup"]
    assert tool_output(fake) == "Unknown tool 'contact'; available tools: lookup"
    assert receiver.at("/ok")[0].json["text"] == "No such form."
    assert await submissions(client, victim, victim_agent["id"]) == []
    assert await submissions(client, attacker, agent["id"]) == []


async def test_a_form_needing_a_file_cannot_be_completed_on_a_channel(make_client, fake, receiver):
    client, auth = await start(make_client, fake)
    fields = [
        {"name": "email", "label": "E-mail", "type": "email"},
        {"name": "cv", "label": "CV", "type": "file", "validation": {"required": True}},
    ]
    agent, _, channel = await agent_on_channel(
        client, auth, receiver, formSchema={"fields": fields}
    )
    fake.script(*fills({"email": "ada@example.com"}, "Please apply on the website."))

    await send(client, channel, channel["secret"], message("u-1", "I want to apply", "m-1"))
    await receiver.wait_for(1, "/ok")
    function = fake.requests[0]["json"]["tools"][0]["function"]
    assert 'needs a file ("CV")' in function["description"]
    assert function["parameters"] == {"type": "object", "properties": {}}
    assert "cannot be completed here" in tool_output(fake)
    assert "Nothing was submitted" in tool_output(fake)
    assert await submissions(client, auth, agent["id"]) == []


async def test_a_client_handler_does_not_run_on_a_channel_and_the_widget_is_unchanged(
    make_client, fake, receiver
):
    client, auth = await start(make_client, fake)
    agent, _, channel = await agent_on_channel(
        client, auth, receiver, formExecutionMode="client", formClientHandler="crm",
        formWebhookUrl=None,
    )  # fmt: skip
    fake.script(*fills({"email": "ada@example.com"}, "Received."))
    await send(client, channel, channel["secret"], message("u-1", "Call me", "m-1"))
    await receiver.wait_for(1, "/ok")
    [sub] = await submissions(client, auth, agent["id"])
    assert sub["status"] == "submitted" and sub["clientResult"] is None
    assert sub["executionMode"] == "client"

    # On the web, the widget still shows the form and the turn ends there.
    fake.script(oai.stream(oai.tool_events([("c2", "contact", ["{}"])])))
    stream = await chat(client, {"agentId": agent["id"], "messages": user("call me")}, auth)
    [result] = stream.of("tool_result")
    assert result["output"] == "The form was shown to the user."
    assert result["form"]["clientHandler"] == "crm" and result["form"]["executionMode"] == "client"
    assert stream.names[-1] == "message_stop"
    assert "parameters" in fake.requests[-1]["json"]["tools"][0]["function"]
    assert fake.requests[-1]["json"]["tools"][0]["function"]["parameters"] == {
        "type": "object", "properties": {}
    }  # fmt: skip
    await turns_done(client)
    assert len(await submissions(client, auth, agent["id"])) == 1
