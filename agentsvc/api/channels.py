"""Channel endpoints: an agent's channels (owners manage them, members read them); the
address each channel receives its platform's messages at is in api/channel_inbound.py."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api import app_keys
from agentsvc.api.audit import actor_of
from agentsvc.api.models import NON_BLANK, RequestModel, ResponseModel
from agentsvc.api.routing import Call, RouteTable, envelope_response, validate_model
from agentsvc.services.channels.kinds import AVAILABLE_TYPES
from agentsvc.services.channels.service import ChannelChange, ChannelsService, ChannelView
from agentsvc.services.tools.rules import MAX_URL_CHARS
from agentsvc.store.channels import ChannelStatus
from agentsvc.text_patterns import (
    ACCESS_TOKEN_PATTERN,
    APP_SECRET_PATTERN,
    EMAIL_ADDRESS_PATTERN,
    GRAPH_VERSION_PATTERN,
    HOST_NAME_PATTERN,
    IMAP_TEXT_PATTERN,
    PHONE_NUMBER_ID_PATTERN,
    SLACK_BOT_TOKEN_PATTERN,
    TELEGRAM_BOT_TOKEN_PATTERN,
    TEMPLATE_LANGUAGE_PATTERN,
    TEMPLATE_NAME_PATTERN,
    VERIFY_TOKEN_PATTERN,
)

routes = RouteTable("channels")

CHANNEL_PATH = "/channels/{id:ch_[A-Za-z0-9_-]+}"
ChannelType = Literal[AVAILABLE_TYPES]  # type: ignore[valid-type]


def channels_of(call: Call) -> ChannelsService:
    """The channels service (this module's and api/channel_inbound.py's one lookup)."""
    return call.app[app_keys.channels_key]


# ── the settings of each type ────────────────────────────────────────────────────────────


class ApiChannelConfig(RequestModel):
    """The `api` channel: replies are POSTed to `outboundUrl`, signed with its secret."""

    outbound_url: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_URL_CHARS,
            description="http(s) address that receives the agent's replies (checked like"
            " webhook URLs)",
        ),
    ]


BOT_TOKEN = TELEGRAM_BOT_TOKEN_PATTERN


class TelegramChannelConfig(RequestModel):
    """The `telegram` channel: a bot's token (from @BotFather) and, for tests and proxies,
    the Bot API's address."""

    bot_token: Annotated[
        str, Field(pattern=BOT_TOKEN, description="the bot's token, 123456:ABC-... (write-only)")
    ]
    api_base_url: (
        Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_URL_CHARS,
                description="the Bot API's address (default https://api.telegram.org)",
            ),
        ]
        | SkipJsonSchema[None]
    ) = None


class TelegramChannelPatch(TelegramChannelConfig):
    """New settings of a telegram channel: the token left out is kept."""

    bot_token: Annotated[str, Field(pattern=BOT_TOKEN)] | SkipJsonSchema[None] = None  # type: ignore[assignment]


def _url(description: str) -> Any:
    """An optional platform address (checked like webhook URLs)."""
    return (
        Annotated[str, Field(min_length=1, max_length=MAX_URL_CHARS, description=description)]
        | SkipJsonSchema[None]
    )


def _secret(pattern: str, description: str) -> Any:
    return Annotated[str, Field(pattern=pattern, description=description + " (write-only)")]


def _kept(pattern: str) -> Any:
    """A credential a change may leave out (it is kept)."""
    return Annotated[str, Field(pattern=pattern)] | SkipJsonSchema[None]


TOKEN = ACCESS_TOKEN_PATTERN
APP_SECRET = APP_SECRET_PATTERN
VERIFY_TOKEN = VERIFY_TOKEN_PATTERN
SLACK_TOKEN = SLACK_BOT_TOKEN_PATTERN


class WhatsAppChannelConfig(RequestModel):
    """The `whatsapp` channel (Cloud API): the business phone number's id, a system user's
    access token, the Meta app's secret (signatures) and the verify token you type in
    Meta's console; outside the 24-hour window only `templateName` may be sent."""

    phone_number_id: Annotated[
        str, Field(pattern=PHONE_NUMBER_ID_PATTERN, description="the phone number's id (digits)")
    ]
    access_token: _secret(TOKEN, "a token with whatsapp_business_messaging")  # type: ignore[valid-type]
    app_secret: _secret(APP_SECRET, "the Meta app's secret")  # type: ignore[valid-type]
    verify_token: _secret(VERIFY_TOKEN, "the token Meta's webhook check sends")  # type: ignore[valid-type]
    graph_base_url: _url("the Graph API's address (default https://graph.facebook.com)") = None  # type: ignore[valid-type]
    api_version: (
        Annotated[str, Field(pattern=GRAPH_VERSION_PATTERN, description="e.g. v21.0")]
        | SkipJsonSchema[None]
    ) = None
    template_name: (
        Annotated[
            str,
            Field(
                pattern=TEMPLATE_NAME_PATTERN,
                description="an approved template sent outside the 24-hour window",
            ),
        ]
        | SkipJsonSchema[None]
    ) = None
    template_language: (
        Annotated[
            str,
            Field(pattern=TEMPLATE_LANGUAGE_PATTERN, description="the template's language"),
        ]
        | SkipJsonSchema[None]
    ) = None


