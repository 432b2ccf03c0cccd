"""The mailer: SMTP through aiosmtplib, the log and the outbox without it, header safety."""

from __future__ import annotations

import logging

import pytest

from agentsvc.api import app_keys
from agentsvc.config import SmtpSettings
from agentsvc.mail import Mailer, UnsafeHeader
from tests.support.mail import outbox


async def test_without_smtp_mail_is_logged_and_kept(client, caplog):
    mailer = client.app[app_keys.mailer_key]
    with caplog.at_level(logging.WARNING, logger="agentsvc.mail"):
        await mailer.send("ada@example.com", "Hello", "Open http://x/link?token=abc\n")
    (message,) = await outbox(client)
    assert (message.to_address, message.subject) == ("ada@example.com", "Hello")
    assert message.body == "Open http://x/link?token=abc\n"
    assert message.reason == "no SMTP configured"
    logged = caplog.text
    assert "ada@example.com" in logged and "Hello" in logged and "token=abc" in logged


async def test_smtp_delivery(make_client, smtp_server):
    client = await make_client(smtp={**smtp_server.settings(), "from_address": "bot@agents.test"})
    await client.app[app_keys.mailer_key].send("ada@example.com", "Hi there", "Body text\n")
    (mail,) = await smtp_server.wait_for(1)
    assert mail.mail_from == "bot@agents.test"
    assert mail.rcpt_tos == ["ada@example.com"]
    assert mail.subject == "Hi there"
    assert mail.message["To"] == "ada@example.com"
    assert mail.message["Message-ID"].endswith("@agents.test>")
    assert mail.text == "Body text\n"
    assert await outbox(client) == []


@pytest.mark.parametrize(
    ("to", "subject"),
    [
        ("ada@example.com\r\nBcc: x@evil.test", "Hi"),
        ("ada@example.com", "Hi\nBcc: x@evil.test"),
        ("ada@example.com", "Hi\rthere"),
    ],
)
async def test_line_breaks_in_headers_are_refused(make_client, smtp_server, to, subject):
    client = await make_client(smtp=smtp_server.settings())
    mailer = client.app[app_keys.mailer_key]
    with pytest.raises(UnsafeHeader):
        await mailer.send(to, subject, "body")
    with pytest.raises(UnsafeHeader):
        mailer.send_soon(to, subject, "body")
    await mailer.drain()
    assert smtp_server.messages == []
    assert await outbox(client) == []


async def test_failed_background_send_is_kept_in_the_outbox(make_client, smtp_server):
    smtp_server.fail = True
    client = await make_client(smtp=smtp_server.settings())
    client.app[app_keys.mailer_key].send_soon("ada@example.com", "Invite", "link inside")
    (message,) = await outbox(client)
    assert message.body == "link inside"
    assert message.reason.startswith("SMTP error")


async def test_unreachable_server_is_kept_in_the_outbox(make_client, smtp_server):
    port = smtp_server.port
    await smtp_server.close()
    client = await make_client(smtp={"host": "127.0.0.1", "port": port, "starttls": False})
    client.app[app_keys.mailer_key].send_soon("ada@example.com", "Invite", "link inside")
    (message,) = await outbox(client)
    assert message.reason.startswith("SMTP error")


async def test_mailer_is_general(client):
    # The same object serves other features (form post actions): any recipient and text.
    mailer = Mailer(
        SmtpSettings(), client.app[app_keys.db_key], client.app[app_keys.secret_box_key]
    )
    await mailer.send("team@example.com", "Form submitted: contact", "name: Ada\n")
    assert [m.subject for m in await outbox(client)] == ["Form submitted: contact"]


def test_headers_refuse_every_line_break_and_control_character():
    from agentsvc.mail import UnsafeHeader, check_header

    assert check_header("subject", "Hello – wörld") == "Hello – wörld"
    for bad in ("a\rb", "a\nb", "a\x1cb", "a\x0bb", "a\x85b", "a\u2028b", "a\x01b", "a\x7fb"):
        try:
            check_header("subject", bad)
        except UnsafeHeader:
            continue
        raise AssertionError(f"{bad!r} was accepted")
