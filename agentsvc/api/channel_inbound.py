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
from agentsvc.services.channels.inbound import Inbound
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


class TelegramMessage(_Telegram):
    message_id: int
    sender: TelegramUser | None = Field(None, alias="from")
    chat: TelegramChat
    text: str | None = None


class TelegramCallbackQuery(_Telegram):
    id: str
    sender: TelegramUser = Field(alias="from")
    message: TelegramMessage | None = None
    data: str | None = None


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


def _from_telegram(data: Any) -> Inbound | None:
    """The message of an update (None: nothing to answer); its id is the update's."""
    update = validate_model(TelegramUpdate, data)
    assert isinstance(update, TelegramUpdate)
    message_id = str(update.update_id)
    msg, press = update.message, update.callback_query
    if msg is not None and msg.sender is not None and msg.text and msg.text.strip():
        if msg.sender.is_bot:
            return None
        return Inbound(str(msg.sender.id), msg.text[:10_000], message_id, str(msg.chat.id))
    if press is not None and press.data and press.data.strip() and not press.sender.is_bot:
        chat = press.message.chat.id if press.message is not None else press.sender.id
        return Inbound(str(press.sender.id), press.data, message_id, str(chat))
    return None


def _read(channel: Channel, data: Any) -> list[Inbound]:
    """The checked messages of a body, by the channel's type."""
    if channel.type == "telegram":
        found = _from_telegram(data)
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
    messages = _read(channel, data)
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
