"""Channels as one object: an agent's channels (created, listed, changed, deleted; their
credentials sealed and shown masked; a Telegram bot's webhook set, a Slack bot's token
checked, when its channel is created or enabled) and the messages they receive (`ChannelInbox`)."""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from agentsvc.db import ConstraintViolation, Database, Tx
from agentsvc.errors import Conflict, DomainError, NotFound, Unauthorized, ValidationFailed
from agentsvc.ids import new_id, now_iso
from agentsvc.outbound import private_host
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services import audit, changes
from agentsvc.services.agents import registry as agents_service
from agentsvc.services.agents.registry import AgentCache
from agentsvc.services.audit import Actor
from agentsvc.services.channels import settings as channel_settings
from agentsvc.services.channels import slack, telegram, whatsapp
from agentsvc.services.channels.cache import ChannelCache
from agentsvc.services.channels.inbound import ChannelInbox, Inbound
from agentsvc.services.channels.kinds import AVAILABLE_TYPES
from agentsvc.services.channels.probe import ChannelProbe, ProbeResult, ProbeTarget
from agentsvc.services.channels.slack import SlackApi
from agentsvc.services.channels.telegram import TelegramApi
from agentsvc.services.delivery.signing import verify
from agentsvc.services.tools.rules import check_target_url
from agentsvc.store import channels as store
from agentsvc.store.channels import Channel, ChannelStatus

log = logging.getLogger(__name__)

# Where a channel receives (under [server] public_url).
INBOUND_PATH = "/api/v1/channels/{id}/inbound"


@dataclass(frozen=True, slots=True)
class ChannelDeps:
    """What channels are kept with: the database, the secret box, the agents' cache."""

    db: Database
    box: SecretBox
    agents: AgentCache


@dataclass(frozen=True, slots=True)
class PlatformApis:
    """The platforms' APIs a channel calls while it is set up."""

    telegram: TelegramApi
    slack: SlackApi


# The setting of each type that is its platform's address (checked like webhook URLs).
BASE_URL_FIELDS = {"telegram": "apiBaseUrl", "whatsapp": "graphBaseUrl", "slack": "apiBaseUrl"}


@dataclass(frozen=True, slots=True)
class ChannelsConfig:
    """The settings channels are created and answered under."""

    public_url: str  # [server] public_url: inbound URLs are under it
    allow_private: bool  # [outbound] allow_private: replies may go to private addresses
    max_per_agent: int  # [channels] max_per_agent
    # [ratelimit]: messages a channel receives, and one platform user sends, per minute
    messages_per_minute: int
    user_messages_per_minute: int


@dataclass(frozen=True, slots=True)
class ChannelView:
    """A channel as answers show it: its settings with the credentials masked."""

    channel: Channel
    config: dict[str, Any]
    inbound_url: str
    secret: str | None = None  # the signing secret, in the creation's answer only
    status: ChannelStatus = ChannelStatus()  # last message in and out, last failed send


@dataclass(frozen=True, slots=True)
class ChannelChange:
    """What a PATCH changes (None: unchanged); `config` is validated for the type."""

    name: str | None = None
    enabled: bool | None = None
    config: dict[str, Any] | None = None


async def _check_bot_free(tx: Any, channel: Channel) -> None:
    """Conflict when the channel's Telegram bot is already another enabled channel's: a
    bot sends its messages to one address only, so a second channel would silently take
    them from the first (of any team: whoever has the token controls the bot)."""
    bot = channel.config.get("botId")
    if channel.type != "telegram" or not channel.enabled or not bot:
        return
    for other in await store.enabled_of_type(tx, "telegram"):
        if other.id != channel.id and other.config.get("botId") == bot:
            raise Conflict(
                "This Telegram bot is already connected to another channel, and a bot sends"
                " its messages to one place only: switch that channel off or delete it"
                " first, or make a new bot with @BotFather"
            )


