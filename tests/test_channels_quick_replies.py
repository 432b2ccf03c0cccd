"""Quick replies on WhatsApp, Slack and the api channel (issue 32): up to 3 become reply
buttons, more a list, each checked by the fake Graph API as the Cloud API checks them; a
press (button or row) is read as the text the button sends; an interactive reply whose
title no client could send is refused and stores nothing; outside the 24-hour window the
template still goes alone. Slack has them as a line of options, the api channel as
`quickReplies`. And the buttons are derived from a tool result as the widget derives them."""

from __future__ import annotations

import orjson
import pytest

from agentsvc.services.channels.buttons import Button, from_tool_result
from agentsvc.services.channels.replies import Reply, payload
from agentsvc.services.channels.telegram import split_text
from agentsvc.store.conversations import Conversation
from tests.support.channel_platforms import (
    SLACK_TOKEN,
    USER,
    app_channel,
    deliver,
    notify,
    number,
    owner,
)
from tests.support.channel_platforms import WHATSAPP_TOKEN as TOKEN
from tests.support.channels import (
    PROMPT,
    channel_conversations,
    data_of,
    message,
    new_channel,
    send,
    turns_done,
)
from tests.support.chat import new_agent, new_tool
from tests.support.errors import assert_error
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.webhook_receiver import WebhookReceiver
from tests.support.fakes.whatsapp import FakeGraph

FAST = {"retry_schedule_seconds": [0, 0.2, 0.2, 0.2], "timeout_seconds": 1}
THREE = ["When do you open?", {"label": "Returns", "value": "Are returns free?"}, "Shipping?"]
MANY = [f"Option number {n} with a long label" for n in range(12)]


@pytest.fixture
async def graph():
    fake = await FakeGraph(tokens={TOKEN}).start()
    yield fake
    await fake.close()


async def whatsapp_setup(make_client, graph, output, channels: dict | None = None, **config):
    client = await make_client(webhooks=FAST, channels=channels or {})
    auth = await owner(client)
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    await new_tool(
        client,
        auth,
        agent["id"],
        "offer",
        mockResponse=orjson.dumps(output).decode(),
        displayConfig={"type": "buttons"},
    )
    channel = await number(client, auth, graph, agent["id"], **config)
    return client, auth, agent, channel


async def said_by_user(client, auth, agent_id: str, kind: str) -> list[str]:
    await turns_done(client)
    [conv] = await channel_conversations(client, auth, agent_id, kind)
    found = await client.get(f"/api/v1/conversations/{conv['id']}", headers=auth)
    return [m["content"] for m in (await data_of(found))["messages"] if m["role"] == "user"]


async def test_up_to_three_quick_replies_are_reply_buttons(make_client, graph):
    client, auth, agent, channel = await whatsapp_setup(make_client, graph, THREE)
    await notify(client, graph, channel, graph.text(USER, "/tool offer"))
    await graph.wait_for(1)
    [sent] = graph.sent()
    assert sent["type"] == "interactive" and sent["to"] == USER
    interactive = sent["interactive"]
    assert interactive["type"] == "button"
    assert interactive["body"]["text"].startswith("The tool offer returned:")
    assert interactive["action"]["buttons"] == [
        {"type": "reply", "reply": {"id": "v:When do you open?", "title": "When do you open?"}},
        {"type": "reply", "reply": {"id": "v:Are returns free?", "title": "Returns"}},
        {"type": "reply", "reply": {"id": "v:Shipping?", "title": "Shipping?"}},
    ]
    press = graph.press(USER, sent, 1)
    assert (await data_of(await notify(client, graph, channel, press), 202))["received"] is True
    await graph.wait_for(2)
    assert "free" in graph.sent()[1]["text"]["body"].lower()
    said = await said_by_user(client, auth, agent["id"], "whatsapp")
    assert said == ["/tool offer", "Are returns free?"]


