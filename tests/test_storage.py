"""Files on the app's own storage (issue 37): data_dir on the SQLite pass, the PostgreSQL
database's chunks on the PostgreSQL pass. Every kind of file through the HTTP API, bad
uploads leaving nothing, pictures from before the storage, and the `[storage]` settings.
S3: tests/test_storage_s3.py; memory: tests/test_storage_memory.py."""

from __future__ import annotations

import os

import pytest

from agentsvc.api import app_keys
from agentsvc.config import ConfigError, load_settings
from agentsvc.ids import new_id, now_iso
from agentsvc.storage import write_all
from agentsvc.storage.database import DatabaseStore
from tests.support import pg
from tests.support.accounts import bearer, new_api_key
from tests.support.errors import assert_error
from tests.support.images import png
from tests.support.storage import (
    every_kind_round_trip,
    files_of,
    stored,
    stored_keys,
    upload_document,
)


async def test_every_kind_of_file_goes_in_comes_back_and_goes(client):
    auth = bearer(await new_api_key(client))
    assert files_of(client).kind == ("database" if pg.SERVER_URL else "local")

    async def listed(prefix: str) -> list[str]:
        return await stored_keys(client, prefix)

    await every_kind_round_trip(client, auth, listed)


async def test_the_database_keeps_files_in_chunks_of_256_kib(client):
    """A file in the database is rows of 256 KiB (the last shorter), written as they fill
    and read one at a time (the PostgreSQL pass's own store; on SQLite the same store on
    the same tables)."""
    db = client.app[app_keys.db_key]
    files = DatabaseStore(db)
    raw = os.urandom(720_000)
    pieces = [raw[i : i + 100_000] for i in range(0, len(raw), 100_000)]
    assert await write_all(files, "documents/doc_x/original", pieces) == len(raw)
    sizes = await db.reader.fetchall(
        "SELECT length(c.data) FROM stored_file_chunks c JOIN stored_files f"
        " ON f.upload_id = c.upload_id WHERE f.key = ? ORDER BY c.seq",
        ("documents/doc_x/original",),
    )
    assert [r[0] for r in sizes] == [262_144, 262_144, 720_000 - 2 * 262_144]
    reading = await files.open("documents/doc_x/original")
    got = [piece async for piece in reading.chunks()]
    assert b"".join(got) == raw and max(map(len, got)) == 262_144
    # Replaced under the same key: the old chunks go; a failed write leaves none behind.
    await write_all(files, "documents/doc_x/original", [b"new"])
    with pytest.raises(RuntimeError):
        async with files.writer("documents/doc_y/original") as out:
            await out.write(os.urandom(600_000))
            raise RuntimeError("the upload was cut off")
    assert await db.reader.fetchval("SELECT COUNT(*) FROM stored_file_chunks") == 1
    assert [f.key async for f in files.listing("documents/")] == ["documents/doc_x/original"]
    await files.delete_folder("documents/doc_x")
    assert await db.reader.fetchval("SELECT COUNT(*) FROM stored_files") == 0


async def test_refused_uploads_leave_nothing_stored(make_client):
    client = await make_client(knowledge={"max_document_mb": 0.01})
    auth = bearer(await new_api_key(client))
    resp = await client.post("/api/v1/agents", json={"name": "Shop"}, headers=auth)
    agent_id = (await resp.json())["data"]["id"]
    # Too large, an unreadable PDF, a type no document is read from, no text at all.
    resp = await upload_document(client, auth, agent_id, "big.txt", b"x " * 10_000, "text/plain")
    await assert_error(resp, 400, "FILE_TOO_LARGE", "file: the document is over 0.01 MB")
    resp = await upload_document(client, auth, agent_id, "bad.pdf", b"%PDF-1.4 junk", "")
    await assert_error(resp, 400, "VALIDATION_ERROR", "file: the PDF could not be read")
    resp = await upload_document(client, auth, agent_id, "x.exe", b"MZ", "application/x-dos")
    await assert_error(resp, 415, "UNSUPPORTED_MEDIA_TYPE", "file: unsupported type .exe")
    resp = await upload_document(client, auth, agent_id, "blank.txt", b"   \n", "text/plain")
    await assert_error(resp, 400, "VALIDATION_ERROR", "no text to index")
    assert await stored_keys(client) == []
    listed = await client.get(f"/api/v1/agents/{agent_id}/documents", headers=auth)
    assert (await listed.json())["data"] == []


