"""An e-mail's attachments kept as files (issue 32), against Debian's Dovecot on 127.0.0.1:
written under the data directory only (hostile names made safe, never a path), listed on
the conversation's message, downloadable by the team's members with safe headers and by no
one else, kept once when a message is read twice, and swept once their conversation is
gone or their message was never recorded."""

from __future__ import annotations

import email
import email.policy

import pytest

from agentsvc.api import app_keys
from agentsvc.services.channels.email_files import (
    MANIFEST,
    folder_of,
    parts_of,
    remove_orphan_folders,
    safe_name,
    write_files,
)
from agentsvc.services.channels.email_read import read_mail
from agentsvc.storage.local import LocalStore
from tests.support.accounts import add_member, bearer, create_user, key_for
from tests.support.channels import data_of
from tests.support.dovecot import Dovecot
from tests.support.email_channel import FAST, SHOP, mail_with_files, read_now, setup
from tests.support.errors import assert_error
from tests.support.storage import files_of, stored_keys

PDF = b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\n%%EOF\n"
LONG = "x" * 10_000 + ".txt"
FILES = [
    ("invoice.pdf", "application/pdf", PDF),
    ("../../etc/passwd", "text/html", b"<script>alert(1)</script>"),
    (LONG, "text/plain", b"long name"),
]


@pytest.fixture(scope="module")
def dovecot():
    server = Dovecot().start()
    yield server
    server.stop()


async def kept_files(client) -> list[str]:
    """Every stored file of the e-mails' folders, as folder/name."""
    return [key.removeprefix("mail/") for key in await stored_keys(client, "mail/")]


async def conversation_of(client, auth: dict, agent_id: str) -> dict:
    resp = await client.get(
        "/api/v1/conversations", params={"agentId": agent_id, "channel": "email"}, headers=auth
    )
    [conv] = await data_of(resp)
    return await data_of(await client.get(f"/api/v1/conversations/{conv['id']}", headers=auth))


async def test_attachments_are_kept_listed_and_served_to_the_team_only(
    make_client, dovecot, smtp_server
):
    client = await make_client(smtp=smtp_server.settings(), channels=FAST)
    auth, agent, channel = await setup(client, dovecot)
    raw, msg_id = mail_with_files("Please see my invoice.", FILES)
    dovecot.deliver(SHOP, raw)
    assert await read_now(client) == 1

    conv = await conversation_of(client, auth, agent["id"])
    first = conv["messages"][0]
    listed = first["attachments"]
    names = [a["name"] for a in listed]
    assert names[0] == "invoice.pdf" and names[1] == "_.._etc_passwd"
    assert names[2] == "x" * 96 + ".txt"  # capped at 100 characters, its extension kept
    assert [a["size"] for a in listed] == [len(PDF), 25, 9]
    assert [a["contentType"] for a in listed] == ["application/pdf", "text/html", "text/plain"]
    assert first["content"] == f"Please see my invoice.\n\n(attached: {', '.join(names)})"
    assert all(m["attachments"] == [] for m in conv["messages"][1:])  # the agent's answer

    # Stored: one folder, named from the channel and Message-ID (on disk under data_dir).
    folder = folder_of(channel["id"], msg_id)
    assert await kept_files(client) == sorted(f"{folder}/{n}" for n in [*names, MANIFEST])
    data_dir = client.app[app_keys.settings_key].server.data_dir
    assert not (data_dir.parent / "etc").exists() and not (data_dir / "etc").exists()

    base = f"/api/v1/conversations/{conv['id']}/attachments"
    resp = await client.get(f"{base}/{listed[0]['id']}", headers=auth)
    assert resp.status == 200 and await resp.read() == PDF
    assert resp.headers["Content-Type"] == "application/pdf"
    assert resp.headers["Content-Disposition"].startswith('attachment; filename="invoice.pdf"')
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    # HTML is never served as HTML; the hostile name stays a name.
    resp = await client.get(f"{base}/{listed[1]['id']}", headers=auth)
    assert resp.headers["Content-Type"] == "application/octet-stream"
    assert resp.headers["Content-Disposition"] == (
        "attachment; filename=\"_.._etc_passwd\"; filename*=UTF-8''_.._etc_passwd"
    )

    # A member of the team may open it; another team, or a made-up id, finds nothing.
    whoami = await data_of(await client.get("/api/v1/auth/session", headers=auth))
    member = await add_member(client, whoami["team"]["id"], "member@example.com")
    member_auth = bearer(await key_for(client, whoami["team"]["id"], member.id))
    resp = await client.get(f"{base}/{listed[2]['id']}", headers=member_auth)
    assert resp.status == 200 and await resp.read() == b"long name"
    other, team = await create_user(client, "other@example.com")
    other_auth = bearer(await key_for(client, team.id, other.id))
    await assert_error(
        await client.get(f"{base}/{listed[0]['id']}", headers=other_auth), 404, "NOT_FOUND"
    )
    for made_up in ("att_missing", "..", "%2e%2e%2fetc", listed[0]["id"] + "x"):
        await assert_error(await client.get(f"{base}/{made_up}", headers=auth), 404, "NOT_FOUND")
    await assert_error(await client.get(f"{base}/{listed[0]['id']}"), 401, "UNAUTHORIZED")


