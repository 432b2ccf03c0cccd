"""Telling people about a handoff: the members who opted in by e-mail, the agent's team
chat by a signed webhook, and a visitor who left their address by e-mail.

Everything here runs in the background after the change is committed: a slow mail server
or team chat never delays the visitor or the member.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import orjson

from agentsvc.db import Database
from agentsvc.ids import new_id
from agentsvc.mail import Mailer, UnsafeHeader
from agentsvc.outbound import OutboundClient, OutboundError
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services.delivery.signing import signature_headers
from agentsvc.services.handoff.settings import team_chat_context
from agentsvc.store import team as team_store
from agentsvc.store.agents import Agent
from agentsvc.store.conversations import Conversation

log = logging.getLogger(__name__)

TEAM_CHAT_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class NotifySettings:
    """Where the inbox is, and how a team chat post is retried."""

    public_url: str
    retries: int = 3
    retry_seconds: float = 2.0  # times the attempt number, between attempts


class Notifier:
    """Sends handoff notifications; given its dependencies where the app is assembled."""

    def __init__(
        self,
        db: Database,
        mailer: Mailer,
        outbound: OutboundClient,
        box: SecretBox,
        settings: NotifySettings,
    ):
        self._db = db
        self._mailer = mailer
        self._outbound = outbound
        self._box = box
        self._public_url = settings.public_url.rstrip("/")
        self._retries = settings.retries
        self._retry_seconds = settings.retry_seconds
        self._tasks: set[asyncio.Task] = set()

    def link(self, conversation_id: str) -> str:
        """The conversation in the dashboard's inbox."""
        return f"{self._public_url}/#/inbox/{conversation_id}"

    def _soon(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def handoff_requested(self, agent: Agent, conv: Conversation, handoff: dict, online: bool):
        """A visitor asked for a person: e-mail and team chat, as the agent's settings say."""
        notify = handoff.get("notify") or {}
        if notify.get("email"):
            self._soon(self._mail_members(agent, conv, online))
        if notify.get("teamChat"):
            self._soon(self._post_team_chat(agent, conv, handoff, online))

    def _summary(self, agent: Agent, conv: Conversation, online: bool) -> str:
        who = conv.user_name or conv.user_email or conv.contact_email or "A visitor"
        away = "" if online else " (outside business hours)"
        return f"{who} asks for a person in “{conv.title}” with {agent.name}{away}."

    async def _mail_members(self, agent: Agent, conv: Conversation, online: bool) -> None:
        recipients = await team_store.handoff_recipients(self._db.reader, conv.team_id)
        text = (
            f"{self._summary(agent, conv, online)}\n\nAnswer in the inbox: {self.link(conv.id)}\n"
        )
        for to in recipients:
            try:
                self._mailer.send_soon(to, f"A visitor asks for a person — {agent.name}", text)
            except UnsafeHeader:
                log.warning("handoff mail to a member skipped: unusable address")

    async def _post_team_chat(
        self, agent: Agent, conv: Conversation, handoff: dict, online: bool
    ) -> None:
        url = handoff["notify"]["teamChat"]
        try:
            secret = self._box.open(handoff["teamChatSecretSealed"], team_chat_context(agent.id))
        except (KeyError, SecretBoxError):
            log.error("team chat of agent %s: the signing secret cannot be opened", agent.id)
            return
        message_id = new_id("message").replace("msg_", "hoff_", 1)
        body = orjson.dumps(
            {
                "type": "conversation.handoff",
                "text": f"{self._summary(agent, conv, online)} {self.link(conv.id)}",
                "conversationId": conv.id,
                "agentId": agent.id,
                "url": self.link(conv.id),
                "online": online,
            }
        )
        for attempt in range(self._retries):
            headers = {
                "Content-Type": "application/json",
                **signature_headers(secret, message_id, body),
            }
            try:
                resp = await self._outbound.request(
                    "POST",
                    url,
                    headers=headers,
                    data=body,
                    timeout=TEAM_CHAT_TIMEOUT_SECONDS,
                    max_response_bytes=4096,
                )
                if resp.ok:
                    return
                problem = f"HTTP {resp.status}"
            except OutboundError as exc:
                problem = exc.message
            log.warning("team chat of agent %s, attempt %d: %s", agent.id, attempt + 1, problem)
            await asyncio.sleep(self._retry_seconds * (attempt + 1))

    def reply_by_mail(self, agent: Agent, conv: Conversation, author: str, text: str) -> None:
        """E-mail a member's reply to the address a visitor left (they are gone)."""
        if not conv.contact_email:
            return
        body = f"{author} from {agent.name} answered your question “{conv.title}”:\n\n{text}\n"
        try:
            self._mailer.send_soon(conv.contact_email, f"Your conversation with {agent.name}", body)
        except UnsafeHeader:
            log.warning("reply mail skipped: the visitor's address is unusable")

    async def close(self) -> None:
        """Stop what is still running (at shutdown)."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=2)
