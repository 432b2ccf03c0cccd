"""Channel replies as a kind of the outbox (services/delivery/outbox.py).

The outbox worker claims due rows of every kind in one transaction, under the same leases,
retry schedule and wake-ups; this module knows what is particular to channels: where a
reply goes for its channel's type (the api channel: a POST of the stored body to its
`outboundUrl`, signed with its secret, Standard Webhooks headers with the delivery's id as
`webhook-id`, the same on every attempt; telegram: the stored `sendMessage` body to the
Bot API with the bot's token, or its several messages in order, the row keeping how many
went so a retry goes on from the first that did not; whatsapp: the stored message to the
Graph API with the access token, or, once the user's 24-hour window closed, the channel's
template, or nothing (the reply fails, saying why); slack: the stored `chat.postMessage`
body with the bot's token; email: the message built from the stored body, from the
channel's address, through the instance's SMTP server). A reply that will not go out
leaves a private note in its conversation, so the inbox shows members that the person did
not get it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import aiosmtplib
import orjson

from agentsvc.db import Database, Tx
from agentsvc.ids import iso, new_id
from agentsvc.mail import Mailer
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services.channels import email_send, slack, telegram, whatsapp
from agentsvc.services.channels.settings import OpenedCredentials
from agentsvc.services.delivery.outcome import Outcome
from agentsvc.services.delivery.post import Poster
from agentsvc.services.delivery.signing import signature_headers
from agentsvc.store import channels as store
from agentsvc.store import conversation_events as events_store
from agentsvc.store import notes as notes_store
from agentsvc.store.channels import ChannelDelivery, ReplyTarget
from agentsvc.store.notes import Note

# Who a note about a reply that was not sent is from, by the channel's type.
PLATFORM_NAMES = {
    "api": "API channel",
    "telegram": "Telegram",
    "whatsapp": "WhatsApp",
    "slack": "Slack",
    "email": "e-mail",
}


@dataclass(frozen=True, slots=True)
class ClaimedReply:
    """A leased reply and where it goes (None: its channel went meanwhile)."""

    delivery: ChannelDelivery
    target: ReplyTarget | None


class ChannelReplies:
    """The channel replies' kind of the outbox: load, send, and the row's status code."""

    outbox = store.OUTBOX
    noun = "channel reply"

    def __init__(
        self,
        db: Database,
        box: SecretBox,
        poster: Poster,
        window_seconds: float = whatsapp.WINDOW_SECONDS,
        mailer: Callable[[], Mailer | None] = lambda: None,
    ):
        self.db = db
        self.box = box
        self.credentials = OpenedCredentials(box)  # opened once per channel, not per reply
        self.poster = poster
        self.mailer = mailer  # the instance's SMTP (e-mail channels' replies)
        self.timeout_seconds = poster.timeout_seconds
        self.window_seconds = window_seconds  # WhatsApp's customer service window

    async def load(self, rows: list[ChannelDelivery]) -> list[ClaimedReply]:
        """The claimed rows with where they go."""
        found = await store.reply_targets(self.db.reader, [d.channel_id for d in rows])
        return [ClaimedReply(d, found.get(d.channel_id)) for d in rows]

    def row(self, item: ClaimedReply) -> ChannelDelivery:
        return item.delivery

    def label(self, item: ClaimedReply) -> str:
        return "channel"

    def columns(self, outcome: Outcome) -> dict[str, Any]:
        return {"last_status_code": outcome.status_code}

    async def recorded(
        self, tx: Tx, item: ClaimedReply, fields: dict[str, Any], outcome: Outcome, now: str
    ) -> None:
        """A reply that failed for good: a private note in its conversation (members see
        it in the inbox; the person on the platform never sees notes)."""
        if fields.get("status") != "failed" or item.target is None:
            return
        conversation_id = item.delivery.conversation_id
        owner = await store.conversation_owner(tx, conversation_id)
        if owner is None:
            return
        team_id, agent_id = owner
        platform = PLATFORM_NAMES.get(item.target.type, item.target.type)
        content = f"A reply was not sent on {platform}: {outcome.error or 'it was refused'}"
        note = Note(new_id("note"), conversation_id, team_id, None, platform, content, now)
        await notes_store.insert(tx, note)
        await events_store.insert_note_event(tx, team_id, agent_id, note)

    async def send(self, claimed: ClaimedReply) -> Outcome:
        """One attempt; failures are outcomes."""
        target = claimed.target
        if target is None:
            return Outcome(False, error="the channel no longer exists", stop=True)
        try:
            secrets = self.credentials.open(target.channel_id, target.sealed_secrets)
        except SecretBoxError:
            return Outcome(False, error="the channel's credentials cannot be opened")
        body = claimed.delivery.payload.encode("utf-8")
        if target.type == "email":
            return await self._email(claimed.delivery, target)
        if target.type == "whatsapp":
            return await self._whatsapp(claimed.delivery, target, secrets["accessToken"])
        if target.type == "slack":
            token = secrets["botToken"]
            url = slack.method_url(target.config.get("apiBaseUrl"), "chat.postMessage")
            headers = {
                "Content-Type": "application/json; charset=utf-8",
                "Authorization": f"Bearer {token}",
            }
            return slack.outcome_of(await self.poster.post(url, headers, body), token)
        if target.type == "telegram":
            return await self._telegram(claimed.delivery, target, secrets["botToken"])
        headers = {
            "Content-Type": "application/json",
            **signature_headers(secrets["secret"], claimed.delivery.id, body),
        }
        return await self.poster.post(target.config["outboundUrl"], headers, body)

    async def _telegram(
        self, delivery: ChannelDelivery, target: ReplyTarget, token: str
    ) -> Outcome:
        """A reply to Telegram: its message, or its messages in order from the first not
        yet sent (each one taken is counted on the row before the next goes, so a retry
        sends none twice)."""
        url = telegram.method_url(target.config.get("apiBaseUrl"), token, "sendMessage")
        headers = {"Content-Type": "application/json"}
        stored = orjson.loads(delivery.payload)
        if "parts" not in stored:
            body = delivery.payload.encode("utf-8")
            return telegram.outcome_of(await self.poster.post(url, headers, body), token)
        parts, sent = stored["parts"], int(stored.get("sent", 0))
        outcome = Outcome(True)
        for index in range(sent, len(parts)):
            body = orjson.dumps(parts[index])
            outcome = telegram.outcome_of(await self.poster.post(url, headers, body), token)
            if not outcome.success:
                return outcome
            if index + 1 < len(parts):
                progress = orjson.dumps({"parts": parts, "sent": index + 1}).decode()
                async with self.db.write() as tx:
                    await store.set_delivery_payload(tx, delivery.id, progress)
        return outcome

    async def _whatsapp(
        self, delivery: ChannelDelivery, target: ReplyTarget, token: str
    ) -> Outcome:
        """A reply to WhatsApp: as stored within the user's window, else the template, else
        nothing (a failure that says why, not retried)."""
        body = delivery.payload.encode("utf-8")
        wrote = await store.user_wrote_at(self.db.reader, delivery.conversation_id)
        opened = iso(datetime.now(UTC) - timedelta(seconds=self.window_seconds))
        if wrote is None or wrote < opened:
            to = orjson.loads(body)["to"]
            template = whatsapp.outside_window(to, target.config)
            if template is None:
                return Outcome(
                    False,
                    error="the user last wrote more than 24 hours ago (outside WhatsApp's"
                    " customer service window) and the channel has no templateName",
                    stop=True,
                )
            body = orjson.dumps(template)
        url = whatsapp.messages_url(target.config)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        return whatsapp.outcome_of(await self.poster.post(url, headers, body), token)

    async def _email(self, delivery: ChannelDelivery, target: ReplyTarget) -> Outcome:
        """A reply by e-mail through the instance's SMTP server: a 5xx refusal is final,
        anything else is tried again."""
        mailer = self.mailer()
        if mailer is None or not mailer.can_send:
            return Outcome(
                False, error="no SMTP server is set ([smtp] host) to send e-mail", stop=True
            )
        try:
            message = email_send.message(
                orjson.loads(delivery.payload),
                target.config["address"],
                target.config.get("fromName"),
            )
        except (ValueError, KeyError) as exc:
            return Outcome(False, error=f"the reply cannot be sent by e-mail: {exc}", stop=True)
        try:
            await asyncio.wait_for(mailer.send_message(message), self.timeout_seconds)
        except aiosmtplib.SMTPRecipientsRefused as exc:
            said = "; ".join(f"{r.code} {r.message}" for r in exc.recipients)[:300]
            return Outcome(False, error=f"the SMTP server refused the address: {said}", stop=True)
        except aiosmtplib.SMTPResponseException as exc:
            return Outcome(
                False,
                status_code=exc.code,
                error=f"the SMTP server refused it: {exc.code} {exc.message}"[:500],
                stop=500 <= exc.code < 600,
            )
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            return Outcome(False, error=f"the SMTP server could not be reached: {exc}"[:500])
        return Outcome(True)
