"""Files in an S3-compatible store (issue 37), against a real S3 server on 127.0.0.1 that
checks every signature (tests/support/s3.py): every kind of file through the HTTP API, in
parts as S3 wants them, deleted with what they belong to; wrong credentials, a missing
bucket and an unreachable endpoint stop the start in words; a store lost while running
answers 503 in plain words, the reason in the log; files left in data_dir move in."""

from __future__ import annotations

import logging

import pytest
from aiohttp import web

from agentsvc.api import app_keys
from agentsvc.app import create_app
from agentsvc.cli import main
from agentsvc.storage import StorageError
from tests.support.accounts import bearer, new_api_key
from tests.support.cli import free_port
from tests.support.errors import assert_error
from tests.support.images import png
from tests.support.s3 import S3Server
from tests.support.settings import make_settings, with_new_database
from tests.support.storage import every_kind_round_trip, stored, upload_document

PREFIX = "agentsvc"


async def test_every_kind_of_file_goes_in_comes_back_and_goes(make_client, s3_server):
    bucket = s3_server.bucket()
    client = await make_client(storage=s3_server.settings(bucket, PREFIX))
    assert client.app[app_keys.files_key].kind == "s3"
    auth = bearer(await new_api_key(client))

    async def listed(prefix: str) -> list[str]:
        # What the S3 server itself holds, under the instance's prefix.
        keys = s3_server.keys(bucket, f"{PREFIX}/{prefix}")
        return [k.removeprefix(f"{PREFIX}/") for k in keys]

    await every_kind_round_trip(client, auth, listed)
    assert s3_server.keys(bucket) == []


async def test_a_large_upload_goes_up_in_parts_of_5_mib(make_client, s3_server):
    """The chunks observed at the server: a 12 MiB document arrives as a multipart upload
    of three parts (5, 5 and 2 MiB), each sent as it filled."""
    bucket = s3_server.bucket()
    client = await make_client(
        storage=s3_server.settings(bucket, PREFIX), knowledge={"max_document_mb": 16}
    )
    auth = bearer(await new_api_key(client))
    resp = await client.post("/api/v1/agents", json={"name": "Shop"}, headers=auth)
    agent_id = (await resp.json())["data"]["id"]
    raw = (b"Returns are free within thirty days of delivery. " * 260_000)[: 12 * 2**20]
    resp = await upload_document(client, auth, agent_id, "returns.txt", raw, "text/plain")
    assert resp.status == 201, await resp.text()
    doc_id = (await resp.json())["data"]["id"]
    key = f"{PREFIX}/documents/{doc_id}/original"
    s3 = s3_server.s3()
    head = s3.head_object(Bucket=bucket, Key=key)
    assert head["ContentLength"] == len(raw)
    assert head["ETag"].strip('"').endswith("-3")  # S3's mark of a three-part upload
    parts = [
        s3.head_object(Bucket=bucket, Key=key, PartNumber=n)["ContentLength"] for n in (1, 2, 3)
    ]
    assert parts == [5 * 2**20, 5 * 2**20, 2 * 2**20]
    resp = await client.get(f"/api/v1/documents/{doc_id}/file", headers=auth)
    assert resp.status == 200 and await resp.read() == raw


async def test_an_erased_end_users_files_leave_the_bucket(make_client, s3_server):
    from tests.support.storage import file_form, submit_file

    bucket = s3_server.bucket()
    client = await make_client(storage=s3_server.settings(bucket, PREFIX))
    auth = bearer(await new_api_key(client))
    resp = await client.post("/api/v1/agents", json={"name": "Shop"}, headers=auth)
    tool_id = await file_form(client, auth, (await resp.json())["data"]["id"])
    resp = await client.post(
        "/api/v1/form-submissions/submit",
        json={
            "toolId": tool_id,
            "formData": {"email": "erin@example.com", "cv": "data:application/pdf;base64,JVBERg=="},
            "fieldsCompleted": ["email", "cv"],
        },
    )
    erin = (await resp.json())["submissionId"]
    bob = await submit_file(client, tool_id, b"%PDF bob")
    assert len(s3_server.keys(bucket)) == 2
    resp = await client.delete("/api/v1/end-users/erin@example.com", headers=auth)
    assert (await resp.json())["data"]["deleted"]["files"] == 1
    assert s3_server.keys(bucket) == [f"{PREFIX}/{bob}/cv.pdf"]
    assert erin != bob