async def test_downloads_answer_404_for_what_has_no_file(client):
    auth = bearer(await new_api_key(client))
    resp = await client.post("/api/v1/agents", json={"name": "Shop"}, headers=auth)
    agent_id = (await resp.json())["data"]["id"]
    resp = await client.post(
        f"/api/v1/agents/{agent_id}/documents",
        json={"title": "Returns", "content": "Returns are free."},
        headers=auth,
    )
    text_id = (await resp.json())["data"]["id"]
    resp = await client.get(f"/api/v1/documents/{text_id}/file", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND", "This document has no uploaded file")
    resp = await client.get("/api/v1/documents/doc_missing/file", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND", "Document not found")
    resp = await client.get("/api/v1/form-submissions/sub_missing/files/cv", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND", "Submission not found")
    resp = await client.get(f"/api/v1/documents/{text_id}/file")
    await assert_error(resp, 401, "UNAUTHORIZED")


async def test_a_submissions_field_without_a_file_is_not_found(client):
    from tests.support.storage import file_form, submit_file

    auth = bearer(await new_api_key(client))
    resp = await client.post("/api/v1/agents", json={"name": "Shop"}, headers=auth)
    tool_id = await file_form(client, auth, (await resp.json())["data"]["id"])
    sub_id = await submit_file(client, tool_id, b"%PDF-1.4 cv")
    for field in ("email", "nothing", "..", "cv%2F..%2F..%2Fsecret.key"):
        resp = await client.get(f"/api/v1/form-submissions/{sub_id}/files/{field}", headers=auth)
        await assert_error(resp, 404, "NOT_FOUND")
    # A file gone from the storage (deleted by hand) is a 404 in words, not an error.
    await files_of(client).delete(f"{sub_id}/cv.pdf")
    resp = await client.get(f"/api/v1/form-submissions/{sub_id}/files/cv", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND", "The file is no longer stored")


async def test_a_picture_kept_in_its_row_before_version_25_is_still_served(client):
    auth = bearer(await new_api_key(client))
    session = await client.get("/api/v1/auth/session", headers=auth)
    user_id = (await session.json())["data"]["user"]["id"]
    old = png(5, 5)
    avatar_id = new_id("avatar")
    async with client.app[app_keys.db_key].write() as tx:
        await tx.execute(
            "INSERT INTO avatars (id, user_id, content_type, image, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (avatar_id, user_id, "image/png", old, now_iso()),
        )
    resp = await client.get(f"/api/v1/avatars/{avatar_id}")
    assert resp.status == 200 and await resp.read() == old
    assert resp.headers["Content-Type"] == "image/png"
    # A new picture replaces it in the file storage.
    resp = await client.put(
        "/api/v1/me/avatar", data=png(2, 2), headers={**auth, "Content-Type": "image/png"}
    )
    new_id_ = (await resp.json())["avatarUrl"].rsplit("/", 1)[1]
    assert await stored(client, f"avatars/{new_id_}/image") == png(2, 2)
    await assert_error(await client.get(f"/api/v1/avatars/{avatar_id}"), 404, "NOT_FOUND")


# ── the [storage] settings ──────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("storage", "environ", "message"),
    [
        ({"url": "http://bucket"}, {}, "storage.url: must be empty (data_dir or the database)"),
        ({"url": "s3://Bad_Bucket"}, {}, "bucket 'Bad_Bucket' is not a valid S3 bucket name"),
        ({"url": "s3://ab"}, {}, "bucket 'ab' is not a valid S3 bucket name"),
        ({"url": "s3://key:secret@files"}, {}, "credentials go in access_key_id"),
        ({"url": "s3://files?x=1"}, {}, "must be s3://bucket/prefix, nothing else"),
        ({"url": "s3://files", "endpoint_url": "ftp://x"}, {}, "storage.endpoint_url: must be"),
        ({"url": "s3://files", "access_key_id": "k"}, {}, "access_key_id is set but"),
        ({"url": "s3://files", "secret_access_key": "s"}, {}, "secret_access_key is set but"),
        ({"url": "s3://files", "addressing_style": "dns"}, {}, "storage.addressing_style"),
        ({"url": "s3://files", "timeout_seconds": 0}, {}, "storage.timeout_seconds"),
        ({"url": "s3://files"}, {"AWS_ENDPOINT_URL": "nope"}, "(from AWS_ENDPOINT_URL)"),
        ({"url": "s3://files"}, {"AWS_ACCESS_KEY_ID": "k"}, "(from AWS_ACCESS_KEY_ID)"),
        ({"nope": 1}, {}, "storage.nope"),
    ],
)
def test_bad_storage_settings_stop_the_start_naming_the_key(storage, environ, message):
    with pytest.raises(ConfigError) as raised:
        load_settings(None, environ=environ, overrides={"storage": storage})
    assert message in str(raised.value)
    assert "secret" not in str(raised.value).replace("secret_access_key", "")


def test_the_aws_variables_fill_what_the_settings_leave_empty():
    environ = {
        "AWS_ACCESS_KEY_ID": "AKIA-ENV",
        "AWS_SECRET_ACCESS_KEY": "from-env",
        "AWS_SESSION_TOKEN": "token",
        "AWS_REGION": "eu-central-1",
        "AWS_DEFAULT_REGION": "us-west-2",
        "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:8333",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AGENTSVC_STORAGE_URL": "s3://files/agentsvc/",
    }
    storage = load_settings(None, environ=environ).storage
    assert (storage.bucket, storage.prefix) == ("files", "agentsvc/")
    assert storage.endpoint_url == "http://127.0.0.1:8333"  # the S3 one first
    assert storage.region == "eu-central-1"
    assert (storage.access_key_id, storage.secret_access_key) == ("AKIA-ENV", "from-env")
    assert storage.session_token == "token"
    # Settings win over the variables; keys given in the settings are never mixed with them.
    given = {
        "url": "s3://files",
        "region": "ap-south-1",
        "access_key_id": "A",
        "secret_access_key": "B",
    }
    storage = load_settings(None, environ=environ, overrides={"storage": given}).storage
    assert (storage.region, storage.access_key_id, storage.session_token) == ("ap-south-1", "A", "")
    # Without an s3:// url, the variables mean nothing here.
    assert load_settings(None, environ=environ | {"AGENTSVC_STORAGE_URL": ""}).storage.region == ""
