"""Where each channel receives its platform's messages (public: the platform's signature
or secret token is the credential), checked in this order: an unknown or disabled channel
404, a body over 1 MB 413, a wrong or missing signature 401 (before the JSON is read), a
malformed message 400, a flood per channel and per platform user 429. WhatsApp's webhook
check (a GET with the verify token) and Slack's `url_verification` are answered here too."""

from __future__ import annotations

from typing import Annotated, Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from agentsvc.api.bodies import read_body
from agentsvc.api.channel_platforms import from_slack, from_whatsapp, slack_challenge
from agentsvc.api.channels import CHANNEL_PATH, channels_of
from agentsvc.api.limits import take_token
from agentsvc.api.models import NON_BLANK, RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response, parse_json, validate_model
from agentsvc.services.channels import telegram
from agentsvc.services.channels.inbound import Inbound
from agentsvc.services.channels.service import ChannelsService
from agentsvc.store.channels import Channel

routes = RouteTable("channels")

INBOUND_MAX_MB = 1.0  # a platform message over 1 MB is refused (413)


class InboundMessage(RequestModel):
    """What the api channel receives: who wrote (your id for the user), the text, and your
    id of the message (the same id twice makes one turn)."""

    user_id: Annotated[str, Field(min_length=1, max_length=200, pattern=NON_BLANK)]
    text: Annotated[str, Field(min_length=1, max_length=10_000, pattern=NON_BLANK)]
    message_id: Annotated[str, Field(min_length=1, max_length=200, pattern=NON_BLANK)]


class _Telegram(BaseModel):
    """Telegram sends many more fields than a channel reads: they are ignored."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class TelegramUser(_Telegram):
    id: int
    is_bot: bool = False


class TelegramChat(_Telegram):
    id: int


class TelegramButton(_Telegram):
    text: str = ""
    callback_data: str | None = None


class TelegramMarkup(_Telegram):
    inline_keyboard: list[list[TelegramButton]] = Field(default_factory=list, max_length=100)


class TelegramMessage(_Telegram):
    message_id: int
    sender: TelegramUser | None = Field(None, alias="from")
    chat: TelegramChat
    text: str | None = None
    reply_markup: TelegramMarkup | None = None


class TelegramCallbackQuery(_Telegram):
    """A button press: `data` is the button's callback_data (Telegram's are 1-64 bytes);
    `message` the message it is under, without its keyboard once it is too old."""

    id: str = Field(min_length=1, max_length=200)
    sender: TelegramUser = Field(alias="from")
    message: TelegramMessage | None = None
    data: str | None = Field(None, max_length=64)


class TelegramUpdate(_Telegram):
    """An Update of the Bot API: a text message or a button press is answered."""

    update_id: int
    message: TelegramMessage | None = None
    callback_query: TelegramCallbackQuery | None = None


class InboundReceived(ResponseModel):
    received: bool = Field(
        description="false: nothing to answer (a Telegram update that is"
        " neither a text message nor a button press, or a bot's)"
    )
    duplicate: bool = Field(
        description="true when this message (every one of a WhatsApp notification's) was"
        " received before"
    )


# Shown on the person's screen when a press cannot be read as a message.
STALE_BUTTON = "This button no longer works: please type your answer."


def _from_press(press: TelegramCallbackQuery) -> Inbound | None:
    """A button press read as the text the button sends (None: a bot's, or a
    callback_data this service never sent); its id is the query's, the same on a retry."""
    if press.sender.is_bot or not press.data:
        return None
    markup = press.message.reply_markup if press.message is not None else None
    keyboard = markup.inline_keyboard if markup is not None else []
    rows = [[(b.text, b.callback_data) for b in row] for row in keyboard]
    text = telegram.pressed_text(press.data, rows)
    if text is None:
        return None
    chat = press.message.chat.id if press.message is not None else press.sender.id
    return Inbound(str(press.sender.id), text[:10_000], f"cb:{press.id}", str(chat))


