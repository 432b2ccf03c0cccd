"""No live token at rest: magic-link and invitation tokens appear nowhere in the database
file, whatever the mail path; the data directory is 0700 and the database files 0600."""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from pathlib import Path

import pytest

from agentsvc.api import app_keys
from agentsvc.db.migrations import schema_at, schema_version
from tests.support import pg
from tests.support.accounts import bearer, create_user, key_for
from tests.support.pg import stored_bytes
from tests.support.settings import make_settings

TOKEN = re.compile(r"[?&]token=([\w-]+)")


def db_files(data_dir: Path) -> list[Path]:
    return [p for p in data_dir.iterdir() if p.name.startswith("agentsvc.db")]


def table_values(db_path: Path) -> list[tuple[str, str, object]]:
    """Every value of every column of every table, read from the file by a plain client."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        tables = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not r[0].startswith("sqlite_")
        ]
        out = []
        for table in tables:
            cursor = conn.execute(f'SELECT * FROM "{table}"')  # noqa: S608 (names from the file)
            names = [d[0] for d in cursor.description]
            for row in cursor:
                out.extend((table, name, value) for name, value in zip(names, row, strict=True))
        return out
    finally:
        conn.close()


def assert_nowhere(data_dir: Path, secret: str) -> None:
    """The secret is in no column of any table, nor anywhere in the files' bytes."""
    needle = secret.encode()
    for table, column, value in table_values(data_dir / "agentsvc.db"):
        raw = value if isinstance(value, bytes) else str(value).encode()
        assert needle not in raw, f"token found in {table}.{column}"
    for path in db_files(data_dir):
        assert needle not in path.read_bytes(), f"token found in the bytes of {path.name}"


async def send_link_and_invitation(client) -> None:
    """A magic link to an existing user and an invitation to a new address."""
    owner, team = await create_user(client, "owner@example.com", name="Olivia")
    auth = bearer(await key_for(client, team.id, owner.id))
    resp = await client.post(
        "/api/v1/auth/magic-link",
        json={"email": "owner@example.com", "callbackUrl": "/dashboard"},
    )
    assert resp.status == 200, await resp.text()
    resp = await client.post(
        "/api/v1/team/invite", json={"email": "new@example.com", "role": "member"}, headers=auth
    )
    assert resp.status == 201, await resp.text()
    await client.app[app_keys.mailer_key].drain()


async def prove_tokens_work(client, magic: str, invitation: str) -> None:
    """The tokens looked for are the live ones: each still does its job once."""
    resp = await client.get(f"/api/v1/auth/magic-link/verify?token={magic}", allow_redirects=False)
    assert resp.status == 303
    client.session.cookie_jar.clear()
    resp = await client.post(
        "/api/v1/team/invitations/accept",
        json={"token": invitation, "password": "a new password", "name": "Nina"},
    )
    assert resp.status == 200, await resp.text()


@pytest.mark.parametrize("mail_path", ["smtp", "no smtp (outbox)", "smtp refuses (outbox)"])
async def test_magic_link_and_invitation_tokens_are_not_stored_in_clear(
    make_client, smtp_server, tmp_path, mail_path
):
    if mail_path == "smtp":
        client = await make_client(smtp=smtp_server.settings())
    elif mail_path == "no smtp (outbox)":
        client = await make_client()
    else:
        smtp_server.fail = True
        client = await make_client(smtp=smtp_server.settings())
    await send_link_and_invitation(client)

    if mail_path == "smtp":
        mails = await smtp_server.wait_for(2)
        texts = {m.rcpt_tos[0]: m.text for m in mails}
        assert await client.app[app_keys.mailer_key].kept() == []
    else:
        kept = await client.app[app_keys.mailer_key].kept()
        texts = {m.to_address: m.body for m in kept}  # opened with the instance's key
        assert len(kept) == 2
    magic = TOKEN.search(texts["owner@example.com"]).group(1)
    invitation = TOKEN.search(texts["new@example.com"]).group(1)

    data_dir = tmp_path / "data"
    for token in (magic, invitation):
        if pg.SERVER_URL:
            assert token.encode() not in await stored_bytes(client.app)
        else:
            assert_nowhere(data_dir, token)
    await prove_tokens_work(client, magic, invitation)


