"""A test's look into the app's file storage (data_dir, the database or S3, whichever the
app was started on), through the storage's own interface."""

from __future__ import annotations

import base64
from typing import Any

from aiohttp import FormData

from agentsvc.api import app_keys
from agentsvc.storage import FileMissing, FileStore


def files_of(client) -> FileStore:
    """The running app's file storage."""
    return client.app[app_keys.files_key]


async def stored(client, key: str) -> bytes | None:
    """The bytes stored under `key`, or None."""
    try:
        reading = await files_of(client).open(key)
    except FileMissing:
        return None
    return b"".join([piece async for piece in reading.chunks()])


async def stored_keys(client, prefix: str = "") -> list[str]:
    """Every key stored under `prefix`."""
    return [found.key async for found in files_of(client).listing(prefix)]


# ── what the storage tests and the security matrix make ───────────────────────────────

FILE_FIELDS = [
    {"name": "email", "label": "E-mail", "type": "email"},
    {"name": "cv", "label": "CV", "type": "file"},
]


def data_url(raw: bytes, kind: str = "application/pdf", name: str = "cv.pdf") -> str:
    return f"data:{kind};name={name};base64,{base64.b64encode(raw).decode()}"


async def file_form(client, auth: dict, agent_id: str) -> str:
    """A client-mode form tool with a file field; its id."""
    resp = await client.post(
        "/api/v1/tools",
        json={
            "agentId": agent_id,
            "name": "resume",
            "description": "Collect a CV",
            "executionType": "form",
            "formSchema": {"fields": FILE_FIELDS},
            "formExecutionMode": "client",
            "formClientHandler": "saveLead",
        },
        headers=auth,
    )
    assert resp.status == 201, await resp.text()
    return (await resp.json())["id"]


async def submit_file(client, tool_id: str, raw: bytes, name: str = "cv.pdf") -> str:
    """A submission of the form with `raw` as its CV; its id."""
    resp = await client.post(
        "/api/v1/form-submissions/submit",
        json={
            "toolId": tool_id,
            "formData": {"email": "a@b.co", "cv": data_url(raw, name=name)},
            "fieldsCompleted": ["email", "cv"],
        },
    )
    assert resp.status == 200, await resp.text()
    return (await resp.json())["submissionId"]


def upload_form(name: str, data: Any, content_type: str) -> FormData:
    form = FormData()
    form.add_field("file", data, filename=name, content_type=content_type)
    return form


async def upload_document(client, auth: dict, agent_id: str, name: str, data: Any, kind: str):
    """POST a multipart upload of a document; the response."""
    return await client.post(
        f"/api/v1/agents/{agent_id}/documents", data=upload_form(name, data, kind), headers=auth
    )


async def uploaded_document(client, auth: dict, agent_id: str, name: str, data: Any, kind: str):
    """A document made of an uploaded file; its id."""
    resp = await upload_document(client, auth, agent_id, name, data, kind)
    assert resp.status == 201, await resp.text()
    return (await resp.json())["data"]["id"]


# For tests/test_security_matrix.py: the download routes of stored files.
SECURITY_ROUTES: dict[tuple[str, str], tuple[Any, Any]] = {
    ("GET", "/api/v1/documents/{id}/file"): ("uploaded_document", None),
    ("GET", "/api/v1/form-submissions/{id}/files/{field}"): (
        ("file_submission", "file_field"),
        None,
    ),
}


async def furnish(client, auth: dict, ids: dict[str, str]) -> None:
    """A document uploaded as a file and a submission with a file (of an agent of their
    own), for the matrix."""
    resp = await client.post("/api/v1/agents", json={"name": "Files"}, headers=auth)
    assert resp.status == 201, await resp.text()
    agent_id = (await resp.json())["data"]["id"]
    ids["uploaded_document"] = await uploaded_document(
        client, auth, agent_id, "handbook.txt", b"Refunds take five days.", "text/plain"
    )
    tool_id = await file_form(client, auth, agent_id)
    ids["file_submission"] = await submit_file(client, tool_id, b"%PDF-1.4 my cv")
    ids["file_field"] = "cv"