def _from_telegram(data: Any) -> tuple[Inbound | None, TelegramCallbackQuery | None]:
    """The message of an update (None: nothing to answer; a text's id is the update's),
    and the button press it is, if it is one."""
    update = validate_model(TelegramUpdate, data)
    assert isinstance(update, TelegramUpdate)
    msg, press = update.message, update.callback_query
    if msg is not None and msg.sender is not None and msg.text and msg.text.strip():
        if msg.sender.is_bot:
            return None, None
        text, chat = msg.text[:10_000], str(msg.chat.id)
        return Inbound(str(msg.sender.id), text, str(update.update_id), chat), None
    if press is not None:
        return _from_press(press), press
    return None, None


def _read(channel: Channel, data: Any, service: ChannelsService) -> list[Inbound]:
    """The checked messages of a body, by the channel's type (a Telegram button press is
    answered, best effort, so the person's client stops waiting)."""
    if channel.type == "telegram":
        found, press = _from_telegram(data)
        if press is not None:
            service.answer_press(channel, press.id, None if found else STALE_BUTTON)
        return [] if found is None else [found]
    if channel.type == "whatsapp":
        return from_whatsapp(data, str(channel.config.get("phoneNumberId")))
    if channel.type == "slack":
        return from_slack(data, channel.config.get("botUserId"))
    body = validate_model(InboundMessage, data)
    assert isinstance(body, InboundMessage)
    return [Inbound(body.user_id, body.text, body.message_id)]


@routes.post(
    CHANNEL_PATH + "/inbound",
    auth="public",
    response=InboundReceived,
    envelope=True,
    status=202,
    max_body_mb=INBOUND_MAX_MB,
    errors=(401, 404, 413, 429),
    extra={
        "body_schema": InboundMessage,
        "description": "The api channel's body; a telegram channel receives the Bot API's"
        " Update objects, a whatsapp channel the Cloud API's notifications, a slack channel"
        " the Events API's requests (a url_verification is answered with its challenge, as"
        " text/plain). See docs/integrators/channels.md.",
    },
)
async def post_channel_inbound(call: Call):
    """Receive a message of the channel's platform (signed); the reply follows on the
    channel."""
    service = channels_of(call)
    channel = await service.receiving_channel(call.params["id"])
    raw = bytes(await read_body(call.request, INBOUND_MAX_MB))
    service.check_signed(channel, call.request.headers, raw)
    data = parse_json(raw)
    challenge = slack_challenge(data) if channel.type == "slack" else None
    if challenge is not None:
        return web.Response(text=challenge, content_type="text/plain")
    messages = _read(channel, data, service)
    if not messages:
        return envelope_response({"received": False, "duplicate": False}, status=202)
    per_channel, per_user = service.limits
    fresh = 0
    for message in messages:
        refusal = "Too many messages on this channel; try again later"
        await take_token(call.request, f"ch:{channel.id}", per_channel, refusal)
        refusal = "Too many messages from this user on this channel; try again later"
        await take_token(call.request, f"ch:{channel.id}:u:{message.user_id}", per_user, refusal)
        fresh += await service.receive(channel, message)
    return envelope_response({"received": True, "duplicate": fresh == 0}, status=202)


class WebhookCheck(BaseModel):
    """Meta's check of a webhook's address (hub.mode, hub.verify_token, hub.challenge)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    mode: str = Field(alias="hub.mode", min_length=1, max_length=50)
    verify_token: str = Field(alias="hub.verify_token", max_length=500)
    challenge: str = Field(alias="hub.challenge", min_length=1, max_length=500)


@routes.get(
    CHANNEL_PATH + "/inbound",
    auth="public",
    query=WebhookCheck,
    media_type="text/plain",
    errors=(400, 401, 404),
)
async def get_channel_inbound(call: Call):
    """Answer Meta's check of a whatsapp channel's webhook: its challenge, when the verify
    token is the channel's."""
    service = channels_of(call)
    channel = await service.receiving_channel(call.params["id"])
    check: WebhookCheck = call.query
    service.verify_challenge(channel, check.mode, check.verify_token)
    return web.Response(text=check.challenge, content_type="text/plain")
