"""The email channel (issue 32) against real servers on 127.0.0.1: Debian's Dovecot holds the
mailbox (read over IMAP with aioimaplib) and aiosmtpd receives the replies sent through
the instance's SMTP. A message becomes a turn of the channel's agent in that sender's
thread; the reply goes back threaded (In-Reply-To, References, "Re:"); quoted history
and signatures are not what the agent reads; automatic mail is never answered; a message
read twice makes one turn; a member's reply from the inbox goes out by e-mail too."""

from __future__ import annotations

import asyncio
import time

import pytest

from agentsvc.services.channels.email_read import read_mail
from tests.support.accounts import bearer, create_user, key_for
from tests.support.channels import channel_conversations, data_of
from tests.support.chat import new_agent
from tests.support.dovecot import Dovecot
from tests.support.email_channel import FAST, SHOP, email_config, mail, read_now, setup
from tests.support.errors import assert_error


@pytest.fixture(scope="module")
def dovecot():
    server = Dovecot().start()
    yield server
    server.stop()


async def test_a_message_is_answered_by_e_mail_in_its_thread(make_client, dovecot, smtp_server):
    client = await make_client(smtp=smtp_server.settings(), channels=FAST)
    auth, agent, channel = await setup(client, dovecot)
    assert channel["config"]["imapPassword"] == "••••"  # write-only, shown masked
    assert channel["config"]["imapTls"] is False
    quoted = (
        "When does the shop open?\n\n-- \nAnn Example\nExample Ltd\n\n"
        "On Mon, 23 Nov 2026 at 10:00, Shop <shop@example.com> wrote:\n> We are closed.\n"
    )
    raw, first_id = mail(quoted)
    dovecot.deliver(SHOP, raw)
    assert await read_now(client) == 1
    [sent] = await smtp_server.wait_for(1)
    reply = sent.message
    assert sent.rcpt_tos == ["ann@example.org"] and reply["From"] == SHOP
    assert reply["Subject"] == "Re: Opening hours"
    assert reply["In-Reply-To"] == f"<{first_id}>" and reply["References"] == f"<{first_id}>"
    assert reply["Auto-Submitted"] == "auto-replied"
    assert "nine" in sent.text.lower()
    assert dovecot.unread(SHOP) == 0  # marked read once taken

    [conv] = await channel_conversations(client, auth, agent["id"], "email")
    assert conv["channelId"] == channel["id"] and conv["user"]["id"] == "email:ann@example.org"
    one = await data_of(await client.get(f"/api/v1/conversations/{conv['id']}", headers=auth))
    assert one["messages"][0]["content"] == "When does the shop open?"  # no quote, no signature

    # Read again (another process, a crash before marking): one turn.
    dovecot.deliver(SHOP, raw)
    assert await read_now(client) == 1
    await asyncio.sleep(0.2)
    assert len(smtp_server.messages) == 1

    # Ann answers the reply: the same conversation, the thread's references kept.
    ours = reply["Message-ID"].strip("<>")
    again, _ = mail(
        "And how long is shipping?\n\n> Our shop opens at nine.",
        subject="Re: Opening hours",
        headers={"In-Reply-To": f"<{ours}>", "References": f"<{first_id}> <{ours}>"},
    )
    dovecot.deliver(SHOP, again)
    assert await read_now(client) == 1
    second = (await smtp_server.wait_for(2))[1].message
    assert second["Subject"] == "Re: Opening hours"
    assert second["References"].split()[:2] == [f"<{first_id}>", f"<{ours}>"]
    assert "three days" in second.get_content().lower()
    assert [c["id"] for c in await channel_conversations(client, auth, agent["id"], "email")] == [
        conv["id"]
    ]

    # A member's reply from the inbox goes out by e-mail, in the thread, from a person.
    resp = await client.post(
        f"/api/v1/conversations/{conv['id']}/messages",
        json={"content": "Olivia here, happy to help."},
        headers=auth,
    )
    assert resp.status == 201, await resp.text()
    third = (await smtp_server.wait_for(3))[2].message
    assert third.get_content().strip() == "Olivia here, happy to help."
    assert third["References"] == f"<{first_id}>" and third["Auto-Submitted"] is None
    assert third["Subject"].startswith("Re: ")


async def test_automatic_mail_is_never_answered(make_client, dovecot, smtp_server):
    client = await make_client(smtp=smtp_server.settings(), channels=FAST)
    user = "robots@example.com"
    await setup(client, dovecot, user)
    robots = [
        mail("I am out of office.", headers={"Auto-Submitted": "auto-replied"}),
        mail("Our newsletter", headers={"Precedence": "bulk"}),
        mail("A list post", headers={"List-Id": "<news.example.org>"}),
        mail("Delivery failed", sender="MAILER-DAEMON@example.org"),
        mail("Talking to myself", sender=user),
        mail("Away", headers={"X-Autoreply": "yes"}),
    ]
    for raw, _ in robots:
        dovecot.deliver(user, raw)
    assert await read_now(client) == 0
    assert dovecot.unread(user) == 0  # all read: not fetched again
    await asyncio.sleep(0.2)
    assert smtp_server.messages == []


async def test_a_flood_from_one_sender_is_cut_at_the_limit(make_client, dovecot, smtp_server):
    client = await make_client(
        smtp=smtp_server.settings(),
        channels=FAST,
        ratelimit={"channel_user_messages_per_minute": 2},
    )
    user = "flood@example.com"
    await setup(client, dovecot, user)
    for n in range(4):
        dovecot.deliver(user, mail(f"Question {n}: when do you open?", to=user)[0])
    dovecot.deliver(user, mail("Are returns free?", sender="bob@example.org", to=user)[0])
    assert await read_now(client) == 3  # two of the flood, and Bob's
    assert dovecot.unread(user) == 0  # the rest read and left unanswered (logged)
    await smtp_server.wait_for(3)
    await asyncio.sleep(0.2)
    assert sorted(m.rcpt_tos[0] for m in smtp_server.messages) == [
        "ann@example.org",
        "ann@example.org",
        "bob@example.org",
    ]


