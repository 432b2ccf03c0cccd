"""A large file moves with bounded memory (issue 37): a 40 MiB document uploaded through
the HTTP API and downloaded again, on the pass's own store (data_dir, or PostgreSQL's
chunks) and on S3, and copied between stores, while Python's own allocations (tracemalloc:
the app, its storage clients and the test's HTTP client, all in this process) stay under
a few MiB: the file is never whole in memory, on the way in or out."""

from __future__ import annotations

import hashlib
import tracemalloc

import pytest

from agentsvc.storage.copying import copy_files
from agentsvc.storage.database import DatabaseStore
from agentsvc.storage.local import LocalStore
from tests.support.accounts import bearer, new_api_key
from tests.support.fakes.pdf import make_pdf, write_big_pdf
from tests.support.storage import upload_document

# It measures the process's memory: it runs alone (tests/conftest.py).
pytestmark = pytest.mark.needs_the_machine

FILLER = 40 * 2**20
PREFIX = "agentsvc"
# What a transfer may allocate at its peak, whatever the file's size: S3's part (5 MiB,
# held while it is sent) and a few chunks of 256 KiB. The file is 40 MiB.
BOUND = 12 * 2**20


def measured_peak() -> int:
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    return peak


async def upload_and_download(client, tmp_path) -> tuple[int, int]:
    """The peaks of a big PDF's upload and of its download (in bytes over the start)."""
    auth = bearer(await new_api_key(client))
    resp = await client.post("/api/v1/agents", json={"name": "Shop"}, headers=auth)
    agent_id = (await resp.json())["data"]["id"]
    # Once small, so that what loads on first use (pypdf, the S3 client's parsers) is loaded.
    small = make_pdf([["Warm-up."]])
    resp = await upload_document(client, auth, agent_id, "small.pdf", small, "application/pdf")
    warm = (await resp.json())["data"]["id"]
    assert (
        await (await client.get(f"/api/v1/documents/{warm}/file", headers=auth)).read()
    ) == small
    path = tmp_path / "manual.pdf"
    size = write_big_pdf(path, FILLER, ["Warranty", "Every kettle carries a two year warranty."])
    digest = hashlib.sha256(path.read_bytes()).hexdigest()

    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        with open(path, "rb") as sent:  # the test's client streams it from the disk
            resp = await upload_document(
                client, auth, agent_id, "manual.pdf", sent, "application/pdf"
            )
        assert resp.status == 201, await resp.text()
        doc = (await resp.json())["data"]
        uploading = measured_peak() - base
        resp = await client.get(f"/api/v1/documents/{doc['id']}/file", headers=auth)
        assert resp.status == 200 and resp.content_length == size
        got, received = hashlib.sha256(), 0
        async for piece in resp.content.iter_chunked(64 * 1024):
            got.update(piece)
            received += len(piece)
        downloading = measured_peak() - base
    finally:
        tracemalloc.stop()
    assert received == size and got.hexdigest() == digest
    assert doc["sizeBytes"] == size and doc["passageCount"] >= 1
    up, down = uploading / 2**20, downloading / 2**20
    print(f"{size / 2**20:.0f} MiB: up {up:.2f} MiB, down {down:.2f} MiB")
    return uploading, downloading


async def test_a_large_file_moves_with_bounded_memory_on_the_own_store(make_client, tmp_path):
    client = await make_client(knowledge={"max_document_mb": 64})
    uploading, downloading = await upload_and_download(client, tmp_path)
    assert uploading < BOUND and downloading < BOUND, (uploading, downloading)


async def test_a_large_file_moves_with_bounded_memory_on_s3(make_client, tmp_path, s3_server):
    storage = s3_server.settings(s3_server.bucket(), PREFIX)
    client = await make_client(knowledge={"max_document_mb": 64}, storage=storage)
    uploading, downloading = await upload_and_download(client, tmp_path)
    assert uploading < BOUND and downloading < BOUND, (uploading, downloading)


async def test_copying_a_large_file_between_stores_holds_a_chunk_at_a_time(client, tmp_path):
    """data_dir into the database (what copy-data does), 40 MiB in 256 KiB rows."""
    from agentsvc.api import app_keys

    local = LocalStore(tmp_path / "files")
    path = local.path("sub_big/manual.pdf")
    path.parent.mkdir(parents=True)
    write_big_pdf(path, FILLER, ["Big."])
    into = DatabaseStore(client.app[app_keys.db_key])
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        done = await copy_files(local, into)
        copying = measured_peak() - base
    finally:
        tracemalloc.stop()
    assert (done.files, done.bytes) == (1, path.stat().st_size)
    print(f"copied {done.bytes / 2**20:.0f} MiB holding at most {copying / 2**20:.2f} MiB")
    assert copying < 4 * 2**20, copying
    reading = await into.open("sub_big/manual.pdf")
    digest = hashlib.sha256()
    async for piece in reading.chunks():
        digest.update(piece)
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
