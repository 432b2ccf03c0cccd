"""Outgoing e-mail: SMTP through aiosmtplib, or the log and the outbox table without it.

A message body may carry a live magic-link or invitation token, so the outbox keeps it
sealed with the instance's secret box (AES-256-GCM, context `mail:<id>`): the database
alone (a backup, a copied file, SQL access) never holds a link in clear.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

import aiosmtplib

from agentsvc.config import SmtpSettings
from agentsvc.db import Database
from agentsvc.ids import new_id, now_iso
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.store import mail_outbox
from agentsvc.store.mail_outbox import OutboxMessage

log = logging.getLogger(__name__)

SMTP_TIMEOUT_SECONDS = 30
NO_SMTP = "no SMTP configured"
UNREADABLE = "(this message cannot be decrypted with the current secret key)"


def _context(mail_id: str) -> str:
    return f"mail:{mail_id}"


class UnsafeHeader(ValueError):
    """A header value (recipient, subject) holding a line break or control character."""


def check_header(name: str, value: str) -> str:
    """Return the value, or raise UnsafeHeader when it could start a new header line."""
    # Python's email package splits on every character str.splitlines() treats as a line
    # end (\x0b, \x0c, \x1c-\x1e, \x85, \u2028...), not only CR and LF; control
    # characters have no place in a header either.
    if len(value.splitlines()) > 1 or any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value):
        raise UnsafeHeader(f"{name}: line breaks and control characters are not allowed")
    return value


def check_address(value: str) -> str:
    """Return the address, or raise UnsafeHeader when a mail header cannot carry it (the
    email package refuses "a@[" and other forms an address pattern lets through)."""
    check_header("to", value)
    try:
        EmailMessage()["To"] = value
    except Exception:  # noqa: BLE001 - its parser fails in any way on odd input ("Ķ@[" is
        # an AttributeError inside Python 3.11's email package)
        raise UnsafeHeader("to: not an address a message can be sent to") from None
    return value


class Mailer:
    """Sends plain-text mail; without `[smtp] host` logs it and keeps it in the outbox."""

    def __init__(self, smtp: SmtpSettings, db: Database, box: SecretBox):
        self._smtp = smtp
        self._db = db
        self._box = box
        self._tasks: set[asyncio.Task] = set()

    def _message(self, to: str, subject: str, text: str) -> EmailMessage:
        message = EmailMessage()
        message["From"] = check_header("from", self._smtp.from_address)
        message["To"] = check_address(to)
        message["Subject"] = check_header("subject", subject)
        message["Date"] = formatdate(usegmt=True)
        message["Message-ID"] = make_msgid(domain=self._smtp.from_address.rpartition("@")[2])
        message.set_content(text)
        return message

    @property
    def can_send(self) -> bool:
        """Whether an SMTP server is set ([smtp] host)."""
        return bool(self._smtp.host)

    async def send(self, to: str, subject: str, text: str) -> None:
        """Send one message now; raises UnsafeHeader, or the SMTP error when delivery fails."""
        message = self._message(to, subject, text)
        if not self._smtp.host:
            # The body is logged on purpose: it holds the link a self-hoster needs.
            log.warning("mail (%s) to %s: %s\n%s", NO_SMTP, to, subject, text)
            await self._keep(to, subject, text, NO_SMTP)
            return
        await self.send_message(message)

    async def send_message(self, message: EmailMessage) -> None:
        """Send a message as built (a channel's reply, from its own address) through the
        SMTP server now; the SMTP error when delivery fails."""
        smtp = self._smtp
        await aiosmtplib.send(
            message,
            hostname=smtp.host,
            port=smtp.port,
            username=smtp.username or None,
            password=smtp.password or None,
            start_tls=smtp.starttls,
            timeout=SMTP_TIMEOUT_SECONDS,
        )

    def send_soon(self, to: str, subject: str, text: str) -> None:
        """Send in the background (the caller answers at once); failures go to the outbox.

        Header values are checked here, so an unsafe one fails the caller, not the task.
        """
        self._message(to, subject, text)
        task = asyncio.get_running_loop().create_task(self._send_or_keep(to, subject, text))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_or_keep(self, to: str, subject: str, text: str) -> None:
        try:
            await self.send(to, subject, text)
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            log.error("mail to %s failed (%s); kept in the outbox: %s", to, exc, subject)
            await self._keep(to, subject, text, f"SMTP error: {exc}"[:500])

    async def _keep(self, to: str, subject: str, text: str, reason: str) -> None:
        mail_id = new_id("mail")
        sealed = self._box.seal(text, _context(mail_id))
        message = OutboxMessage(mail_id, to, subject, sealed, reason, now_iso())
        async with self._db.write() as tx:
            await mail_outbox.insert(tx, message)

    async def kept(self, to: str | None = None, limit: int = 100) -> list[OutboxMessage]:
        """The outbox's messages, newest first, with their bodies opened."""
        rows = await mail_outbox.list_recent(self._db.reader, to, limit)
        return [replace(row, body=self._open(row)) for row in rows]

    def open_kept(self, mail_id: str, sealed_body: str) -> str:
        """A kept message's body in clear (to see whom and what it is about)."""
        return self._open(OutboxMessage(mail_id, "", "", sealed_body, "", ""))

    def _open(self, row: OutboxMessage) -> str:
        if not row.body:
            return ""  # kept before bodies were sealed: removed at the upgrade
        try:
            return self._box.open(row.body, _context(row.id))
        except SecretBoxError:
            return UNREADABLE

    async def drain(self, within: float = 10.0) -> None:
        """Wait up to `within` seconds for background sends to finish (shutdown, tests)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=within)

    async def close(self) -> None:
        """Finish what is in flight, then cancel anything that would not finish."""
        await self.drain()
        for task in list(self._tasks):
            task.cancel()