# ── what goes wrong, said in words ──────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"secret_access_key": "wrong"}, "the secret access key does not match the access key id"),
        ({"access_key_id": "AKIANOBODY"}, "does not know the access key id AKIANOBODY"),
        ({"url": "s3://no-such-bucket/x"}, "bucket 'no-such-bucket' does not exist at http://"),
        ({"endpoint_url": "unreachable"}, "cannot reach http://127.0.0.1:"),
    ],
)
async def test_a_store_that_cannot_be_used_stops_the_start_in_words(
    tmp_path, s3_server, change, words
):
    storage = s3_server.settings(s3_server.bucket(), PREFIX)
    if change.get("endpoint_url") == "unreachable":
        change = {"endpoint_url": f"http://127.0.0.1:{free_port()}", "timeout_seconds": 2}
    settings = with_new_database(make_settings(tmp_path, storage={**storage, **change}))
    runner = web.AppRunner(create_app(settings))
    try:
        with pytest.raises(StorageError) as raised:
            await runner.setup()
    finally:
        await runner.cleanup()  # the database opened before the storage failed
    message = str(raised.value)
    assert message.startswith("cannot use s3://") and words in message, message
    assert "botocore" not in message and "ClientError" not in message
    assert storage["secret_access_key"] not in message


def test_serve_says_why_the_store_cannot_be_used_in_one_line(tmp_path, s3_server, capsys):
    storage = s3_server.settings("no-such-bucket", PREFIX)
    config = tmp_path / "agentsvc.toml"
    lines = ["[storage]", *[f'{k} = "{v}"' for k, v in storage.items()]]
    config.write_text("\n".join(lines) + "\n")
    status = main(
        ["serve", "--config", str(config), "--data-dir", str(tmp_path / "d"), "--port", "0"]
    )
    err = capsys.readouterr().err.strip()
    assert status == 1
    assert err.splitlines()[-1] == (
        "agentsvc: cannot use s3://no-such-bucket/agentsvc/: bucket 'no-such-bucket' does not"
        f" exist at {s3_server.endpoint}; create it"
    )


async def test_a_store_lost_while_running_answers_503_in_plain_words(make_client, caplog):
    server = S3Server().start()  # this test's own: it is stopped half-way
    try:
        client = await make_client(
            storage=server.settings(server.bucket(), PREFIX, timeout_seconds=2)
        )
        auth = bearer(await new_api_key(client))
        resp = await client.post("/api/v1/agents", json={"name": "Shop"}, headers=auth)
        agent_id = (await resp.json())["data"]["id"]
        resp = await client.put(
            "/api/v1/me/avatar", data=png(), headers={**auth, "Content-Type": "image/png"}
        )
        avatar_path = "/api/v1/avatars/" + (await resp.json())["avatarUrl"].rsplit("/", 1)[1]
    finally:
        server.stop()
    with caplog.at_level(logging.ERROR, logger="agentsvc.storage"):
        resp = await upload_document(client, auth, agent_id, "a.txt", b"Returns.", "text/plain")
        error = await assert_error(resp, 503, "STORAGE_UNAVAILABLE")
        assert error["message"] == "Files cannot be stored or read right now; try again shortly"
        await assert_error(await client.get(avatar_path), 503, "STORAGE_UNAVAILABLE")
    logged = [r.getMessage() for r in caplog.records if r.name == "agentsvc.storage"]
    assert any(f"cannot reach {server.endpoint}" in line for line in logged), logged
    listed = await client.get(f"/api/v1/agents/{agent_id}/documents", headers=auth)
    assert (await listed.json())["data"] == []  # nothing half-made


async def test_files_left_in_data_dir_move_into_the_bucket_at_start(
    make_client, s3_server, tmp_path
):
    """An instance that kept its files in data_dir (an earlier version, or before
    [storage] url was set) finds them in the bucket after its start."""
    old = tmp_path / "data" / "files" / "sub_old" / "cv.pdf"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"%PDF from before")
    bucket = s3_server.bucket()
    client = await make_client(storage=s3_server.settings(bucket, PREFIX))
    for _ in range(100):
        if not old.exists():
            break
        await __import__("asyncio").sleep(0.05)
    assert not old.exists()
    assert s3_server.keys(bucket) == [f"{PREFIX}/sub_old/cv.pdf"]
    assert await stored(client, "sub_old/cv.pdf") == b"%PDF from before"