async def _download(client, auth: dict, path: str) -> tuple[bytes, Any]:
    resp = await client.get(path, headers=auth)
    assert resp.status == 200, await resp.text()
    return await resp.read(), resp.headers


async def every_kind_round_trip(client, auth: dict, listed: Listed) -> None:
    """A form's file, two uploaded documents and a picture go in through the API, come back
    byte for byte, and go from the storage (`listed(prefix)`: its keys) when deleted."""
    from tests.support.fakes.pdf import make_pdf
    from tests.support.images import png

    resp = await client.post("/api/v1/agents", json={"name": "Shop"}, headers=auth)
    agent_id = (await resp.json())["data"]["id"]
    # A form's file, downloaded by the team with the name it was sent with.
    cv = bytes(range(256)) * 40
    sub_id = await submit_file(client, await file_form(client, auth, agent_id), cv, "my cv.pdf")
    assert await listed(f"{sub_id}/") == [f"{sub_id}/cv.pdf"]
    got, headers = await _download(client, auth, f"/api/v1/form-submissions/{sub_id}/files/cv")
    assert got == cv and headers["Content-Type"] == "application/pdf"
    assert headers["Content-Disposition"].endswith("filename*=UTF-8''my%20cv.pdf")
    assert headers["X-Content-Type-Options"] == "nosniff"
    # Knowledge uploads: kept as they came, their text indexed.
    text = b"# Returns\n\nReturns are free within 30 days."
    pdf = make_pdf([["Warranty", "Every kettle carries a two year warranty."]])
    txt_id = await uploaded_document(client, auth, agent_id, "returns.md", text, "text/markdown")
    pdf_id = await uploaded_document(client, auth, agent_id, "warranty.pdf", pdf, "application/pdf")
    for doc_id, raw in ((txt_id, text), (pdf_id, pdf)):
        assert await listed(f"documents/{doc_id}/") == [f"documents/{doc_id}/original"]
        got, headers = await _download(client, auth, f"/api/v1/documents/{doc_id}/file")
        assert got == raw
    assert headers["Content-Type"] == "application/pdf"
    # A picture, served to anyone, replaced and removed.
    first = png(3, 3)
    resp = await client.put(
        "/api/v1/me/avatar", data=first, headers={**auth, "Content-Type": "image/png"}
    )
    avatar_url = (await resp.json())["avatarUrl"]
    avatar_id = avatar_url.rsplit("/", 1)[1]
    assert await listed(f"avatars/{avatar_id}/") == [f"avatars/{avatar_id}/image"]
    resp = await client.get(f"/api/v1/avatars/{avatar_id}")
    assert resp.status == 200 and await resp.read() == first
    resp = await client.put(
        "/api/v1/me/avatar", data=png(4, 4), headers={**auth, "Content-Type": "image/png"}
    )
    assert resp.status == 200
    assert await listed(f"avatars/{avatar_id}/") == []  # the replaced picture is gone
    assert (await client.delete("/api/v1/me/avatar", headers=auth)).status == 200
    assert await listed("avatars/") == []
    # A deleted document's file goes with it.
    assert (await client.delete(f"/api/v1/documents/{txt_id}", headers=auth)).status == 200
    assert await listed(f"documents/{txt_id}/") == []
    resp = await client.get(f"/api/v1/documents/{txt_id}/file", headers=auth)
    assert resp.status == 404
    # An agent deleted: its submission's and document's files go with the hourly sweep.
    assert (await client.delete(f"/api/v1/agents/{agent_id}", headers=auth)).status == 200
    from agentsvc.services.files_sweep import sweep_files

    assert await sweep_files(client.app[app_keys.db_key], files_of(client), grace=0) == 2
    assert await listed("") == []


Listed = Any  # async (prefix) -> list of keys
