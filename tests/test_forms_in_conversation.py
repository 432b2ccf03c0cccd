"""A form submission is recorded in the conversation it came from."""

from __future__ import annotations

from tests.support.accounts import bearer, new_api_key
from tests.support.forms import (
    detail,
    make_form,
    submitted,
)


async def test_submission_is_recorded_in_its_conversation(make_client):
    from tests.support.chat import chat, new_agent, user
    from tests.support.fakes import openai_server as oai

    fake = await oai.FakeOpenAI().start()
    try:
        client = await make_client(
            providers={"oai": {"kind": "openai", "base_url": fake.base_url, "api_key": "k"}}
        )
        auth = bearer(await new_api_key(client))
        agent = await new_agent(client, auth, model="oai/gpt-4o-mini")
        tool = await make_form(
            client,
            auth,
            agent["id"],
            formExecutionMode="client",
            formClientHandler="crm",
            formWebhookUrl=None,
        )
        fake.script(oai.stream(oai.tool_events([("c1", "contact", ["{}"])])))
        # A widget visitor's conversation: its submit carries the visitor's session.
        start = {"agentId": agent["id"], "messages": user("call me"), "sessionId": "s_visitor"}
        stream = await chat(client, start)
        conv_id = stream.start["conversationId"]

        result = await submitted(
            client,
            tool["id"],
            {"email": "ada@example.com", "seats": 2},
            conversationId=conv_id,
            sessionId="s_visitor",
        )
        resp = await client.get(f"/api/v1/conversations/{conv_id}", headers=auth)
        messages = (await resp.json())["data"]["messages"]
        note = messages[-1]
        assert note["role"] == "user"
        assert '"contact"' in note["content"] and result["submissionId"] in note["content"]
        assert "email: ada@example.com" in note["content"] and "seats: 2" in note["content"]

        # The model's next turn sees it.
        fake.script(oai.stream(oai.text_events(["Thanks, Ada."])))
        body = {"agentId": agent["id"], "conversationId": conv_id, "messages": user("done?")}
        await chat(client, body, auth)
        sent = fake.requests[-1]["json"]["messages"]
        assert any("email: ada@example.com" in str(m.get("content")) for m in sent), sent

        # An id naming no conversation of this agent is kept as given and links nothing.
        other_agent = await new_agent(client, auth, name="Other", model="oai/gpt-4o-mini")
        fake.script(oai.stream(oai.text_events(["hi"])))
        other = await chat(client, {"agentId": other_agent["id"], "messages": user("hi")}, auth)
        other_conv = other.start["conversationId"]
        for given in (other_conv, "conv_nowhere"):
            stray = await submitted(
                client, tool["id"], {"email": "x@example.com"}, conversationId=given
            )
            assert (await detail(client, auth, stray["submissionId"]))["conversationId"] == given
        resp = await client.get(f"/api/v1/conversations/{other_conv}", headers=auth)
        assert all(
            "x@example.com" not in m["content"] for m in (await resp.json())["data"]["messages"]
        )
    finally:
        await fake.close()
