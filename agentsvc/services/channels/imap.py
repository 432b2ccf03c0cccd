"""An e-mail channel's mailbox, read over IMAP with aioimaplib: log in, select the
mailbox, take the oldest unread messages (at most `FETCH_BATCH` a visit, none larger than
`MAX_MESSAGE_BYTES`, read with BODY.PEEK so nothing is marked read before it is recorded),
then mark each \\Seen once the channel has it.

The IMAP server is the tenant's: its address is checked like every outbound address (a
name is resolved and every address it resolves to must be public, unless `[outbound]
allow_private`), and the connection is opened to the very address checked, with TLS
verified against the host's name. Every step has a timeout.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import ssl
from dataclasses import dataclass

import aioimaplib

from agentsvc.outbound import GuardedResolver, RefusedAddress, forbidden_reason, literal_address

MAX_MESSAGE_BYTES = 10 * 1024 * 1024  # larger messages are skipped (marked read, logged)
FETCH_BATCH = 20  # messages taken per visit; the rest wait for the next one
_SIZE = re.compile(rb"UID (\d+) RFC822\.SIZE (\d+)|RFC822\.SIZE (\d+) UID (\d+)")


class MailboxError(Exception):
    """The mailbox could not be read: a sentence for the owner (no password in it)."""


@dataclass(frozen=True, slots=True)
class MailboxSettings:
    """Where an e-mail channel's messages are read."""

    host: str
    port: int
    user: str
    password: str
    tls: bool
    mailbox: str = "INBOX"


@dataclass(frozen=True, slots=True)
class Fetched:
    """One unread message: its IMAP UID, its size, and its raw bytes (None: too large)."""

    uid: str
    size: int
    raw: bytes | None


def mailbox_settings(channel_config: dict, secrets: dict[str, str]) -> MailboxSettings:
    """Where an e-mail channel's messages are read, from its settings."""
    tls = bool(channel_config.get("imapTls", True))
    return MailboxSettings(
        host=channel_config["imapHost"],
        port=int(channel_config.get("imapPort") or (993 if tls else 143)),
        user=channel_config["imapUser"],
        password=secrets["imapPassword"],
        tls=tls,
        mailbox=channel_config.get("mailbox") or "INBOX",
    )


class _Pinned(aioimaplib.IMAP4):
    """aioimaplib's client, connected to an address already checked, with TLS verified
    against the host's name (its own client would resolve the name again)."""

    def __init__(self, address: str, settings: MailboxSettings, timeout: float):
        self._address = address
        self._server_name = settings.host
        context = ssl.create_default_context() if settings.tls else None
        super().__init__(settings.host, settings.port, timeout=timeout, ssl_context=context)

    def create_client(self, host, port, loop, conn_lost_cb=None, ssl_context=None) -> None:  # noqa: ANN001
        local_loop = loop if loop is not None else asyncio.get_running_loop()
        self.protocol = aioimaplib.IMAP4ClientProtocol(local_loop, conn_lost_cb)
        self._client_task = local_loop.create_task(
            local_loop.create_connection(
                lambda: self.protocol,
                self._address,
                port,
                ssl=ssl_context,
                server_hostname=self._server_name if ssl_context is not None else None,
            )
        )


async def _address(host: str, port: int, allow_private: bool) -> str:
    """The address to connect to: a literal's own, or the first a name resolves to (every
    one public unless private addresses are allowed)."""
    literal = literal_address(host)
    if literal is not None:
        reason = None if allow_private else forbidden_reason(literal)
        if reason:
            raise MailboxError(f"The IMAP server's address {literal} {reason}")
        return str(literal)
    resolver = GuardedResolver() if not allow_private else None
    try:
        if resolver is not None:
            found = await resolver.resolve(host, port)
        else:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port)
            found = [{"host": info[4][0]} for info in infos]
    except RefusedAddress as exc:
        raise MailboxError(f"The IMAP server's address is not allowed: {exc}") from None
    except OSError:
        raise MailboxError(f"The IMAP server {host} could not be found") from None
    finally:
        if resolver is not None:
            await resolver.close()
    return str(ipaddress.ip_address(found[0]["host"].split("%", 1)[0]))


