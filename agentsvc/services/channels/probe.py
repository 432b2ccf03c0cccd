"""A channel's "test connection": one harmless call to its platform, answered as a sentence
for a person (telegram: `getMe` and `getWebhookInfo`, saying whether the webhook points at
the channel; whatsapp: the Graph API's node of the phone number, read with the access
token; slack: `auth.test` with the bot token; api: a signed `{"type": "test"}` POST to the
outbound URL, saying how it answered; email: signing in to the IMAP mailbox and opening its
folder, and whether this server can send the replies). Every call goes through the guarded outbound
client under a bounded timeout; a refusal or an unreachable platform is an answer
(`ok: false`), never an exception."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import orjson

from agentsvc.outbound import OutboundClient, OutboundError
from agentsvc.services.channels import slack, telegram, whatsapp
from agentsvc.services.channels.imap import Mailbox, MailboxError, mailbox_settings
from agentsvc.services.delivery.signing import signature_headers

MAX_SECONDS = 10.0  # a person waits for the answer


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What the test found: whether the channel works, in one sentence."""

    ok: bool
    message: str


@dataclass(frozen=True, slots=True)
class ProbeTarget:
    """The channel under test: its id, type, settings, opened credentials, whether it is
    enabled, and where its platform should send."""

    channel_id: str
    type: str
    config: dict[str, Any]
    secrets: dict[str, str]
    enabled: bool
    inbound_url: str


class _Unreachable(Exception):
    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def _why(exc: OutboundError, seconds: float) -> str:
    """Why a call did not get an answer, in words."""
    if exc.kind == "timeout":
        return f"it did not answer within {seconds:g} seconds"
    if exc.kind == "connect":
        return "no connection could be made"
    if exc.kind in ("refused", "invalid"):
        return f"the address is not allowed ({exc.message})"
    return "the request failed"


def _json(body: bytes) -> dict[str, Any]:
    try:
        found = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