class WhatsAppChannelPatch(WhatsAppChannelConfig):
    """New settings of a whatsapp channel: credentials left out are kept."""

    access_token: _kept(TOKEN) = None  # type: ignore[valid-type]
    app_secret: _kept(APP_SECRET) = None  # type: ignore[valid-type]
    verify_token: _kept(VERIFY_TOKEN) = None  # type: ignore[valid-type]


class SlackChannelConfig(RequestModel):
    """The `slack` channel (Events API): the bot's token (xoxb-...) and the app's signing
    secret."""

    bot_token: _secret(SLACK_TOKEN, "the bot user's OAuth token, xoxb-...")  # type: ignore[valid-type]
    signing_secret: _secret(APP_SECRET, "the app's signing secret")  # type: ignore[valid-type]
    api_base_url: _url("the Web API's address (default https://slack.com/api)") = None  # type: ignore[valid-type]


class SlackChannelPatch(SlackChannelConfig):
    """New settings of a slack channel: credentials left out are kept."""

    bot_token: _kept(SLACK_TOKEN) = None  # type: ignore[valid-type]
    signing_secret: _kept(APP_SECRET) = None  # type: ignore[valid-type]


def _text(pattern: str, longest: int, description: str) -> Any:
    return Annotated[
        str, Field(min_length=1, max_length=longest, pattern=pattern, description=description)
    ]


class EmailChannelConfig(RequestModel):
    """The `email` channel: the address people write to, the IMAP mailbox its messages are
    read from, and how often; replies go out through this server's SMTP ([smtp])."""

    address: _text(EMAIL_ADDRESS_PATTERN, 254, "the address people write to; replies come from it")  # type: ignore[valid-type]
    imap_host: _text(HOST_NAME_PATTERN, 253, "the IMAP server's host name")  # type: ignore[valid-type]
    imap_port: (
        Annotated[int, Field(ge=1, le=65535, description="default 993 with TLS, 143 without")]
        | SkipJsonSchema[None]
    ) = None
    imap_user: _text(IMAP_TEXT_PATTERN, 320, "the mailbox's user name")  # type: ignore[valid-type]
    imap_password: _text(IMAP_TEXT_PATTERN, 500, "the mailbox's password (write-only)")  # type: ignore[valid-type]
    imap_tls: bool = Field(
        True, description="TLS from the start (IMAPS); false sends the password in clear"
    )
    mailbox: (
        _text(IMAP_TEXT_PATTERN, 200, "the folder read (default INBOX)") | SkipJsonSchema[None]
    ) = None  # type: ignore[valid-type]
    poll_seconds: (
        Annotated[
            int, Field(ge=1, le=86400, description="how often the mailbox is read (default 60)")
        ]
        | SkipJsonSchema[None]
    ) = None
    from_name: (
        _text(IMAP_TEXT_PATTERN, 100, "the name replies are sent under") | SkipJsonSchema[None]
    ) = None  # type: ignore[valid-type]


class EmailChannelPatch(EmailChannelConfig):
    """New settings of an email channel: the password left out is kept."""

    imap_password: _kept(IMAP_TEXT_PATTERN) = None  # type: ignore[valid-type]


# Each type's settings on creation, and on a change (credentials may be left out).
CONFIG_MODELS: dict[str, tuple[type[RequestModel], type[RequestModel]]] = {
    "api": (ApiChannelConfig, ApiChannelConfig),
    "telegram": (TelegramChannelConfig, TelegramChannelPatch),
    "whatsapp": (WhatsAppChannelConfig, WhatsAppChannelPatch),
    "slack": (SlackChannelConfig, SlackChannelPatch),
    "email": (EmailChannelConfig, EmailChannelPatch),
}


def _config(kind: str, data: Any, *, change: bool = False) -> dict[str, Any]:
    """A type's settings, checked by its model (field errors name `config.<field>`)."""
    model = validate_model(CONFIG_MODELS[kind][change], data, "config.")
    return model.model_dump(by_alias=True, exclude_none=True)


Name = Annotated[str, Field(min_length=1, max_length=100, pattern=NON_BLANK)]


CONFIG_DESCRIPTION = (
    "the type's settings: api {outboundUrl}; telegram {botToken, apiBaseUrl?}; whatsapp"
    " {phoneNumberId, accessToken, appSecret, verifyToken, graphBaseUrl?, apiVersion?,"
    " templateName?, templateLanguage?}; slack {botToken, signingSecret, apiBaseUrl?};"
    " email {address, imapHost, imapPort?, imapUser, imapPassword, imapTls?, mailbox?,"
    " pollSeconds?, fromName?}"
    " (credentials are write-only)"
)