def _ok(response: aioimaplib.Response, doing: str) -> aioimaplib.Response:
    if response.result != "OK":
        said = b" ".join(bytes(line) for line in response.lines)[:200]
        raise MailboxError(f"The IMAP server refused {doing}: {said.decode(errors='replace')}")
    return response


class Mailbox:
    """One visit to a mailbox: `async with Mailbox(...) as box:` logs in and selects it."""

    def __init__(self, settings: MailboxSettings, *, allow_private: bool, timeout: float):
        self._settings = settings
        self._allow_private = allow_private
        self._timeout = timeout
        self._client: _Pinned | None = None

    async def __aenter__(self) -> Mailbox:
        settings = self._settings
        address = await _address(settings.host, settings.port, self._allow_private)
        client = self._client = _Pinned(address, settings, self._timeout)
        try:
            await asyncio.wait_for(client.wait_hello_from_server(), self._timeout)
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            self._client = None
            raise MailboxError(
                f"The IMAP server {settings.host}:{settings.port} could not be reached"
                f" ({_reason(exc, settings.tls)})"
            ) from None
        try:
            await self._step(client.login(settings.user, settings.password), "the sign-in")
            await self._step(client.select(_quoted(settings.mailbox)), "the mailbox")
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        try:
            await asyncio.wait_for(client.logout(), self._timeout)
        except (OSError, TimeoutError, aioimaplib.Abort):
            pass

    async def _step(self, call, doing: str) -> aioimaplib.Response:  # noqa: ANN001
        try:
            return _ok(await asyncio.wait_for(call, self._timeout), doing)
        except (OSError, TimeoutError, aioimaplib.Abort) as exc:
            raise MailboxError(
                f"The IMAP server stopped answering during {doing} ({exc})"
            ) from None

    async def unread(self) -> list[Fetched]:
        """The oldest unread messages (at most FETCH_BATCH), each read without marking it."""
        client = self._client
        assert client is not None
        found = await self._step(client.uid_search("UNSEEN"), "the search")
        uids = [u for u in bytes(found.lines[0]).split() if u.isdigit()][:FETCH_BATCH]
        if not uids:
            return []
        listed = await self._step(
            client.uid("fetch", b",".join(uids).decode(), "(RFC822.SIZE)"), "the listing"
        )
        sizes = _sizes(listed.lines)
        fetched = []
        for uid in (u.decode() for u in uids):
            size = sizes.get(uid, 0)
            if size > MAX_MESSAGE_BYTES:
                fetched.append(Fetched(uid, size, None))
                continue
            body = await self._step(client.uid("fetch", uid, "(BODY.PEEK[])"), "the reading")
            raw = _literal(body.lines)
            if raw is not None and len(raw) <= MAX_MESSAGE_BYTES:
                fetched.append(Fetched(uid, len(raw), raw))
        return fetched

    async def mark_read(self, uid: str) -> None:
        """Mark a message \\Seen (the channel has it, or skipped it for good)."""
        assert self._client is not None
        await self._step(self._client.uid("store", uid, "+FLAGS.SILENT (\\Seen)"), "marking")


def _quoted(mailbox: str) -> str:
    return '"' + mailbox.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _sizes(lines: list) -> dict[str, int]:
    sizes = {}
    for line in lines:
        match = _SIZE.search(bytes(line))
        if match:
            uid, size = (match[1], match[2]) if match[1] else (match[4], match[3])
            sizes[uid.decode()] = int(size)
    return sizes


def _literal(lines: list) -> bytes | None:
    """The message of a FETCH BODY[] answer (aioimaplib gives the literal as a bytearray)."""
    for line in lines:
        if isinstance(line, bytearray):
            return bytes(line)
    return None


def _reason(exc: BaseException, tls: bool) -> str:
    if isinstance(exc, ssl.SSLError):
        return "its TLS certificate or handshake failed" if tls else "TLS failed"
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return "no answer in time"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return exc.strerror or type(exc).__name__ if isinstance(exc, OSError) else "failed"
