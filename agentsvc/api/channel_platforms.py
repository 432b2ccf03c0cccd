"""What WhatsApp's and Slack's webhooks POST, read into the channel's messages (the
Telegram and api channels' bodies are read in api/channel_inbound.py). Both platforms send
many more fields than a channel reads: they are ignored."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentsvc.api.routing import validate_model
from agentsvc.services.channels.buttons import carried_text, one_line
from agentsvc.services.channels.inbound import Inbound

TEXT_LIMIT = 10_000


class _Platform(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


# ── WhatsApp Cloud API: entry[].changes[].value.messages[] ───────────────────────────────


class WaText(_Platform):
    body: str = ""


class WaButtonReply(_Platform):
    """A pressed reply button or list row: the id and title sent with it (Meta's are at
    most 256 and 24 characters)."""

    id: str = Field("", max_length=256)
    title: str = Field("", max_length=200)


class WaInteractive(_Platform):
    type: str = ""
    button_reply: WaButtonReply | None = None
    list_reply: WaButtonReply | None = None


class WaButton(_Platform):
    payload: str | None = None
    text: str = ""


class WaMessage(_Platform):
    sender: str = Field(alias="from", min_length=1, max_length=64)
    id: str = Field(min_length=1, max_length=200)
    type: str
    text: WaText | None = None
    interactive: WaInteractive | None = None
    button: WaButton | None = None


class WaMetadata(_Platform):
    phone_number_id: str = ""


class WaValue(_Platform):
    metadata: WaMetadata = WaMetadata()
    messages: list[WaMessage] = Field(default_factory=list, max_length=1000)


class WaChange(_Platform):
    field: str = ""
    value: WaValue = WaValue()


class WaEntry(_Platform):
    changes: list[WaChange] = Field(default_factory=list, max_length=1000)


class WaNotification(_Platform):
    """A webhook notification of the `whatsapp_business_account` object."""

    object: str
    entry: list[WaEntry] = Field(max_length=1000)


def _wa_text(msg: WaMessage) -> str:
    """The text of a message a channel answers: a text, a pressed button's or list row's
    text (carried in its id when it fit, else its title), a template's quick reply
    button's text ("" for anything else: images, reactions...)."""
    if msg.type == "text" and msg.text is not None:
        return msg.text.body
    pressed = msg.interactive
    reply = None
    if msg.type == "interactive" and pressed is not None:
        reply = pressed.button_reply or pressed.list_reply
    if reply is not None:
        return carried_text(reply.id) or one_line(reply.title) or reply.id
    if msg.type == "button" and msg.button is not None:
        return msg.button.text or msg.button.payload or ""
    return ""


def from_whatsapp(data: Any, phone_number_id: str) -> list[Inbound]:
    """The messages to this channel's phone number (statuses and other numbers' messages,
    which share the app's webhook, are not answered here)."""
    note = validate_model(WaNotification, data)
    assert isinstance(note, WaNotification)
    found: list[Inbound] = []
    for entry in note.entry:
        for change in entry.changes:
            if change.field != "messages":
                continue
            if change.value.metadata.phone_number_id != phone_number_id:
                continue
            for msg in change.value.messages:
                text = _wa_text(msg)
                if text.strip():
                    found.append(Inbound(msg.sender, text[:TEXT_LIMIT], msg.id))
    return found


# ── Slack Events API ─────────────────────────────────────────────────────────────────────


class SlackEvent(_Platform):
    type: str = ""
    subtype: str | None = None
    user: str | None = None
    bot_id: str | None = None
    text: str | None = None
    ts: str | None = None
    thread_ts: str | None = None
    channel: str | None = None
    channel_type: str | None = None


class SlackCallback(_Platform):
    """An `event_callback` (a `url_verification` is answered before it is read)."""

    type: str
    event_id: str | None = Field(None, max_length=200)
    event: SlackEvent | None = None


MENTION = re.compile(r"<@[A-Z0-9]+>\s*")
# Subtypes of a person's message (a file with a comment, a thread reply also sent to the
# channel); every other subtype is an edit, a deletion, a join, a bot's message...
PERSONS = (None, "file_share", "thread_broadcast")
TS = re.compile(r"^[0-9]{1,20}\.[0-9]{1,10}$")
CHANNEL = re.compile(r"^[A-Z0-9]{1,30}$")


def _unescaped(text: str) -> str:
    """A message's text as the person typed it: Slack escapes &, < and >."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def from_slack(data: Any, bot_user_id: str | None) -> list[Inbound]:
    """The message of an event a channel answers: a mention of the bot, or a direct
    message; never a bot's (its own included), an edit or any other subtype. Its id is the
    event's (what Slack resends); its address the thread, `channel:thread_ts`."""
    callback = validate_model(SlackCallback, data)
    assert isinstance(callback, SlackCallback)
    event = callback.event
    if callback.type != "event_callback" or event is None or not callback.event_id:
        return []
    wanted = event.type == "app_mention" or (event.type == "message" and event.channel_type == "im")
    if not wanted or event.subtype not in PERSONS or event.bot_id is not None:
        return []
    if not event.user or event.user == bot_user_id or not event.text:
        return []
    thread = event.thread_ts or event.ts or ""
    if not TS.match(thread) or not CHANNEL.match(event.channel or ""):
        return []
    text = _unescaped(MENTION.sub("", event.text)).strip()
    if not text:
        return []
    address = f"{event.channel}:{thread}"
    return [Inbound(event.user[:64], text[:TEXT_LIMIT], callback.event_id, address)]


def slack_challenge(data: Any) -> str | None:
    """The challenge of a `url_verification` request (None: another request)."""
    if isinstance(data, dict) and data.get("type") == "url_verification":
        challenge = data.get("challenge")
        if isinstance(challenge, str) and 0 < len(challenge) <= 500:
            return challenge
    return None