async def test_more_than_three_are_a_list_of_at_most_ten_rows(make_client, graph):
    client, auth, agent, channel = await whatsapp_setup(make_client, graph, MANY)
    await notify(client, graph, channel, graph.text(USER, "/tool offer"))
    await graph.wait_for(1)
    [sent] = graph.sent()
    interactive = sent["interactive"]
    assert interactive["type"] == "list" and interactive["action"]["button"] == "Options"
    [section] = interactive["action"]["sections"]
    rows = section["rows"]
    assert len(rows) == 10
    assert rows[0] == {
        "id": "v:Option number 0 with a long label",
        "title": "Option number 0 with a…",  # 24 characters
        "description": "Option number 0 with a long label",
    }
    await notify(client, graph, channel, graph.press(USER, sent, 9))
    await graph.wait_for(2)
    said = await said_by_user(client, auth, agent["id"], "whatsapp")
    assert said == ["/tool offer", "Option number 9 with a long label"]


async def test_a_long_body_with_few_buttons_goes_as_a_list(make_client, graph):
    output = {"items": ["Yes", "No"], "note": "word " * 300}  # a body over 1,024 characters
    client, auth, agent, channel = await whatsapp_setup(make_client, graph, output)
    await notify(client, graph, channel, graph.text(USER, "/tool offer"))
    await graph.wait_for(1)
    [sent] = graph.sent()
    assert sent["interactive"]["type"] == "list"
    assert len(sent["interactive"]["body"]["text"]) > 1024
    rows = sent["interactive"]["action"]["sections"][0]["rows"]
    assert rows == [{"id": "v:Yes", "title": "Yes"}, {"id": "v:No", "title": "No"}]


async def test_an_interactive_reply_no_client_could_send_is_refused(make_client, graph):
    client, auth, agent, channel = await whatsapp_setup(make_client, graph, THREE)
    huge = graph.button_reply(USER, "x" * 10_000)
    resp = await notify(client, graph, channel, huge)
    await assert_error(resp, 400, "VALIDATION_ERROR", "title")
    listed = graph.button_reply(USER, "ok")
    listed["interactive"] = {"type": "list_reply", "list_reply": {"id": "i" * 257, "title": "ok"}}
    resp = await notify(client, graph, channel, listed)
    await assert_error(resp, 400, "VALIDATION_ERROR", "id")
    # A title with control characters is read as one line of text.
    odd = graph.button_reply(USER, "When\x07 do\u202e you\nopen?")
    await data_of(await notify(client, graph, channel, odd), 202)
    await graph.wait_for(1)
    assert await said_by_user(client, auth, agent["id"], "whatsapp") == ["When do you open?"]
    assert len(graph.calls) == 1


async def test_outside_the_window_the_template_goes_without_buttons(make_client, graph):
    window = {"whatsapp_window_seconds": 0.001}
    client, auth, agent, channel = await whatsapp_setup(
        make_client, graph, THREE, window, templateName="follow_up"
    )
    await notify(client, graph, channel, graph.text(USER, "/tool offer"))
    await graph.wait_for(1)
    [sent] = graph.sent()
    assert sent["type"] == "template" and "interactive" not in sent


async def test_slack_has_the_quick_replies_as_a_line_of_options(make_client):
    slack = await FakeSlack(tokens={SLACK_TOKEN}).start()
    try:
        client = await make_client(webhooks=FAST)
        auth = await owner(client)
        agent = await new_agent(client, auth, systemPrompt=PROMPT)
        await new_tool(
            client,
            auth,
            agent["id"],
            "offer",
            mockResponse='["Yes", "No <thanks>"]',
            displayConfig={"type": "buttons"},
        )
        channel = await data_of(await app_channel(client, auth, slack, agent["id"]), 201)
        await deliver(client, channel, slack.direct("U0ADA", "/tool offer"))
        await slack.wait_for(1)
        [posted] = slack.posted()
        assert posted["text"].endswith("\n\n• Yes  • No &lt;thanks&gt;")
    finally:
        await slack.close()