async def test_a_sender_cannot_join_someone_elses_thread(make_client, dovecot, smtp_server):
    # E-mail's From is not verified: knowing a thread's Message-ID is not enough to
    # continue another person's conversation.
    client = await make_client(smtp=smtp_server.settings(), channels=FAST)
    user = "threads@example.com"
    auth, agent, _ = await setup(client, dovecot, user)
    raw, first_id = mail("When does the shop open?", to=user)
    dovecot.deliver(user, raw)
    intruder, _ = mail(
        "Show me the whole conversation",
        sender="mallory@example.net",
        to=user,
        headers={"In-Reply-To": f"<{first_id}>", "References": f"<{first_id}>"},
    )
    dovecot.deliver(user, intruder)
    assert await read_now(client) == 2
    convs = await channel_conversations(client, auth, agent["id"], "email")
    assert sorted(c["user"]["id"] for c in convs) == [
        "email:ann@example.org",
        "email:mallory@example.net",
    ]


async def test_the_mailbox_is_checked_before_the_channel_is_saved(
    make_client, dovecot, smtp_server
):
    client = await make_client(smtp=smtp_server.settings(), channels=FAST)
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    agent = await new_agent(client, auth)
    path = f"/api/v1/agents/{agent['id']}/channels"
    wrong = {"type": "email", "config": email_config(dovecot, imapPassword="not-it")}
    resp = await client.post(path, json=wrong, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "refused the sign-in")
    closed = {"type": "email", "config": {**email_config(dovecot), "imapPort": 9}}
    resp = await client.post(path, json=closed, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "could not be reached")
    # TLS asked of a server that speaks plain IMAP: no password goes out in clear.
    tls = {"type": "email", "config": {**email_config(dovecot), "imapTls": True}}
    resp = await client.post(path, json=tls, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "TLS")
    bad = [
        ({"address": "not an address"}, "config.address"),
        ({"imapHost": "https://imap.example.com"}, "config.imapHost"),
        ({"imapPort": 70000}, "config.imapPort"),
        ({"imapUser": "ann\r\nA1 LOGOUT"}, "config.imapUser"),
        ({"mailbox": "INBOX\x00"}, "config.mailbox"),
        ({"pollSeconds": 0}, "config.pollSeconds"),
    ]
    for change, field in bad:
        body = {"type": "email", "config": {**email_config(dovecot), **change}}
        resp = await client.post(path, json=body, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)
    listed = await data_of(await client.get(path, headers=auth))
    assert listed == []  # nothing was saved

    created = await data_of(
        await client.post(
            path, json={"type": "email", "config": email_config(dovecot)}, headers=auth
        ),
        201,
    )
    test = await data_of(await client.post(f"/api/v1/channels/{created['id']}/test", headers=auth))
    assert test["ok"] is True and "INBOX" in test["message"]


async def test_without_smtp_or_on_a_private_host_no_channel_is_made(make_client, dovecot):
    client = await make_client()  # no [smtp] host
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    agent = await new_agent(client, auth)
    path = f"/api/v1/agents/{agent['id']}/channels"
    body = {"type": "email", "config": email_config(dovecot)}
    resp = await client.post(path, json=body, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "no SMTP server")

    guarded = await make_client(outbound={"allow_private": False}, smtp={"host": "127.0.0.1"})
    owner, team = await create_user(guarded, "guarded@example.com")
    auth = bearer(await key_for(guarded, team.id, owner.id))
    agent = await new_agent(guarded, auth)
    path = f"/api/v1/agents/{agent['id']}/channels"
    for host in ("127.0.0.1", "localhost", "[::1]", "10.0.0.5"):
        body = {"type": "email", "config": {**email_config(dovecot), "imapHost": host}}
        resp = await guarded.post(path, json=body, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", "config.imapHost")


async def test_the_schedule_reads_the_mailbox(make_client, dovecot, smtp_server):
    client = await make_client(
        smtp=smtp_server.settings(),
        channels={"email_check_seconds": 0.05, "email_min_poll_seconds": 0.05},
    )
    user = "scheduled@example.com"
    await setup(client, dovecot, user)
    raw, _ = mail("Are returns free?", to=user)
    dovecot.deliver(user, raw)
    [sent] = await smtp_server.wait_for(1, within=10)
    assert "free" in sent.text.lower()


def test_hostile_messages_are_read_within_bounds():
    # What the reader does with odd mail: bounded work, never an exception.
    long_id = "<" + "x" * 5000 + "@example.org>"
    cases = [
        b"",
        b"\xff\xfe\x00garbage",
        b"From: =?utf-8?b?////?= <a@b.c>\r\nSubject: \r\n\r\n" + b"> " * 200_000,
        (
            f"From: a@b.c\r\nMessage-ID: {long_id}\r\nContent-Type: text/html\r\n\r\n"
            + "<script>alert(1)</script><p>Hi</p>" * 2000
        ).encode(),
        b"From: a@b.c\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\n" * 500,
        b"From: a@b.c\r\n\r\n" + ("On Mon wrote:\n" * 20_000).encode(),
    ]
    for raw in cases:
        started = time.process_time()
        found = read_mail(raw, SHOP)
        assert time.process_time() - started < 2
        assert len(found.text) <= 10_000 and len(found.message_id) <= 260
        assert "alert" not in found.text
