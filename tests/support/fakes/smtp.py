"""A real SMTP server (aiosmtpd) on 127.0.0.1 that records every message it accepts."""

from __future__ import annotations

import asyncio
import email
import email.policy
from dataclasses import dataclass, field
from email.message import EmailMessage

from aiosmtpd.smtp import SMTP, Envelope, Session


@dataclass
class ReceivedMail:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage

    @property
    def subject(self) -> str:
        return str(self.message["Subject"])

    @property
    def text(self) -> str:
        return self.message.get_content().replace("\r\n", "\n")


@dataclass
class FakeSmtp:
    """Accepts mail on a free loopback port; `fail = True` makes it refuse messages."""

    messages: list[ReceivedMail] = field(default_factory=list)
    fail: bool = False
    port: int = 0
    _server: asyncio.AbstractServer | None = None
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:  # noqa: N802
        if self.fail:
            return "554 5.0.0 Transaction failed"
        content = envelope.content if isinstance(envelope.content, bytes) else b""
        parsed = email.message_from_bytes(content, policy=email.policy.default)
        async with self._arrived:
            self.messages.append(ReceivedMail(envelope.mail_from, envelope.rcpt_tos, parsed))
            self._arrived.notify_all()
        return "250 OK"

    async def start(self) -> FakeSmtp:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: SMTP(self, hostname="fake-smtp.test"), "127.0.0.1", 0
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def settings(self) -> dict:
        """The `[smtp]` overrides that point the app at this server."""
        return {"host": "127.0.0.1", "port": self.port, "starttls": False}

    async def wait_for(self, count: int = 1, within: float = 5.0) -> list[ReceivedMail]:
        """Wait until at least `count` messages arrived; return them all."""
        async with self._arrived:
            await asyncio.wait_for(
                self._arrived.wait_for(lambda: len(self.messages) >= count), within
            )
        return list(self.messages)