async def test_outbox_body_is_sealed_and_bound_to_its_row(client):
    mailer = client.app[app_keys.mailer_key]
    await mailer.send("ada@example.com", "Hello", "Open http://x/?token=abc123def456\n")
    await mailer.send("bob@example.com", "Hello", "Open http://x/?token=zzz999yyy888\n")
    db = client.app[app_keys.db_key]
    rows = await db.reader.fetchall("SELECT id, sealed_body FROM mail_outbox ORDER BY to_address")
    assert all(body.startswith("v1:") and "token" not in body for _, body in rows)
    # A sealed body copied onto another row does not open there.
    async with db.write() as conn:
        await conn.execute(
            "UPDATE mail_outbox SET sealed_body = ? WHERE id = ?", (rows[0][1], rows[1][0])
        )
    by_address = {m.to_address: m.body for m in await mailer.kept()}
    assert by_address["ada@example.com"] == "Open http://x/?token=abc123def456\n"
    assert by_address["bob@example.com"].startswith("(this message cannot be decrypted")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pg.sqlite_only
async def test_data_dir_is_created_0700_and_database_files_0600(make_client, tmp_path):
    previous = os.umask(0o022)  # the usual umask: without care, files would be 0644
    try:
        # Settings given as they are: the app itself creates the directory and the database.
        client = await make_client(make_settings(tmp_path))
        await create_user(client, "ada@example.com")  # a write: the WAL exists
        await client.app[app_keys.mailer_key].send("ada@example.com", "Hi", "body")
        data_dir = tmp_path / "data"
        assert _mode(data_dir) == 0o700
        names = {p.name for p in db_files(data_dir)}
        assert {"agentsvc.db", "agentsvc.db-wal", "agentsvc.db-shm"} <= names
        for path in db_files(data_dir):
            assert _mode(path) == 0o600, path.name
        assert _mode(data_dir / "secret.key") == 0o600
    finally:
        os.umask(previous)


@pg.sqlite_only
async def test_existing_database_files_are_made_0600(make_client, tmp_path, caplog):
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o755)
    os.chmod(data_dir, 0o755)  # noqa: S103 (an operator's loose directory)
    client = await make_client()
    await create_user(client, "ada@example.com")
    await client.close()
    db_path = data_dir / "agentsvc.db"
    os.chmod(db_path, 0o644)  # as an earlier version left it

    client = await make_client()
    assert _mode(db_path) == 0o600
    for path in db_files(data_dir):
        assert _mode(path) == 0o600, path.name
    # An existing directory is the operator's: left as it is, with a warning.
    assert _mode(data_dir) == 0o755
    assert "other users may list it" in caplog.text


def _v1_database(path: Path, link: str) -> None:
    """A database as version 1 left it: an outbox body and a conversation user in clear."""
    path.parent.mkdir(mode=0o700, parents=True)
    conn = sqlite3.connect(path)
    conn.executescript(schema_at(1))
    with conn:
        conn.execute(
            "INSERT INTO mail_outbox VALUES (?, ?, ?, ?, ?, ?)",
            (
                "mail_old",
                "new@example.com",
                "You are invited",
                f"Accept: {link}\n" * 20,  # long enough to spill into an overflow page
                "no SMTP configured",
                "2026-01-01T00:00:00.000Z",
            ),
        )
        conn.execute(
            "INSERT INTO conversations (id, agent_id, team_id, title, user_ref, user_email,"
            " user_name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ("conv_old", "agt_x", "team_x", "Hi", "u-1", "a@example.com", "Ada", "t", "t"),
        )
    conn.close()


def _columns(db_path: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(db_path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: conn.execute(f'PRAGMA table_info("{t}")').fetchall() for t in sorted(tables)}
    finally:
        conn.close()


@pg.sqlite_only
async def test_upgrade_removes_links_kept_in_clear_and_matches_the_current_schema(
    aiohttp_client, tmp_path
):
    from agentsvc.app import create_app

    token = "old-invitation-token-0123456789abcdef"
    old = tmp_path / "old"
    _v1_database(
        old / "data" / "agentsvc.db", f"http://127.0.0.1:8080/accept-invitation?token={token}"
    )
    assert token.encode() in (old / "data" / "agentsvc.db").read_bytes()

    client = await aiohttp_client(create_app(make_settings(old)))
    db = client.app[app_keys.db_key]
    assert (await db.reader.fetchall("PRAGMA user_version"))[0][0] == schema_version()
    (kept,) = await client.app[app_keys.mailer_key].kept()
    assert (kept.to_address, kept.subject, kept.body) == ("new@example.com", "You are invited", "")
    rows = await db.reader.fetchall(
        "SELECT user_ref, user_verified_by FROM conversations WHERE id = 'conv_old'"
    )
    assert [tuple(r) for r in rows] == [("u-1", None)]  # recorded before the check: unverified
    await client.close()  # checkpoints the WAL into the file
    assert_nowhere(old / "data", token)

    fresh = tmp_path / "fresh"
    client = await aiohttp_client(create_app(make_settings(fresh)))
    await client.close()
    assert _columns(old / "data" / "agentsvc.db") == _columns(fresh / "data" / "agentsvc.db")