class ChannelCreate(RequestModel):
    type: ChannelType = Field(description="the platform: " + ", ".join(AVAILABLE_TYPES))
    name: Name | SkipJsonSchema[None] = None
    config: dict[str, Any] = Field(description=CONFIG_DESCRIPTION)


class ChannelPatch(RequestModel):
    name: Name | SkipJsonSchema[None] = None
    enabled: bool | SkipJsonSchema[None] = None
    config: dict[str, Any] | SkipJsonSchema[None] = Field(
        None, description="the type's whole settings; credentials left out are kept"
    )


class ChannelError(ResponseModel):
    at: str = Field(description="when the send failed")
    message: str = Field(description="what went wrong, in words")


class ChannelStatusOut(ResponseModel):
    last_inbound_at: str | None = Field(description="when the channel last received a message")
    last_outbound_at: str | None = Field(description="when a reply last reached the platform")
    last_error: ChannelError | None = Field(description="the last failed send, or null")


class ChannelOut(ResponseModel):
    id: str
    agent_id: str
    type: ChannelType
    name: str
    enabled: bool
    inbound_url: str = Field(description="where the platform sends messages (public)")
    config: dict[str, Any] = Field(description="the settings; credentials masked, ••••1234")
    created_at: str
    updated_at: str
    status: ChannelStatusOut


class ChannelCreated(ChannelOut):
    secret: str | None = Field(
        description="api: the whsec_... signing secret, shown only in this answer (else null)"
    )


class ChannelTest(ResponseModel):
    ok: bool = Field(description="whether the platform answered as it should")
    message: str = Field(description="what the test found, in a sentence for a person")


class ChannelDeleted(ResponseModel):
    id: str
    deleted: bool


def status_json(status: ChannelStatus) -> dict[str, Any]:
    error = None
    if status.last_error_at is not None:
        error = {"at": status.last_error_at, "message": status.last_error}
    return {
        "lastInboundAt": status.last_inbound_at,
        "lastOutboundAt": status.last_outbound_at,
        "lastError": error,
    }


def channel_json(view: ChannelView) -> dict[str, Any]:
    c = view.channel
    return {
        "id": c.id,
        "agentId": c.agent_id,
        "type": c.type,
        "name": c.name,
        "enabled": c.enabled,
        "inboundUrl": view.inbound_url,
        "config": view.config,
        "createdAt": c.created_at,
        "updatedAt": c.updated_at,
        "status": status_json(view.status),
    }


@routes.post(
    "/agents/{id}/channels",
    body=ChannelCreate,
    response=ChannelCreated,
    envelope=True,
    status=201,
    owner_only=True,
    errors=(403, 404, 409),
)
async def post_channel(call: Call):
    """Give an agent a channel (owner only); an api channel's secret is shown only here."""
    body: ChannelCreate = call.body
    config = _config(body.type, body.config)
    view = await channels_of(call).create_channel(
        actor_of(call), call.params["id"], body.type, body.name, config
    )
    return envelope_response({**channel_json(view), "secret": view.secret}, status=201)


@routes.get("/agents/{id}/channels", response=list[ChannelOut], envelope=True, errors=(404,))
async def list_channels(call: Call):
    """The agent's channels, oldest first."""
    found = await channels_of(call).list_channels(call.team_id, call.params["id"])
    return envelope_response([channel_json(v) for v in found])


@routes.get(CHANNEL_PATH, response=ChannelOut, envelope=True, errors=(404,))
async def get_channel(call: Call):
    """One channel (its credentials masked)."""
    view = await channels_of(call).get_channel(call.team_id, call.params["id"])
    return envelope_response(channel_json(view))


@routes.patch(
    CHANNEL_PATH,
    body=ChannelPatch,
    response=ChannelOut,
    envelope=True,
    owner_only=True,
    errors=(403, 404),
)
async def patch_channel(call: Call):
    """Rename, enable or disable a channel, or replace its settings (owner only)."""
    body: ChannelPatch = call.body
    service = channels_of(call)
    config = None
    if body.config is not None:
        kind = await service.channel_type(call.team_id, call.params["id"])
        config = _config(kind, body.config, change=True)
    change = ChannelChange(name=body.name, enabled=body.enabled, config=config)
    view = await service.update_channel(actor_of(call), call.params["id"], change)
    return envelope_response(channel_json(view))


@routes.delete(
    CHANNEL_PATH, response=ChannelDeleted, envelope=True, owner_only=True, errors=(403, 404)
)
async def delete_channel(call: Call):
    """Delete a channel and its pending replies (owner only); its conversations stay."""
    await channels_of(call).delete_channel(actor_of(call), call.params["id"])
    return envelope_response({"id": call.params["id"], "deleted": True})


@routes.post(
    CHANNEL_PATH + "/test",
    response=ChannelTest,
    envelope=True,
    owner_only=True,
    errors=(403, 404),
)
async def post_channel_test(call: Call):
    """Test the channel's connection to its platform (owner only): always answered, with
    `ok` and a sentence saying what works or what to do."""
    found = await channels_of(call).test_channel(call.team_id, call.params["id"])
    return envelope_response({"ok": found.ok, "message": found.message})
