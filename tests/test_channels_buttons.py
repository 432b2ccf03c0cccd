"""Quick replies and long replies on Telegram (issue 32), against the fake Bot API: a tool
whose displayConfig shows buttons gives the reply an inline keyboard with the widget's
labels; a press is read as the text the button sends (carried in its callback_data, or
read back from the keyboard Telegram sends with the press), once however often Telegram
retries, and answered with answerCallbackQuery; presses of buttons this service never sent
make no turn. A reply over 4096 characters goes as several messages in order, cut at
paragraphs, once each even when Telegram refuses one in the middle, the keyboard under the
last."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from agentsvc.api import app_keys
from agentsvc.store import channels as channel_store
from tests.support.channel_platforms import TELEGRAM_TOKEN as TOKEN
from tests.support.channel_platforms import bot, owner, post_update
from tests.support.channels import PROMPT, channel_conversations, data_of, turns_done
from tests.support.chat import new_agent, new_tool
from tests.support.errors import assert_error
from tests.support.fakes.telegram import FakeTelegram

FAST = {"retry_schedule_seconds": [0, 0.2, 0.2, 0.2], "timeout_seconds": 1}
LONG_VALUE = "Please send me the full list of every shop that is open on Sundays near me"


@pytest.fixture
async def telegram():
    fake = await FakeTelegram(tokens={TOKEN}).start()
    yield fake
    await fake.close()


async def setup(make_client, telegram, mock_response: str, display: dict | None):
    client = await make_client(webhooks=FAST)
    auth = await owner(client)
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    await new_tool(
        client, auth, agent["id"], "offer", mockResponse=mock_response, displayConfig=display
    )
    channel = await bot(client, auth, telegram, agent["id"])
    return client, auth, agent, channel


CHOICES = [
    "When do you open?",
    {"label": "Returns", "value": "Are returns free?"},
    {"label": "All Sunday shops", "value": LONG_VALUE},
    {"label": "Bad\x00 label\n\u202ewith\tcontrols", "value": "Tell me about shipping"},
]


async def test_a_buttons_tool_gives_the_reply_an_inline_keyboard(make_client, telegram):
    client, auth, agent, channel = await setup(
        make_client, telegram, orjson.dumps(CHOICES).decode(), {"type": "buttons"}
    )
    resp = await post_update(client, telegram, channel, telegram.text_update(42, "/tool offer"))
    assert (await data_of(resp, 202))["received"] is True
    await telegram.wait_for("sendMessage", 1)
    [reply] = telegram.sent(TOKEN)
    assert reply["text"].startswith("The tool offer returned:")
    assert reply["reply_markup"] == {
        "inline_keyboard": [
            [{"text": "When do you open?", "callback_data": "v:When do you open?"}],
            [{"text": "Returns", "callback_data": "v:Are returns free?"}],
            # Its text is over 64 bytes: the button's place goes instead.
            [{"text": "All Sunday shops", "callback_data": "k:2"}],
            # Control and bidi characters are spaces; the label is one line.
            [{"text": "Bad label with controls", "callback_data": "v:Tell me about shipping"}],
        ]
    }

    # A press sends the button's value, as the widget does, and is answered.
    [message] = telegram.messages
    press = telegram.press(message, 1)
    assert await data_of(await post_update(client, telegram, channel, press), 202) == {
        "received": True,
        "duplicate": False,
    }
    await telegram.wait_for("sendMessage", 2)
    assert "free" in telegram.sent(TOKEN)[1]["text"].lower()
    query = press["callback_query"]["id"]
    await turns_done(client)
    assert telegram.answered() == [{"callback_query_id": query}]
    # Telegram retrying the same press makes no second turn.
    again = await post_update(client, telegram, channel, press)
    assert (await data_of(again, 202))["duplicate"] is True

    # A button whose text did not fit is read back as the label pressed.
    await post_update(client, telegram, channel, telegram.press(message, 2))
    await telegram.wait_for("sendMessage", 3)
    await turns_done(client)
    [conv] = await channel_conversations(client, auth, agent["id"], "telegram")
    found = await client.get(f"/api/v1/conversations/{conv['id']}", headers=auth)
    said = [m["content"] for m in (await data_of(found))["messages"] if m["role"] == "user"]
    assert said == ["/tool offer", "Are returns free?", "All Sunday shops"]


async def test_presses_of_buttons_never_sent_make_no_turn(make_client, telegram):
    client, auth, agent, channel = await setup(
        make_client, telegram, orjson.dumps(CHOICES).decode(), {"type": "buttons"}
    )
    await post_update(client, telegram, channel, telegram.text_update(42, "/tool offer"))
    await telegram.wait_for("sendMessage", 1)
    [message] = telegram.messages
    presses = [
        telegram.button_update(42, "delete_everything"),  # another program's data
        telegram.button_update(42, "k:7", message),  # a place with no button
        telegram.press(message, 2, old=True),  # too old: Telegram no longer shows the keyboard
        telegram.button_update(42, "v:   "),
    ]
    for press in presses:
        resp = await post_update(client, telegram, channel, press)
        assert await data_of(resp, 202) == {"received": False, "duplicate": False}
    await turns_done(client)
    # Each press is answered, so the person's spinner stops and they are told.
    notices = [a.get("text") for a in telegram.answered()]
    assert len(notices) == 4 and all("no longer works" in n for n in notices)
    assert len(telegram.sent(TOKEN)) == 1
    [conv] = await channel_conversations(client, auth, agent["id"], "telegram")
    assert conv["messageCount"] == 2

    # callback_data longer than Telegram allows is not Telegram's: refused, nothing kept.
    forged = telegram.button_update(42, "v:" + "x" * 63)
    resp = await post_update(client, telegram, channel, forged)
    await assert_error(resp, 400, "VALIDATION_ERROR", "callback_query.data")
    forged = telegram.button_update(42, "v:yes")
    forged["callback_query"]["id"] = "q" * 201
    resp = await post_update(client, telegram, channel, forged)
    await assert_error(resp, 400, "VALIDATION_ERROR", "callback_query.id")
    await turns_done(client)
    [conv] = await channel_conversations(client, auth, agent["id"], "telegram")
    assert conv["messageCount"] == 2


async def test_a_failed_answer_to_a_press_still_answers_the_message(make_client, telegram):
    client, auth, agent, channel = await setup(
        make_client, telegram, '["Yes", "No"]', {"type": "buttons"}
    )
    await post_update(client, telegram, channel, telegram.text_update(42, "/tool offer"))
    await telegram.wait_for("sendMessage", 1)
    press = telegram.press(telegram.messages[0], 0)
    telegram._queries.clear()  # Telegram forgot the query: answerCallbackQuery is refused
    await data_of(await post_update(client, telegram, channel, press), 202)
    await telegram.wait_for("sendMessage", 2)
    await turns_done(client)
    assert len(telegram.answered()) == 1


def paragraphs(count: int, size: int) -> str:
    """`count` paragraphs of about `size` characters, each naming its number."""
    words = " ".join(f"w{n}" for n in range(size // 4))
    return "\n\n".join(f"Paragraph {i}. {words}"[:size] for i in range(count))


async def test_a_long_reply_goes_as_several_messages_in_order(make_client, telegram):
    text = paragraphs(5, 2000)  # about 10,000 characters
    client, auth, agent, channel = await setup(make_client, telegram, text, None)
    telegram.too_many_at = {2}  # the second part is refused once (429, retry after 1 s)
    telegram.retry_after = 0
    await post_update(client, telegram, channel, telegram.text_update(42, "/tool offer"))
    await telegram.wait_for("sendMessage", 3, timeout=15)
    parts = [p["text"] for p in telegram.sent(TOKEN)]
    assert len(parts) == 3 and all(len(p) <= 4096 for p in parts)
    # Cut at paragraphs, in order, none sent twice, nothing lost.
    assert parts[0].startswith("The tool offer returned: Paragraph 0.")
    assert parts[1].startswith("Paragraph 2.") and parts[2].startswith("Paragraph 4.")
    assert "\n\n".join(parts) == f"The tool offer returned: {text}"
    db = client.app[app_keys.db_key]
    for _ in range(200):
        [row] = await channel_store.deliveries_of(db.reader, channel["id"])
        if row.status == "success":
            break
        await asyncio.sleep(0.02)
    assert row.status == "success" and row.attempts == 2
    assert orjson.loads(row.payload)["sent"] == 2


async def test_the_keyboard_goes_under_the_last_part(make_client, telegram):
    words = " ".join(f"word{n}" for n in range(1200))  # one paragraph of ~9,000 characters
    output = {"items": ["Yes", "No"], "note": words}
    display = {"type": "buttons", "fieldMappings": {"items": "items"}}
    client, auth, agent, channel = await setup(
        make_client, telegram, orjson.dumps(output).decode(), display
    )
    await post_update(client, telegram, channel, telegram.text_update(42, "/tool offer"))
    await telegram.wait_for("sendMessage", 3)
    sent = telegram.sent(TOKEN)
    assert len(sent) == 3 and all(len(p["text"]) <= 4096 for p in sent)
    assert ["reply_markup" in p for p in sent] == [False, False, True]
    # Cut between words, never inside one.
    assert all(p["text"].split()[-1].startswith("word") for p in sent[:2])
    assert sent[2]["reply_markup"]["inline_keyboard"][1] == [
        {"text": "No", "callback_data": "v:No"}
    ]