async def test_a_message_read_twice_keeps_one_copy_and_a_deleted_conversation_is_swept(
    make_client, dovecot, smtp_server
):
    client = await make_client(smtp=smtp_server.settings(), channels=FAST)
    auth, agent, channel = await setup(client, dovecot, user="desk@example.com")
    raw, msg_id = mail_with_files("Two files.", FILES[:2])
    dovecot.deliver("desk@example.com", raw)
    assert await read_now(client) == 1
    before = await kept_files(client)
    dovecot.deliver("desk@example.com", raw)  # another process, a crash before marking
    assert await read_now(client) == 1
    assert await kept_files(client) == before and len(before) == 3
    conv = await conversation_of(client, auth, agent["id"])
    assert len(conv["messages"][0]["attachments"]) == 2

    # A message never recorded leaves a folder too; the sweep takes it (once it is old
    # enough) and leaves what a conversation still lists.
    stray, stray_id = mail_with_files("Never recorded.", FILES[:1])
    files = files_of(client)
    await write_files(files, channel["id"], stray_id, parts_of(parsed(stray)))
    db = client.app[app_keys.db_key]
    assert await remove_orphan_folders(db, files, grace=3600) == 0  # too young yet
    assert await remove_orphan_folders(db, files, grace=0) == 1
    assert await kept_files(client) == before
    # A deleted conversation's files go with it.
    resp = await client.delete(f"/api/v1/conversations/{conv['id']}", headers=auth)
    assert resp.status == 200
    assert await kept_files(client) == []
    assert await remove_orphan_folders(db, files, grace=0) == 0
    assert stray_id != msg_id


async def test_a_flooding_senders_files_are_not_kept(make_client, dovecot, smtp_server):
    client = await make_client(
        smtp=smtp_server.settings(),
        channels=FAST,
        ratelimit={"channel_user_messages_per_minute": 1},
    )
    auth, agent, channel = await setup(client, dovecot, user="flood@example.com")
    for n in range(3):
        raw, _ = mail_with_files(f"Invoice {n}.", FILES[:1])
        dovecot.deliver("flood@example.com", raw)
    assert await read_now(client) == 1  # the others: past the sender's limit, not answered
    assert len(await kept_files(client)) == 2  # one folder: its file and its list


def parsed(raw: bytes):
    return email.message_from_bytes(raw, policy=email.policy.default)


async def test_hostile_attachments_are_bounded_and_never_a_path(tmp_path):
    hostile = [
        ("a.pdf", "application/pdf", b"1"),
        ("A.PDF", "application/pdf", b"2"),  # the same name on a case-blind disk
        ("a.pdf", "application/pdf", b"3"),
        ("\x00\x1b[31mred\u202e\u200bfdp.exe", "application/x-msdownload", b"4"),
        ("..", "text/plain", b"5"),
        ("C:\\Windows\\system.ini", "text/plain", b"6"),
        ("é" * 300, "text/plain", b"7"),
        *[(f"more-{n}.txt", "text/plain", b"m") for n in range(40)],
    ]
    raw, msg_id = mail_with_files("Many files.", hostile)
    files = LocalStore(tmp_path / "files")
    found = read_mail(raw, SHOP, keep=True)
    kept, wrote = await write_files(files, "ch_x", found.message_id, found.parts)
    names = [f.name for f in kept]
    assert len(names) == 10 and wrote
    assert names[:7] == [
        "a.pdf",
        "A (2).PDF",
        "a (3).pdf",
        "[31mredfdp.exe",
        "attachment.plain",
        "C:_Windows_system.ini",
        "é" * 100,
    ]
    folder = tmp_path / "files" / "mail" / folder_of("ch_x", msg_id)
    assert sorted(p.name for p in folder.iterdir()) == sorted([*names, MANIFEST])
    assert (folder / "a (3).pdf").read_bytes() == b"3"
    assert all(len(n.encode()) <= 210 for n in names)
    # Read again: the folder is there, nothing is written twice.
    again = read_mail(raw, SHOP, keep=True)
    assert await write_files(files, "ch_x", again.message_id, again.parts) == (kept, False)
    assert safe_name("", "image/png") == "attachment.png"
    assert safe_name(" . /etc/ ", "text/plain") == "_etc_"
    # An automatic message's files are never written.
    auto = parsed(raw)
    auto["Auto-Submitted"] = "auto-replied"
    skipped = read_mail(auto.as_bytes(), SHOP, keep=True)
    assert skipped.skipped and skipped.parts == ()
