"""A channel conversation's replies written to the outbox: the agent's answer to a
message, and a member's reply from the inbox (handoff), each in the body its channel's type
sends (services/channels/outbox.py sends it), with the answer's quick replies where the
platform has buttons (Telegram, WhatsApp), as a line of options on Slack, and as
`quickReplies` on the api channel."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from agentsvc.db import Tx
from agentsvc.ids import new_id
from agentsvc.services.channels import email_send, slack, telegram, whatsapp
from agentsvc.services.channels.buttons import Button, options_line
from agentsvc.store import channels as store
from agentsvc.store.conversations import Conversation


@dataclass(frozen=True, slots=True)
class Reply:
    """One reply: its message in the conversation, its text, who wrote it, and the
    platform's message it answers with the address it goes to (None: the user's own)."""

    message_id: str
    text: str
    author: dict[str, Any]  # {"type": "ai"} or {"type": "human", "name"}
    in_reply_to: str | None = None
    address: str | None = None
    buttons: tuple[Button, ...] = ()  # the answer's quick replies


def platform_user(conv: Conversation) -> str:
    """The platform's id of the conversation's user (its reference is `type:id`)."""
    return (conv.user_ref or "").removeprefix(f"{conv.channel}:")


def payload(conv: Conversation, reply: Reply) -> dict[str, Any]:
    """What the reply's delivery sends, by the channel's type."""
    user = platform_user(conv)
    text = reply.text
    if not text.strip() and reply.buttons:  # a message needs a text: the choices are it
        text = options_line(reply.buttons)
    if conv.channel == "telegram":
        return telegram.messages(reply.address or user, text, reply.buttons)
    if conv.channel == "whatsapp":
        if reply.buttons:
            return whatsapp.interactive_message(user, text, reply.buttons)
        return whatsapp.text_message(user, text)
    if conv.channel == "slack":  # in the thread: the conversation's session id
        address = reply.address or conv.session_id or ""
        return slack.post_message(address, reply.text, reply.buttons)
    if conv.channel == "email":  # in the thread: the conversation's first message
        if reply.buttons and reply.text.strip():  # no buttons in mail: the choices, listed
            text = f"{reply.text}\n\n{options_line(reply.buttons)}"
        mail = email_send.reply_payload(
            user, text, reply.in_reply_to, reply.address, (conv.session_id, conv.title)
        )
        return {**mail, "automatic": reply.author.get("type") == "ai"}
    body: dict[str, Any] = {
        "type": "message",
        "conversationId": conv.id,
        "userId": user,
        "text": reply.text,
        "messageId": reply.message_id,
        "inReplyTo": reply.in_reply_to,
        "author": reply.author,
    }
    if reply.buttons:
        body["quickReplies"] = [{"label": b.label, "text": b.text} for b in reply.buttons]
    return body


class ReplyQueue:
    """Writes replies of channel conversations to the outbox and wakes its worker."""

    def __init__(self, wake: Callable[[datetime], None]):
        self._wake = wake

    async def queue(self, tx: Tx, conv: Conversation, reply: Reply, now: str) -> bool:
        """In the caller's transaction: the reply's outbox row when the conversation came
        through a channel (False: a widget conversation, nothing to send)."""
        if conv.channel_id is None or conv.channel == "web":
            return False
        body = orjson.dumps(payload(conv, reply)).decode()
        await store.insert_delivery(
            tx, new_id("channel_delivery"), conv.channel_id, conv.id, body, now
        )
        return True

    def sent(self) -> None:
        """After the commit: the worker sends what was queued now."""
        self._wake(datetime.now(UTC))