class ChannelsService:
    """A team's channels and what they receive; handlers call its methods."""

    def __init__(
        self,
        deps: ChannelDeps,
        inbox: ChannelInbox,
        apis: PlatformApis,
        config: ChannelsConfig,
        probe: ChannelProbe,
    ):
        self._db = deps.db
        self._box = deps.box
        self._agents = deps.agents
        self._inbox = inbox
        self._telegram = apis.telegram
        self._slack = apis.slack
        self._config = config
        self._probe = probe
        self._answers: set[asyncio.Task] = set()  # answerCallbackQuery calls under way
        # What every inbound message reads: its channel and the channel's credentials.
        self.cache = ChannelCache()  # kept in step by changes.follow (runtime.py)
        self._opened = channel_settings.OpenedCredentials(deps.box)

    @property
    def limits(self) -> tuple[int, int]:
        """Messages per minute a channel receives, and one platform user sends to it."""
        return self._config.messages_per_minute, self._config.user_messages_per_minute

    def inbound_url(self, channel_id: str) -> str:
        """Where the channel's platform sends its messages."""
        return self._config.public_url.rstrip("/") + INBOUND_PATH.format(id=channel_id)

    def view(
        self, channel: Channel, secret: str | None = None, status: ChannelStatus | None = None
    ) -> ChannelView:
        """The channel as answers show it (credentials masked)."""
        shown = channel_settings.masked(
            self._box, channel.id, channel.config, channel.sealed_secrets
        )
        url = self.inbound_url(channel.id)
        return ChannelView(channel, shown, url, secret, status or ChannelStatus())

    async def _views(self, channels: list[Channel]) -> list[ChannelView]:
        """The channels as answers show them, with their status (one query)."""
        found = await store.statuses(self._db.reader, [c.id for c in channels])
        return [self.view(c, status=found.get(c.id)) for c in channels]

    def _check_config(self, kind: str, config: dict[str, Any]) -> None:
        allow_private = self._config.allow_private
        if kind == "api":
            check_target_url(
                "config.outboundUrl", config.get("outboundUrl"), allow_private=allow_private
            )
        if kind == "email":
            where = private_host(str(config.get("imapHost") or ""))
            if where is not None and not allow_private:
                raise ValidationFailed(
                    f"config.imapHost: {where} is not a public address (this server only"
                    " reads mailboxes on the internet unless [outbound] allow_private is set)"
                )
        field = BASE_URL_FIELDS.get(kind)
        if field is not None and config.get(field) is not None:
            check_target_url(f"config.{field}", config[field], allow_private=allow_private)

    async def _connect(self, channel: Channel) -> Channel:
        """Point the platform at the channel (Telegram: setWebhook; Slack: auth.test, whose
        bot user id is kept as `botUserId`; e-mail: the mailbox is signed in to and SMTP is
        set); ValidationFailed saying what the platform answered. WhatsApp's webhook is set
        in Meta's console (it checks it with a GET)."""
        if channel.type not in ("telegram", "slack", "email"):
            return channel
        secrets = self._opened.open(channel.id, channel.sealed_secrets)
        if channel.type == "email":  # the mailbox can be read and replies can go out
            target = ProbeTarget(channel.id, "email", channel.config, secrets, True, "")
            found = await self._probe.test(target)
            if not found.ok:
                raise ValidationFailed(f"config: {found.message}")
            return channel
        if channel.type == "slack":
            base = channel.config.get("apiBaseUrl")
            bot = await self._slack.bot_user(base, secrets["botToken"])
            return replace(channel, config={**channel.config, "botUserId": bot})
        # The bot's id (its token's first part, public: Telegram shows it) names the bot.
        channel = replace(
            channel, config={**channel.config, "botId": secrets["botToken"].partition(":")[0]}
        )
        await _check_bot_free(self._db.reader, channel)  # before its webhook is moved
        await self._telegram.set_webhook(
            channel.config.get("apiBaseUrl"),
            secrets["botToken"],
            self.inbound_url(channel.id),
            secrets["webhookSecret"],
        )
        return channel

    async def _disconnect(self, channel: Channel) -> None:
        """Stop the platform sending (Telegram: deleteWebhook); a failure is logged only:
        a disabled or deleted channel refuses what still arrives."""
        if channel.type != "telegram":
            return
        try:
            secrets = self._opened.open(channel.id, channel.sealed_secrets)
            await self._telegram.delete_webhook(
                channel.config.get("apiBaseUrl"), secrets["botToken"]
            )
        except (DomainError, SecretBoxError) as exc:
            log.warning("channel %s: the webhook could not be removed: %s", channel.id, exc)

    async def create_channel(
        self, actor: Actor, agent_id: str, kind: str, name: str | None, config: dict[str, Any]
    ) -> ChannelView:
        """Give an agent a channel; a generated signing secret is in this answer only."""
        if kind not in AVAILABLE_TYPES:
            raise ValidationFailed(f"type: must be one of {', '.join(AVAILABLE_TYPES)}")
        agent = await agents_service.get_agent(self._db, self._agents, actor.team_id, agent_id)
        self._check_config(kind, config)
        shown, secrets = channel_settings.split(kind, config)
        made = channel_settings.generated(kind)
        now = now_iso()
        channel_id = new_id("channel")
        channel = Channel(
            id=channel_id,
            team_id=actor.team_id,
            agent_id=agent.id,
            type=kind,
            name=name or kind,
            enabled=True,
            config=shown,
            sealed_secrets=channel_settings.seal(self._box, channel_id, {**secrets, **made}),
            created_by=actor.user_id,
            created_at=now,
            updated_at=now,
        )
        await self._check_room(self._db.reader, agent.id)
        channel = await self._connect(channel)  # a token the platform refuses stores nothing
        async with self._db.write() as tx:
            await self._check_room(tx, agent.id)
            await _check_bot_free(tx, channel)
            await store.insert(tx, channel)
            await self._audit(tx, actor, "channel.created", channel)
        return self.view(channel, made.get("secret"))

    async def _check_room(self, tx: Any, agent_id: str) -> None:
        if await store.count_for_agent(tx, agent_id) >= self._config.max_per_agent:
            raise Conflict(
                f"The agent has {self._config.max_per_agent} channels, the most allowed"
                " ([channels] max_per_agent): delete one first"
            )

    async def _audit(self, tx: Tx, actor: Actor, action: str, channel: Channel) -> None:
        await audit.record_in(
            tx,
            actor,
            action,
            target_type="channel",
            target_id=channel.id,
            label=channel.name,
            details={"type": channel.type, "agentId": channel.agent_id},
        )

    async def list_channels(self, team_id: str, agent_id: str) -> list[ChannelView]:
        """The agent's channels, oldest first (NotFound for another team's agent)."""
        await agents_service.get_agent(self._db, self._agents, team_id, agent_id)
        return await self._views(await store.list_for_agent(self._db.reader, agent_id))

    async def _get(self, tx: Any, team_id: str, channel_id: str) -> Channel:
        channel = await store.get(tx, team_id, channel_id)
        if channel is None:
            raise NotFound("Channel not found")
        return channel

    async def get_channel(self, team_id: str, channel_id: str) -> ChannelView:
        """The team's channel, or NotFound (another team's too)."""
        return (await self._views([await self._get(self._db.reader, team_id, channel_id)]))[0]

    async def test_channel(self, team_id: str, channel_id: str) -> ProbeResult:
        """Test the connection to the channel's platform, answered as a sentence."""
        channel = await self._get(self._db.reader, team_id, channel_id)
        try:
            secrets = self._opened.open(channel.id, channel.sealed_secrets)
        except SecretBoxError:
            return ProbeResult(
                False,
                "The channel's credentials cannot be read (the secret key changed): enter them"
                " again under Edit.",
            )
        target = ProbeTarget(
            channel.id,
            channel.type,
            channel.config,
            secrets,
            channel.enabled,
            self.inbound_url(channel.id),
        )
        return await self._probe.test(target)

    async def channel_type(self, team_id: str, channel_id: str) -> str:
        """The type of the team's channel (its settings are checked against it)."""
        return (await self._get(self._db.reader, team_id, channel_id)).type

    async def update_channel(
        self, actor: Actor, channel_id: str, change: ChannelChange
    ) -> ChannelView:
        """Rename, enable or disable a channel, or replace its settings (credentials left
        out of new settings are kept); enabling it, or new settings while it is enabled,
        point the platform at it again, disabling it stops the platform sending."""
        channel = await self._get(self._db.reader, actor.team_id, channel_id)
        updated = replace(channel, updated_at=now_iso())
        if change.name is not None:
            updated = replace(updated, name=change.name)
        if change.enabled is not None:
            updated = replace(updated, enabled=change.enabled)
        if change.config is not None:
            updated = self._with_config(updated, change.config)
        reconnect = updated.enabled and (not channel.enabled or change.config is not None)
        if reconnect:
            updated = await self._connect(updated)  # outside the write: it waits for the platform
        async with self._db.write() as tx:
            await self._get(tx, actor.team_id, channel_id)  # not deleted meanwhile
            await _check_bot_free(tx, updated)
            await store.update(tx, updated)
            await self._audit(tx, actor, "channel.updated", updated)
        await self._db.announce(changes.channel(channel_id))  # after the commit: see cache.py
        if channel.enabled and not updated.enabled:
            await self._disconnect(updated)
        return (await self._views([updated]))[0]

    def _with_config(self, channel: Channel, config: dict[str, Any]) -> Channel:
        self._check_config(channel.type, config)
        shown, secrets = channel_settings.split(channel.type, config)
        if not secrets:
            return replace(channel, config=shown)
        kept = self._opened.open(channel.id, channel.sealed_secrets)
        sealed = channel_settings.seal(self._box, channel.id, {**kept, **secrets})
        return replace(channel, config=shown, sealed_secrets=sealed)

    async def delete_channel(self, actor: Actor, channel_id: str) -> None:
        """Delete a channel and its pending replies; its conversations stay."""
        async with self._db.write() as tx:
            channel = await self._get(tx, actor.team_id, channel_id)
            await store.delete(tx, actor.team_id, channel_id)
            await self._audit(tx, actor, "channel.deleted", channel)
        await self._db.announce(changes.channel(channel_id))
        if channel.enabled:
            await self._disconnect(channel)

    # ── receiving ─────────────────────────────────────────────────────────────────────
    async def receiving_channel(self, channel_id: str) -> Channel:
        """The enabled channel a platform sends to, or NotFound (unknown or disabled)."""
        channel = self.cache.get(channel_id)
        if channel is None:
            generation = self.cache.generation
            channel = await store.get_any(self._db.reader, channel_id)
            if channel is not None:
                self.cache.put(channel, generation)
        if channel is None or not channel.enabled:
            raise NotFound("Channel not found")
        return channel

    def check_signed(self, channel: Channel, headers: Mapping[str, str], body: bytes) -> None:
        """Unauthorized unless the request carries the channel's proof: Telegram's secret
        token header, WhatsApp's and Slack's signatures, the api channel's Standard
        Webhooks signature."""
        secrets = self._opened.open(channel.id, channel.sealed_secrets)
        if channel.type == "telegram":
            sent = headers.get(telegram.SECRET_HEADER) or ""
            if not hmac.compare_digest(sent.encode(), secrets["webhookSecret"].encode()):
                raise Unauthorized(f"Invalid secret token: {telegram.SECRET_HEADER} does not match")
            return
        if channel.type == "whatsapp":
            refused = whatsapp.signature_refused(secrets["appSecret"], headers, body)
        elif channel.type == "slack":
            refused = slack.signature_refused(secrets["signingSecret"], headers, body, time.time())
        else:
            refused = verify(secrets["secret"], headers, body, time.time())
        if refused is not None:
            raise Unauthorized(f"Invalid signature: {refused}")

    def verify_challenge(self, channel: Channel, mode: str, token: str) -> None:
        """Meta's check of a WhatsApp webhook: Unauthorized unless the verify token is the
        channel's (NotFound: not a whatsapp channel)."""
        if channel.type != "whatsapp":
            raise NotFound("Channel not found: only whatsapp channels answer this check")
        if mode != "subscribe":
            raise ValidationFailed("hub.mode: must be subscribe")
        secrets = self._opened.open(channel.id, channel.sealed_secrets)
        if not hmac.compare_digest(token.encode(), secrets["verifyToken"].encode()):
            raise Unauthorized("Invalid verify token: hub.verify_token is not the channel's")

    def answer_press(self, channel: Channel, query_id: str, notice: str | None) -> None:
        """Answer a Telegram button press in the background (its client shows a spinner
        until then; a failure is only logged: the press itself was taken)."""
        task = asyncio.create_task(self._answer_press(channel, query_id, notice))
        self._answers.add(task)
        task.add_done_callback(self._answers.discard)

    async def _answer_press(self, channel: Channel, query_id: str, notice: str | None) -> None:
        try:
            secrets = self._opened.open(channel.id, channel.sealed_secrets)
            base = channel.config.get("apiBaseUrl")
            await self._telegram.answer_callback_query(base, secrets["botToken"], query_id, notice)
        except (DomainError, SecretBoxError) as exc:
            log.info("channel %s: a button press was not answered: %s", channel.id, exc)

    async def receive(self, channel: Channel, message: Inbound) -> bool:
        """Take a checked message: False when it was already received (a retry: no second
        turn); else its turn runs in the background and the reply goes out. NotFound when
        the channel went meanwhile (deleted in another process an instant before: its
        announcement had not arrived)."""
        try:
            return await self._inbox.receive(channel, message)
        except ConstraintViolation:
            self.cache.forget(channel.id)
            raise NotFound("Channel not found") from None

    async def resume(self) -> int:
        """At start-up: answer what was received but not answered before a stop."""
        return await self._inbox.resume()

    async def idle(self) -> None:
        """Wait until every turn under way (and every press being answered) has ended."""
        await self._inbox.idle()
        while self._answers:
            await asyncio.wait(set(self._answers))

    async def close(self) -> None:
        """Let the turns under way finish (briefly), then stop them."""
        for task in set(self._answers):
            task.cancel()
        await self._inbox.close()
