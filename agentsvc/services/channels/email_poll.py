"""E-mail channels' mailboxes, visited on a schedule: a job every `[channels]
email_check_seconds` visits each enabled e-mail channel whose `pollSeconds` (at least
`[channels] email_min_poll_seconds`, default 60) have passed, at most `PARALLEL_VISITS` at
a time. Each visit takes the oldest unread messages (imap.py), reads each in a worker
thread (email_read.py), hands it to the channel's inbox as any platform's message (its
Message-ID is the key: a message read twice, by two processes or after a crash, makes one
turn), and marks it read once the inbox has it. A message no one should answer (an
automatic reply, a bounce, list mail), too large, or past its sender's flood limit
(`[ratelimit] channel_user_messages_per_minute`) is marked read and logged; past the
channel's (`channel_messages_per_minute`), the rest wait in the mailbox for a later visit.
A message's attachments are written into the file storage as it is read (email_files.py),
before the inbox records it; they are removed again when it is not recorded. When they
cannot be written (the storage unavailable), the message and the rest wait in the mailbox
for a later visit.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace

from agentsvc.db import Database
from agentsvc.errors import StorageUnavailable
from agentsvc.ratelimit import Limiter
from agentsvc.secretbox import SecretBox, SecretBoxError
from agentsvc.services.channels import email_files, email_send
from agentsvc.services.channels.email_read import ReadMail, read_mail
from agentsvc.services.channels.imap import Mailbox, MailboxError, mailbox_settings
from agentsvc.services.channels.inbound import ChannelInbox, Inbound
from agentsvc.services.channels.settings import open_sealed
from agentsvc.storage import FileStore
from agentsvc.store import channels as store
from agentsvc.store.channels import Channel

log = logging.getLogger(__name__)

DEFAULT_POLL_SECONDS = 60
PARALLEL_VISITS = 4


@dataclass(frozen=True, slots=True)
class PollConfig:
    min_poll_seconds: float  # [channels] email_min_poll_seconds
    timeout_seconds: float  # each IMAP step ([webhooks] timeout_seconds)
    allow_private: bool  # [outbound] allow_private
    # [ratelimit] channel_messages_per_minute, channel_user_messages_per_minute
    per_channel: int = 120
    per_user: int = 20
    files: FileStore | None = None  # where attachments are kept (None: not kept)


class EmailPoller:
    """Reads the e-mail channels' mailboxes (one instance for the app)."""

    def __init__(
        self,
        db: Database,
        box: SecretBox,
        inbox: ChannelInbox,
        limiter: Limiter,
        config: PollConfig,
    ):
        self._db = db
        self._limiter = limiter
        self._box = box
        self._inbox = inbox
        self._config = config
        self._visited: dict[str, float] = {}  # channel id -> when its mailbox was last read
        self._gate = asyncio.Semaphore(PARALLEL_VISITS)

    def _due(self, channel: Channel, now: float) -> bool:
        every = channel.config.get("pollSeconds") or DEFAULT_POLL_SECONDS
        every = max(float(every), self._config.min_poll_seconds)
        return now - self._visited.get(channel.id, float("-inf")) >= every

    async def poll(self, *, every_one: bool = False) -> int:
        """Visit every mailbox that is due (`every_one`: all of them, now); return how many
        messages were taken."""
        now = time.monotonic()
        enabled = await store.enabled_of_type(self._db.reader, "email")
        due = [c for c in enabled if every_one or self._due(c, now)]
        for channel in due:
            self._visited[channel.id] = now
        taken = await asyncio.gather(*(self._visit(c) for c in due))
        return sum(taken)

    async def _visit(self, channel: Channel) -> int:
        async with self._gate:
            try:
                secrets = open_sealed(self._box, channel.id, channel.sealed_secrets)
            except SecretBoxError:
                log.warning("e-mail channel %s: its password cannot be opened", channel.id)
                return 0
            settings = mailbox_settings(channel.config, secrets)
            try:
                async with Mailbox(
                    settings,
                    allow_private=self._config.allow_private,
                    timeout=self._config.timeout_seconds,
                ) as mailbox:
                    return await self._take(channel, mailbox)
            except MailboxError as exc:
                log.warning("e-mail channel %s: %s", channel.id, exc)
                return 0

    async def _take(self, channel: Channel, mailbox: Mailbox) -> int:
        taken = 0
        for fetched in await mailbox.unread():
            if fetched.raw is None:
                log.warning(
                    "e-mail channel %s: a message of %d bytes is too large; left unanswered",
                    channel.id,
                    fetched.size,
                )
                await mailbox.mark_read(fetched.uid)
                continue
            if await self._limiter.retry_after(f"ch:{channel.id}", self._config.per_channel):
                break  # the channel's flood limit: the rest wait in the mailbox
            mail = await self._read(channel, fetched.raw)
            if mail is None:
                break  # its files cannot be written: it waits for a later visit
            per_user = f"ch:{channel.id}:u:{mail.sender}"
            if mail.skipped is None and await self._limiter.retry_after(
                per_user, self._config.per_user
            ):
                mail = replace(mail, skipped=f"too many messages from {mail.sender}")
            if mail.skipped is not None:
                log.info("e-mail channel %s: not answered: %s", channel.id, mail.skipped)
                await self._drop_files(channel, mail)
                await mailbox.mark_read(fetched.uid)
                continue
            address = email_send.address_of(mail.thread, mail.subject, mail.references)
            try:
                await self._inbox.receive(
                    channel, Inbound(mail.sender, mail.text, mail.message_id, address)
                )
            except BaseException:
                # Not recorded: its files go too (shielded: this may be a cancellation).
                await asyncio.shield(self._drop_files(channel, mail))
                raise
            await mailbox.mark_read(fetched.uid)
            taken += 1
        return taken

    async def _read(self, channel: Channel, raw: bytes) -> ReadMail | None:
        """Read a message in a worker thread, its attachments written; None when they
        cannot be (the storage unavailable)."""
        files = self._config.files
        mail = await asyncio.to_thread(read_mail, raw, channel.config["address"], files is not None)
        if files is None or not mail.parts:
            return mail
        try:
            kept, wrote = await email_files.write_files(
                files, channel.id, mail.message_id, mail.parts
            )
        except StorageUnavailable:
            log.warning(
                "e-mail channel %s: a message's attachments cannot be kept (the file storage"
                " is unavailable); it waits for the next visit",
                channel.id,
            )
            return None
        return replace(mail, files=kept, wrote_files=wrote, parts=())

    async def _drop_files(self, channel: Channel, mail: ReadMail) -> None:
        """Remove the files this read wrote for a message that is not answered."""
        if mail.wrote_files and self._config.files is not None:
            folder = email_files.folder_of(channel.id, mail.message_id)
            await email_files.remove(self._config.files, folder)
