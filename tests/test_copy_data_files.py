"""`agentsvc copy-data` moves the files too (issue 37): a SQLite instance's form files,
uploaded documents, pictures and e-mails' attachments, from its data_dir into the
PostgreSQL database, or into S3 with `--storage-to`; the moved instance serves them byte for
byte. A store that cannot be used stops the copy before any row is copied. PostgreSQL side
only, as copy-data is."""

from __future__ import annotations

import pytest

from agentsvc.app import create_app
from agentsvc.config import load_settings
from tests.support import pg
from tests.support.accounts import bearer, new_api_key
from tests.support.cli import free_port, run
from tests.support.email_channel import furnish_attachment
from tests.support.fakes.pdf import make_pdf
from tests.support.images import png
from tests.support.storage import file_form, submit_file, uploaded_document

pytestmark = pytest.mark.skipif(not pg.SERVER_URL, reason="needs the test PostgreSQL")

CV = b"%PDF-1.4 " + bytes(range(256)) * 100


def settings_for(data_dir, url: str = "", storage: dict | None = None):
    overrides = {
        "server": {"data_dir": str(data_dir), "port": 0, "secret_key": "copy-secret"},
        "outbound": {"allow_private": True},
        "database": {"url": url},
        "storage": storage or {},
    }
    return load_settings(None, environ={}, overrides=overrides)


async def sqlite_instance(aiohttp_client, data_dir) -> tuple[dict, dict]:
    """A SQLite instance with one file of every kind; the key and the API paths of each."""
    client = await aiohttp_client(create_app(settings_for(data_dir)))
    auth = bearer(await new_api_key(client))
    resp = await client.post("/api/v1/agents", json={"name": "Shop"}, headers=auth)
    agent_id = (await resp.json())["data"]["id"]
    sub_id = await submit_file(client, await file_form(client, auth, agent_id), CV)
    pdf = make_pdf([["Warranty", "Two years."]])
    doc_id = await uploaded_document(client, auth, agent_id, "w.pdf", pdf, "application/pdf")
    resp = await client.put(
        "/api/v1/me/avatar", data=png(), headers={**auth, "Content-Type": "image/png"}
    )
    avatar = (await resp.json())["avatarUrl"].split("/api/v1", 1)[1]
    conv_id, attachment_id = await furnish_attachment(client, auth, agent_id)
    await client.close()
    paths = {
        f"/form-submissions/{sub_id}/files/cv": CV,
        f"/documents/{doc_id}/file": pdf,
        avatar: png(),
        f"/conversations/{conv_id}/attachments/{attachment_id}": b"%PDF",
    }
    return auth, paths


async def serves(aiohttp_client, settings, auth: dict, paths: dict) -> None:
    client = await aiohttp_client(create_app(settings))
    for path, raw in paths.items():
        resp = await client.get(f"/api/v1{path}", headers=auth)
        assert resp.status == 200 and await resp.read() == raw, path
    await client.close()


async def test_copy_data_moves_the_files_into_the_database(aiohttp_client, tmp_path):
    data_dir = tmp_path / "data"
    auth, paths = await sqlite_instance(aiohttp_client, data_dir)
    url = pg.fresh_database_url()
    done = run(["copy-data", "--to", url, "--data-dir", str(data_dir)], tmp_path)
    assert done.returncode == 0, done.stderr
    # A form file, a document, a picture, an e-mail's file and its folder's list.
    assert "every table's count matches; 5 files (" in done.stdout
    assert done.stdout.rstrip().endswith("bytes) into the database")
    await serves(aiohttp_client, settings_for(data_dir, url), auth, paths)


async def test_copy_data_moves_the_files_into_s3(aiohttp_client, tmp_path, s3_server):
    data_dir = tmp_path / "data"
    auth, paths = await sqlite_instance(aiohttp_client, data_dir)
    url, bucket = pg.fresh_database_url(), s3_server.bucket()
    storage = s3_server.settings(bucket, "moved")
    # The endpoint, region and credentials as AWS's own variables.
    aws = {
        "AWS_ENDPOINT_URL": storage["endpoint_url"],
        "AWS_REGION": storage["region"],
        "AWS_ACCESS_KEY_ID": storage["access_key_id"],
        "AWS_SECRET_ACCESS_KEY": storage["secret_access_key"],
    }
    args = ["copy-data", "--to", url, "--storage-to", storage["url"], "--data-dir", str(data_dir)]
    done = run(args, tmp_path, **aws)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith(f"bytes) into {storage['url']}")
    assert len(s3_server.keys(bucket, "moved/")) == 5
    await serves(aiohttp_client, settings_for(data_dir, url, storage), auth, paths)


async def test_copy_data_stops_before_any_row_when_a_store_cannot_be_used(
    aiohttp_client, tmp_path, s3_server
):
    data_dir = tmp_path / "data"
    await sqlite_instance(aiohttp_client, data_dir)
    url = pg.fresh_database_url()
    nowhere = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
        "AWS_ACCESS_KEY_ID": "AKIA",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AGENTSVC_STORAGE_TIMEOUT_SECONDS": "2",
    }
    args = ["copy-data", "--to", url, "--storage-to", "s3://files/x", "--data-dir", str(data_dir)]
    done = run(args, tmp_path, **nowhere)
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("agentsvc: cannot use s3://files/x/: cannot reach http://127.0.0.1:")
    )
    # The target is still empty: a later copy may be made into it.
    done = run(["copy-data", "--to", url, "--data-dir", str(data_dir)], tmp_path)
    assert done.returncode == 0, done.stderr
    bad = run(["copy-data", "--to", url, "--storage-to", "http://x", "--data-dir", "d"], tmp_path)
    assert bad.returncode == 2
    assert "--storage-to: must be empty (data_dir or the database) or s3://" in bad.stderr