class ChannelProbe:
    """Tests channels' connections through the guarded outbound client."""

    def __init__(
        self,
        outbound: OutboundClient,
        timeout_seconds: float,
        *,
        allow_private: bool = False,
        smtp_ready: bool = False,
    ):
        self._outbound = outbound
        self._seconds = min(timeout_seconds, MAX_SECONDS)
        self._allow_private = allow_private  # [outbound] allow_private (IMAP servers)
        self._smtp_ready = smtp_ready  # [smtp] host is set: e-mail replies can go out

    async def test(self, target: ProbeTarget) -> ProbeResult:
        """Test one channel; the answer says what works and what to do when it does not."""
        if target.type == "telegram":
            return await self._telegram(target)
        if target.type == "whatsapp":
            return await self._whatsapp(target)
        if target.type == "slack":
            return await self._slack(target)
        if target.type == "api":
            return await self._api(target)
        if target.type == "email":
            return await self._email(target)
        return ProbeResult(False, "This type of channel cannot be tested yet.")

    async def _email(self, target: ProbeTarget) -> ProbeResult:
        """Sign in to the mailbox and open its folder (nothing is read or changed)."""
        settings = mailbox_settings(target.config, target.secrets)
        try:
            async with Mailbox(settings, allow_private=self._allow_private, timeout=self._seconds):
                pass
        except MailboxError as exc:
            return ProbeResult(False, f"The mailbox could not be read: {exc}.")
        if not self._smtp_ready:
            return ProbeResult(
                False,
                f"The mailbox {settings.mailbox} on {settings.host} can be read, but replies"
                " cannot go out: this server has no SMTP server set ([smtp] host). Ask"
                " whoever runs it to set one.",
            )
        address = target.config.get("address")
        works = (
            f"Signed in to {settings.host} and opened {settings.mailbox}: messages to"
            f" {address} are read and answered from it."
        )
        return ProbeResult(True, works + _off(target))

    async def _post(self, url: str, method: str = "POST", **kwargs: Any):
        try:
            return await self._outbound.request(
                method, url, timeout=self._seconds, max_response_bytes=65536, **kwargs
            )
        except OutboundError as exc:
            raise _Unreachable(_why(exc, self._seconds)) from None

    async def _whatsapp(self, target: ProbeTarget) -> ProbeResult:
        token = target.secrets["accessToken"]
        bearer = {"Authorization": f"Bearer {token}"}
        try:
            resp = await self._post(whatsapp.phone_number_url(target.config), "GET", headers=bearer)
        except _Unreachable as exc:
            return ProbeResult(False, f"WhatsApp could not be reached: {exc.why}.")
        found = _json(resp.body)
        error = found.get("error") if isinstance(found.get("error"), dict) else {}
        if resp.status == 401 or error.get("code") == 190:
            return ProbeResult(
                False,
                "Meta does not accept this access token. Make a new one (a system user's"
                " permanent token) and paste it under Edit.",
            )
        if not resp.ok:
            said = str(error.get("message") or f"HTTP {resp.status}").replace(token, "")
            return ProbeResult(
                False, f"WhatsApp refused the test ({said}). Check the phone number ID under Edit."
            )
        number = found.get("display_phone_number") or target.config.get("phoneNumberId")
        works = f"WhatsApp accepts the access token for {number}: replies can go out."
        return ProbeResult(True, works + _off(target))

    async def _slack(self, target: ProbeTarget) -> ProbeResult:
        token = target.secrets["botToken"]
        url = slack.method_url(target.config.get("apiBaseUrl"), "auth.test")
        try:
            resp = await self._post(url, headers={"Authorization": f"Bearer {token}"})
        except _Unreachable as exc:
            return ProbeResult(False, f"Slack could not be reached: {exc.why}.")
        found = _json(resp.body)
        if not resp.ok or found.get("ok") is not True:
            said = str(found.get("error") or f"HTTP {resp.status}")
            return ProbeResult(
                False,
                f"Slack refused the bot token ({said}). Copy the Bot User OAuth Token again from"
                " your Slack app's OAuth & Permissions page and paste it under Edit.",
            )
        where = f" in {found['team']}" if isinstance(found.get("team"), str) else ""
        return ProbeResult(
            True, f"Slack accepts the bot token{where}: replies can go out." + _off(target)
        )

    async def _bot_api(self, target: ProbeTarget, method: str) -> tuple[int, dict[str, Any]]:
        token = target.secrets["botToken"]
        url = telegram.method_url(target.config.get("apiBaseUrl"), token, method)
        resp = await self._post(url, json={})
        return resp.status, _json(resp.body)

    async def _telegram(self, target: ProbeTarget) -> ProbeResult:
        try:
            status, me = await self._bot_api(target, "getMe")
            if status in (401, 404):
                return ProbeResult(
                    False,
                    "Telegram does not know this bot token. Copy the token again from"
                    " @BotFather and paste it under Edit.",
                )
            if me.get("ok") is not True or not isinstance(me.get("result"), dict):
                said = me.get("description") or f"HTTP {status}"
                return ProbeResult(False, f"Telegram refused the test: {said}.")
            bot = "@" + str(me["result"].get("username") or me["result"].get("first_name"))
            _, info = await self._bot_api(target, "getWebhookInfo")
        except _Unreachable as exc:
            why = telegram.scrubbed(exc.why, target.secrets["botToken"])
            return ProbeResult(False, f"Telegram could not be reached: {why}.")
        found = info.get("result")
        return _webhook_sentence(target, bot, found if isinstance(found, dict) else {})

    async def _api(self, target: ProbeTarget) -> ProbeResult:
        body = orjson.dumps({"type": "test", "channelId": target.channel_id})
        headers = {
            "Content-Type": "application/json",
            **signature_headers(target.secrets["secret"], "test_" + secrets.token_hex(8), body),
        }
        try:
            resp = await self._post(target.config["outboundUrl"], headers=headers, data=body)
        except _Unreachable as exc:
            return ProbeResult(False, f"Your outbound URL could not be reached: {exc.why}.")
        if resp.ok:
            return ProbeResult(
                True, f"Your outbound URL answered {resp.status}: the agent's replies will arrive."
            )
        return ProbeResult(
            False,
            f"Your outbound URL answered {resp.status}. It must answer with a status from 200"
            " to 299, or the agent's replies will not arrive.",
        )


def _off(target: ProbeTarget) -> str:
    """What to add when the channel itself is switched off."""
    return "" if target.enabled else " The channel is off: switch it on to answer."


def _webhook_sentence(target: ProbeTarget, bot: str, info: dict[str, Any]) -> ProbeResult:
    """What the bot's webhook says, as a sentence."""
    url = info.get("url") or ""
    if not target.enabled:
        return ProbeResult(
            True,
            f"Telegram knows your bot {bot}. The channel is turned off, so its messages do not"
            " come here; turn it on to answer them.",
        )
    if url != target.inbound_url:
        return ProbeResult(
            False,
            f"Telegram knows your bot {bot}, but sends its messages elsewhere. Turn the"
            " channel off and on again to point them here.",
        )
    problem = info.get("last_error_message")
    if problem and info.get("pending_update_count"):
        return ProbeResult(
            False,
            f"Telegram knows your bot {bot} but cannot deliver its messages here: {problem}.",
        )
    return ProbeResult(True, f"Connected: Telegram sends the messages of your bot {bot} here.")
