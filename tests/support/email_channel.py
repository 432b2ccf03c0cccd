"""The e-mail channel in tests: messages as mail programs send them (plain, or with
attachments), a channel on the test's Dovecot, reading the mailboxes now, and an attachment
of a team's conversation for the security matrix."""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage
from email.utils import make_msgid

from agentsvc.api import app_keys
from agentsvc.ids import new_id, now_iso
from agentsvc.services.channels.email_files import parts_of, write_files
from agentsvc.store import attachments as attachments_store
from agentsvc.store.attachments import Attachment
from tests.support.accounts import bearer, create_user, key_for
from tests.support.channels import PROMPT, data_of, turns_done
from tests.support.chat import chat, new_agent, user
from tests.support.dovecot import PASSWORD, Dovecot

SHOP = "shop@example.com"
FAST = {"email_min_poll_seconds": 0.01}


def mail(
    text: str,
    *,
    sender: str = "ann@example.org",
    to: str = SHOP,
    subject: str = "Opening hours",
    headers: dict[str, str] | None = None,
    message_id: str | None = None,
) -> tuple[bytes, str]:
    """A plain-text message as a mail program sends it, and its Message-ID (no brackets)."""
    msg_id = message_id or make_msgid(domain="example.org")
    lines = [
        f"From: Ann <{sender}>",
        f"To: {to}",
        f"Subject: {subject}",
        f"Message-ID: {msg_id}",
        "Date: Thu, 26 Nov 2026 10:00:00 +0000",
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=utf-8",
        *[f"{k}: {v}" for k, v in (headers or {}).items()],
        "",
        text,
    ]
    return "\r\n".join(lines).encode(), msg_id.strip("<>")


def mail_with_files(
    text: str, files: list[tuple[str, str, bytes]], *, sender: str = "ann@example.org"
) -> tuple[bytes, str]:
    """A message with attachments (name, content type, bytes), and its Message-ID."""
    msg = EmailMessage()
    msg_id = make_msgid(domain="example.org")
    msg["From"], msg["To"], msg["Subject"] = f"Ann <{sender}>", SHOP, "My invoice"
    msg["Message-ID"] = msg_id
    msg.set_content(text)
    for name, kind, data in files:
        main, sub = kind.split("/")
        msg.add_attachment(data, maintype=main, subtype=sub, filename=name)
    return msg.as_bytes(), msg_id.strip("<>")


def email_config(dovecot: Dovecot, user: str = SHOP, **more) -> dict:
    return {
        "address": user,
        "imapHost": "127.0.0.1",
        "imapPort": dovecot.port,
        "imapUser": user,
        "imapPassword": PASSWORD,
        "imapTls": False,
        **more,
    }


async def setup(client, dovecot: Dovecot, user: str = SHOP, email: str = "owner@example.com"):
    """A team's owner key, an agent and its e-mail channel on the test's Dovecot."""
    owner, team = await create_user(client, email, name="Olivia")
    auth = bearer(await key_for(client, team.id, owner.id))
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    body = {"type": "email", "config": email_config(dovecot, user)}
    resp = await client.post(f"/api/v1/agents/{agent['id']}/channels", json=body, headers=auth)
    return auth, agent, await data_of(resp, 201)


async def read_now(client) -> int:
    """Visit the mailboxes now (the job does it every [channels] email_check_seconds)."""
    taken = await client.app[app_keys.email_poller_key].poll(every_one=True)
    await turns_done(client)
    return taken


async def furnish_attachment(client, auth: dict, agent_id: str) -> tuple[str, str]:
    """A conversation of the team whose first message lists a file written as the e-mail
    channel writes it (for the security matrix, which has no mailbox); its id and the
    file's."""
    stream = await chat(client, {"agentId": agent_id, "messages": user("my invoice")}, auth)
    conv_id = stream.start["conversationId"]
    one = await data_of(await client.get(f"/api/v1/conversations/{conv_id}", headers=auth))
    raw, msg_id = mail_with_files("Here it is.", [("invoice.pdf", "application/pdf", b"%PDF")])
    parsed = email.message_from_bytes(raw, policy=email.policy.default)
    files = client.app[app_keys.files_key]
    [kept], _ = await write_files(files, "ch_matrix", msg_id, parts_of(parsed))
    row = Attachment(new_id("attachment"), conv_id, one["messages"][0]["id"], *_fields(kept))
    async with client.app[app_keys.db_key].write() as tx:
        await attachments_store.insert_many(tx, [row])
    return conv_id, row.id


def _fields(kept) -> tuple:
    return (kept.folder, kept.file, kept.name, kept.content_type, kept.size, 0, now_iso())