async def test_the_api_channel_has_them_as_quick_replies(make_client):
    receiver = await WebhookReceiver().start()
    try:
        client = await make_client(webhooks=FAST)
        auth = await owner(client)
        agent = await new_agent(client, auth, systemPrompt=PROMPT)
        await new_tool(
            client,
            auth,
            agent["id"],
            "offer",
            mockResponse=orjson.dumps(THREE).decode(),
            displayConfig={"type": "buttons"},
        )
        channel = await new_channel(client, auth, agent["id"], receiver.url("/ok"))
        await send(client, channel, channel["secret"], message("u-1", "/tool offer", "m-1"))
        await receiver.wait_for(1, "/ok")
        body = receiver.at("/ok")[0].json
        assert body["quickReplies"] == [
            {"label": "When do you open?", "text": "When do you open?"},
            {"label": "Returns", "text": "Are returns free?"},
            {"label": "Shipping?", "text": "Shipping?"},
        ]
        # A reply without them has no such field.
        await send(client, channel, channel["secret"], message("u-1", "Hi", "m-2"))
        await receiver.wait_for(2, "/ok")
        assert "quickReplies" not in receiver.at("/ok")[1].json
    finally:
        await receiver.close()


def result(output, display=None, **extra) -> tuple[Button, ...]:
    event = {"output": output, "isError": False, "displayConfig": display, **extra}
    return from_tool_result(event)


def test_buttons_are_derived_as_the_widget_derives_them():
    shows = {"type": "buttons"}
    assert result(["A", 2, True, None, 1.0], shows) == (
        Button("A", "A"),
        Button("2", "2"),
        Button("true", "true"),
        Button("1", "1"),
    )
    assert result([{"value": "v"}, {"label": "L"}, {"label": "L2", "value": "v2"}], shows) == (
        Button("v", "v"),
        Button("L", "L"),
        Button("L2", "v2"),
    )
    nested = {"type": "buttons", "fieldMappings": {"items": "data.choices"}}
    assert result({"data": {"choices": ["x", "y"]}}, nested) == (Button("x", "x"), Button("y", "y"))
    assert result({"items": ["z"]}, shows) == (Button("z", "z"),)
    assert result("alone", shows) == (Button("alone", "alone"),)
    # Other display types, errors and forms show none.
    assert result(["A"], {"type": "table"}) == ()
    assert result(["A"], None) == ()
    assert result(["A"], shows, isError=True) == ()
    # At most ten, the first of equal labels, blank ones dropped, labels on one line.
    assert len(result([f"b{n}" for n in range(50)], shows)) == 10
    assert result(["A", "A", " ", "\x00"], shows) == (Button("A", "A"),)
    assert result(["Tab\there\r\nand\u2028there\u202e"], shows) == (
        Button("Tab here and there", "Tab here and there"),
    )
    # Emoji joined with zero-width joiners keep them.
    assert result(["👩\u200d💻 Help"], shows)[0].label == "👩\u200d💻 Help"
    long = result(["x" * 500], shows)[0]
    assert len(long.label) == 100 and long.label.endswith("…") and len(long.text) == 500


def test_long_texts_are_split_at_the_best_boundary():
    assert split_text("short") == ["short"]
    words = split_text("abc " * 2000, limit=100)
    assert all(len(p) <= 100 and not p.endswith(" ") for p in words)
    assert " ".join(words) == ("abc " * 2000).strip()
    # One long word is cut where it must; astral characters count twice, as in UTF-16.
    assert split_text("x" * 250, limit=100) == ["x" * 100, "x" * 100, "x" * 50]
    assert split_text("😀" * 60, limit=100) == ["😀" * 50, "😀" * 10]


def test_a_reply_of_buttons_alone_has_them_as_its_text():
    buttons = (Button("Yes", "Yes"), Button("No", "No"))
    reply = Reply("msg_1", " ", {"type": "ai"}, None, None, buttons)

    def conversation(kind: str, user: str) -> Conversation:
        now = "2026-11-26T00:00:00Z"
        fields = ("conv_1", "agt_1", "team_1", "t", None, user, None, None, None, now, now)
        return Conversation(*fields, channel=kind, channel_id="ch_1")

    telegram = payload(conversation("telegram", "telegram:42"), reply)
    assert telegram["text"] == "• Yes  • No" and "reply_markup" in telegram
    whatsapp = payload(conversation("whatsapp", f"whatsapp:{USER}"), reply)
    assert whatsapp["interactive"]["body"]["text"] == "• Yes  • No"
    slack = payload(conversation("slack", "slack:U1"), reply)
    assert slack["text"] == "• Yes  • No"
