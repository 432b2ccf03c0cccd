"""Knowledge documents API: text, uploads, URLs, limits, scoping, cascade, background indexing."""

from __future__ import annotations

from aiohttp import FormData, MultipartWriter, web

from agentsvc.api import app_keys
from agentsvc.ids import new_id, now_iso
from agentsvc.services.knowledge import retrieval
from agentsvc.services.team import accounts as accounts_service
from agentsvc.store import accounts
from tests.support.accounts import bearer, new_api_key
from tests.support.errors import assert_error
from tests.support.fakes.pdf import make_pdf
from tests.support.knowledge import wait_status

GUIDE = """# Shipping guide

## Delivery times
Standard parcels arrive within three to five working days. Express parcels arrive the next
working day when ordered before 2 pm.

## Returns
You can return any item within 30 days for a full refund. Print the prepaid label from your
account page and drop the parcel at any post office.
"""


# Passages the full-text index finds for "refund" (SQLite's FTS5 table, PostgreSQL's GIN).
INDEXED_REFUND = {
    "sqlite": "SELECT count(*) FROM passages_fts WHERE passages_fts MATCH 'refund'",
    "postgresql": "SELECT count(*) FROM passages WHERE search @@ to_tsquery('english', 'refund')",
}


async def make_agent(client, auth, name="Helper") -> str:
    resp = await client.post("/api/v1/agents", json={"name": name}, headers=auth)
    assert resp.status == 201, await resp.text()
    return (await resp.json())["data"]["id"]


async def add_text(client, auth, agent_id, title="Shipping guide", content=GUIDE) -> dict:
    resp = await client.post(
        f"/api/v1/agents/{agent_id}/documents",
        json={"title": title, "content": content},
        headers=auth,
    )
    assert resp.status == 201, await resp.text()
    body = await resp.json()
    assert body["error"] is None
    return body["data"]


def upload(filename: str, data: bytes, content_type: str, title: str | None = None) -> FormData:
    form = FormData()
    form.add_field("file", data, filename=filename, content_type=content_type)
    if title is not None:
        form.add_field("title", title)
    return form


async def post_form(client, auth, agent_id, form):
    return await client.post(f"/api/v1/agents/{agent_id}/documents", data=form, headers=auth)


async def test_text_document_lifecycle(client, auth):
    agent_id = await make_agent(client, auth)
    doc = await add_text(client, auth, agent_id)
    assert set(doc) == {
        "id", "agentId", "title", "sourceType", "format", "filename", "sourceUrl", "sourceId",
        "sizeBytes", "status", "error", "passageCount", "createdAt", "updatedAt",
    }  # fmt: skip
    assert doc["id"].startswith("doc_")
    assert doc["status"] == "ready" and doc["passageCount"] == 2
    assert (doc["sourceType"], doc["format"], doc["agentId"]) == ("text", "markdown", agent_id)
    assert doc["sizeBytes"] == len(GUIDE.encode())

    listed = await (await client.get(f"/api/v1/agents/{agent_id}/documents", headers=auth)).json()
    assert [d["id"] for d in listed["data"]] == [doc["id"]]
    got = (await (await client.get(f"/api/v1/documents/{doc['id']}", headers=auth)).json())["data"]
    assert got["content"].startswith("# Shipping guide") and got["title"] == "Shipping guide"

    hits = await retrieval.retrieve(
        client.app[app_keys.db_key], agent_id, "Can I return an item?", 3
    )
    assert hits[0].document_id == doc["id"] and "full refund" in hits[0].text
    assert hits[0].title == "Shipping guide" and hits[0].heading == "Shipping guide › Returns"

    resp = await client.delete(f"/api/v1/documents/{doc['id']}", headers=auth)
    assert (await resp.json())["data"] == {"id": doc["id"], "deleted": True}
    await assert_error(
        await client.get(f"/api/v1/documents/{doc['id']}", headers=auth), 404, "NOT_FOUND"
    )
    await assert_error(
        await client.delete(f"/api/v1/documents/{doc['id']}", headers=auth), 404, "NOT_FOUND"
    )
    assert await retrieval.retrieve(client.app[app_keys.db_key], agent_id, "refund", 3) == []


async def test_json_body_errors(client, auth):
    agent_id = await make_agent(client, auth)
    url = f"/api/v1/agents/{agent_id}/documents"
    cases = [
        ({"content": "text"}, "title: is required"),
        ({"title": "T"}, "content (with title) or url is required"),
        ({"title": "T", "content": "x", "url": "http://127.0.0.1/"}, "not both"),
        ({"title": "T", "content": "   \n "}, "content: the document has no text"),
        ({"title": "", "content": "x"}, "title"),
        ({"title": "T", "content": 5}, "content"),
        ({"title": "T", "content": "x", "extra": 1}, "extra: is not a known field"),
    ]
    for body, message in cases:
        await assert_error(
            await client.post(url, json=body, headers=auth), 400, "VALIDATION_ERROR", message
        )
    resp = await client.post(url, data=b"{not json", headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "malformed JSON")
    listed = await (await client.get(url, headers=auth)).json()
    assert listed["data"] == []


async def test_uploads_of_each_format(client, auth):
    agent_id = await make_agent(client, auth)
    md = await post_form(
        client, auth, agent_id, upload("guide.md", GUIDE.encode(), "text/markdown")
    )
    assert md.status == 201, await md.text()
    doc = (await md.json())["data"]
    assert (doc["title"], doc["format"], doc["filename"]) == (
        "Shipping guide",
        "markdown",
        "guide.md",
    )
    assert doc["sourceType"] == "file" and doc["passageCount"] == 2

    txt = upload("notes.txt", b"Opening hours are 9 to 5.\n\nClosed on Sundays.", "")
    resp = await post_form(client, auth, agent_id, txt)
    assert (await resp.json())["data"]["format"] == "text"

    html = b"""<html><head><title>Store hours</title><style>p {color: red}</style>
    <script>var secret = "do not index";</script></head>
    <body><nav><a href="/">Home</a></nav><h1>Hours</h1><p>We open at <b>nine</b> &amp; close
    at five.</p><ul><li>Closed on holidays</li></ul><script>alert(1)</script></body></html>"""
    resp = await post_form(client, auth, agent_id, upload("page.html", html, "text/html"))
    doc = (await resp.json())["data"]
    assert doc["title"] == "Store hours" and doc["format"] == "html"
    got = await (await client.get(f"/api/v1/documents/{doc['id']}", headers=auth)).json()
    content = got["data"]["content"]
    assert "# Hours" in content and "We open at nine & close at five." in content
    assert "- Closed on holidays" in content
    assert "secret" not in content and "color" not in content and "alert" not in content

    pdf = make_pdf([["Warranty", "Every kettle carries a two year warranty."], ["Page two."]])
    resp = await post_form(client, auth, agent_id, upload("w.pdf", pdf, "application/pdf", "W"))
    doc = (await resp.json())["data"]
    assert (doc["title"], doc["format"], doc["sizeBytes"]) == ("W", "pdf", len(pdf))
    hits = await retrieval.retrieve(client.app[app_keys.db_key], agent_id, "kettle warranty", 1)
    assert hits[0].document_id == doc["id"] and "two year warranty" in hits[0].text


async def test_upload_errors(make_client):
    client = await make_client(knowledge={"max_document_mb": 0.01})  # 10,485 bytes
    auth = bearer(await new_api_key(client))
    agent_id = await make_agent(client, auth)

    resp = await post_form(client, auth, agent_id, upload("a.docx", b"PK..", "application/zip"))
    await assert_error(resp, 415, "UNSUPPORTED_MEDIA_TYPE", "unsupported type .docx")
    resp = await post_form(client, auth, agent_id, upload("a", b"x", "image/png"))
    await assert_error(resp, 415, "UNSUPPORTED_MEDIA_TYPE", "image/png")
    resp = await post_form(client, auth, agent_id, upload("big.txt", b"word " * 2200, "text/plain"))
    await assert_error(resp, 400, "FILE_TOO_LARGE", "file: the document is over 0.01 MB")
    resp = await post_form(client, auth, agent_id, upload("bad.pdf", b"%PDF-1.4 junk", ""))
    await assert_error(resp, 400, "VALIDATION_ERROR", "file: the PDF could not be read")
    resp = await post_form(client, auth, agent_id, upload("empty.txt", b"  \n", ""))
    await assert_error(resp, 400, "VALIDATION_ERROR", "file: the document has no text")

    only_title = MultipartWriter("form-data")
    only_title.append("A title").set_content_disposition("form-data", name="title")
    resp = await post_form(client, auth, agent_id, only_title)
    await assert_error(resp, 400, "VALIDATION_ERROR", "file: is required")
    form = FormData()
    form.add_field("title", "only a title")
    form.add_field("dummy", b"", filename="d.txt")
    resp = await post_form(client, auth, agent_id, form)
    await assert_error(resp, 400, "VALIDATION_ERROR", "dummy: is not a known field")
    form = upload("a.txt", b"one", "text/plain")
    form.add_field("file", b"two", filename="b.txt")
    resp = await post_form(client, auth, agent_id, form)
    await assert_error(resp, 400, "VALIDATION_ERROR", "file: given more than once")

    # JSON content over the cap, and a body over the cap plus framing.
    url = f"/api/v1/agents/{agent_id}/documents"
    resp = await client.post(url, json={"title": "T", "content": "x" * 20_000}, headers=auth)
    await assert_error(resp, 400, "FILE_TOO_LARGE", "content")
    resp = await client.post(url, json={"title": "T", "content": "x" * (2 * 2**20)}, headers=auth)
    await assert_error(resp, 413, "PAYLOAD_TOO_LARGE")
    resp = await client.post(
        url,
        data=b"--b\r\n" + b"x" * (2 * 2**20),
        headers={**auth, "Content-Type": "multipart/form-data; boundary=b"},
    )
    await assert_error(resp, 413, "PAYLOAD_TOO_LARGE")
    resp = await client.post(
        url,
        data=b"garbage without boundary",
        headers={**auth, "Content-Type": "multipart/form-data; boundary=zz"},
    )
    await assert_error(resp, 400, "VALIDATION_ERROR")
    listed = await (await client.get(url, headers=auth)).json()
    assert listed["data"] == []


async def test_fetch_from_url(client, auth, aiohttp_server):
    async def page(request):
        return web.Response(
            text="<html><head><title>FAQ page</title></head><body><h2>Payment</h2>"
            "<p>We accept cards and bank transfers.</p></body></html>",
            content_type="text/html",
        )

    async def plain(request):
        return web.Response(body="Café opens at noon.".encode("latin-1"),
                            headers={"Content-Type": "text/plain; charset=latin-1"})  # fmt: skip

    async def pdf(request):
        return web.Response(body=make_pdf([["Gift cards never expire."]]),
                            content_type="application/octet-stream")  # fmt: skip

    async def moved(request):
        raise web.HTTPFound("/faq")

    async def image(request):
        return web.Response(body=b"\x89PNG", content_type="image/png")

    async def big(request):
        return web.Response(text="x" * (11 * 2**20), content_type="text/plain")

    site = web.Application()
    site.router.add_get("/faq", page)
    site.router.add_get("/hours", plain)
    site.router.add_get("/files/cards.pdf", pdf)
    site.router.add_get("/old", moved)
    site.router.add_get("/logo", image)
    site.router.add_get("/big.txt", big)
    server = await aiohttp_server(site)
    base = str(server.make_url(""))
    agent_id = await make_agent(client, auth)
    url = f"/api/v1/agents/{agent_id}/documents"

    resp = await client.post(url, json={"url": f"{base}/faq"}, headers=auth)
    doc = (await resp.json())["data"]
    assert resp.status == 201, doc
    assert (doc["title"], doc["sourceType"], doc["format"]) == ("FAQ page", "url", "html")
    assert doc["sourceUrl"] == f"{base}/faq" and doc["status"] == "ready"
    hits = await retrieval.retrieve(client.app[app_keys.db_key], agent_id, "bank transfer", 2)
    assert hits[0].heading == "FAQ page › Payment"

    resp = await client.post(url, json={"url": f"{base}/hours", "title": "Hours"}, headers=auth)
    doc = (await resp.json())["data"]
    got = await (await client.get(f"/api/v1/documents/{doc['id']}", headers=auth)).json()
    assert got["data"]["content"] == "Café opens at noon." and doc["title"] == "Hours"

    resp = await client.post(url, json={"url": f"{base}/files/cards.pdf"}, headers=auth)
    doc = (await resp.json())["data"]
    assert (doc["format"], doc["title"]) == ("pdf", "cards.pdf")

    cases = [
        (f"{base}/missing", 400, "VALIDATION_ERROR", "url: the server answered 404"),
        (f"{base}/old", 400, "VALIDATION_ERROR", "redirects are not followed"),
        (f"{base}/logo", 415, "UNSUPPORTED_MEDIA_TYPE", "image/png"),
        (f"{base}/big.txt", 400, "FILE_TOO_LARGE", "over 10 MB"),
        ("ftp://127.0.0.1/x", 400, "VALIDATION_ERROR", "only http and https"),
        ("http://127.0.0.1:1/nothing", 400, "VALIDATION_ERROR", "could not fetch"),
    ]
    for target, status, code, message in cases:
        resp = await client.post(url, json={"url": target}, headers=auth)
        await assert_error(resp, status, code, message)
    listed = await (await client.get(url, headers=auth)).json()
    assert len(listed["data"]) == 3


async def test_url_fetch_goes_through_the_outbound_guard(make_client):
    client = await make_client(outbound={"allow_private": False})
    auth = bearer(await new_api_key(client))
    agent_id = await make_agent(client, auth)
    for target in ("http://127.0.0.1:9/x", "http://169.254.169.254/latest/meta-data"):
        resp = await client.post(
            f"/api/v1/agents/{agent_id}/documents", json={"url": target}, headers=auth
        )
        await assert_error(resp, 400, "VALIDATION_ERROR", "refused")


async def test_documents_are_team_scoped_and_members_may_edit(client, auth):
    agent_id = await make_agent(client, auth)
    doc = await add_text(client, auth, agent_id)
    other = bearer(await new_api_key(client, "other@example.com"))
    for method, path in (
        ("GET", f"/api/v1/agents/{agent_id}/documents"),
        ("GET", f"/api/v1/documents/{doc['id']}"),
        ("DELETE", f"/api/v1/documents/{doc['id']}"),
    ):
        await assert_error(await client.request(method, path, headers=other), 404, "NOT_FOUND")
    resp = await client.post(
        f"/api/v1/agents/{agent_id}/documents", json={"title": "x", "content": "y"}, headers=other
    )
    await assert_error(resp, 404, "NOT_FOUND", "Agent not found")
    await assert_error(
        await client.get(f"/api/v1/agents/{agent_id}/documents"), 401, "UNAUTHORIZED"
    )

    db = client.app[app_keys.db_key]
    owner = await accounts.get_user_by_email(db.reader, "owner@example.com")
    team = await accounts.get_owned_team(db.reader, owner.id)
    async with db.write() as conn:
        member = await accounts.insert_user(
            conn, id=new_id("user"), email="m@example.com", name="M", password_hash=None,
            now=now_iso(),
        )  # fmt: skip
        await accounts.insert_membership(
            conn, id=new_id("membership"), team_id=team.id, user_id=member.id, role="member",
            now=now_iso(),
        )  # fmt: skip
        key = await accounts_service.create_api_key(
            conn, team_id=team.id, user_id=member.id, name="m"
        )
    member_auth = bearer(key.key)
    mine = await add_text(client, member_auth, agent_id, title="Member notes", content="Hi.")
    resp = await client.delete(f"/api/v1/documents/{doc['id']}", headers=member_auth)
    assert resp.status == 200
    listed = await (await client.get(f"/api/v1/agents/{agent_id}/documents", headers=auth)).json()
    assert [d["id"] for d in listed["data"]] == [mine["id"]]


async def test_agent_deletion_cascades_to_documents_and_index(client, auth):
    keep = await make_agent(client, auth, "Keep")
    gone = await make_agent(client, auth, "Gone")
    kept = await add_text(client, auth, keep)
    doc = await add_text(client, auth, gone)
    db = client.app[app_keys.db_key]
    assert (await retrieval.retrieve(db, gone, "refund", 5))[0].document_id == doc["id"]
    assert [p.document_id for p in await retrieval.retrieve(db, keep, "refund", 5)] == [kept["id"]]
    assert (await client.delete(f"/api/v1/agents/{gone}", headers=auth)).status == 200
    await assert_error(
        await client.get(f"/api/v1/documents/{doc['id']}", headers=auth), 404, "NOT_FOUND"
    )
    rows = await db.reader.fetchall(
        "SELECT count(*) FROM passages WHERE document_id = ?", (doc["id"],)
    )
    assert rows[0][0] == 0
    # The contentless index forgot the passages too: only the kept agent's two remain.
    rows = await db.reader.fetchall(INDEXED_REFUND[db.reader.dialect])
    assert rows[0][0] == 1
    assert await retrieval.retrieve(db, gone, "refund", 5) == []


async def test_queries_cannot_inject_fts_syntax(client, auth):
    agent_id = await make_agent(client, auth)
    await add_text(client, auth, agent_id)
    db = client.app[app_keys.db_key]
    for query in (
        'refund" OR scope : "x',
        "NEAR(refund parcel) AND *",
        "-refund ^label {heading}: col:umn",
        "((( ''' \" \\ \x00",
        "",
        "the and of",  # stop words only
    ):
        hits = await retrieval.retrieve(db, agent_id, query, 3)
        assert all(h.document_id for h in hits)
    assert retrieval.query_terms('Refund" OR x* NEAR(a)') == ["refund", "x", "near"]


async def test_large_documents_index_in_the_background(make_client):
    client = await make_client(knowledge={"background_index_kb": 1})
    auth = bearer(await new_api_key(client))
    agent_id = await make_agent(client, auth)
    sections = [
        f"## Topic {n}\n" + " ".join(f"word{n}x{i}" for i in range(120)) + "." for n in range(40)
    ]
    text = "# Big manual\n\n" + "\n\n".join(sections)
    doc = await add_text(client, auth, agent_id, title="Big manual", content=text)
    assert doc["status"] == "indexing" and doc["passageCount"] == 0
    done = await wait_status(client, auth, doc["id"])
    assert done["status"] == "ready" and done["passageCount"] == 40 and done["error"] is None
    hits = await retrieval.retrieve(client.app[app_keys.db_key], agent_id, "word17x5", 1)
    assert hits[0].heading == "Big manual › Topic 17"

    # Only headings: nothing to index, so the document fails with a reason.
    headings = "\n".join(f"# Heading {n}" for n in range(200))
    doc = await add_text(client, auth, agent_id, title="Headings", content=headings)
    failed = await wait_status(client, auth, doc["id"])
    assert failed["status"] == "failed" and "no text to index" in failed["error"]


async def test_indexing_left_unfinished_resumes(make_client):
    client = await make_client(knowledge={"background_index_kb": 1})
    auth = bearer(await new_api_key(client))
    agent_id = await make_agent(client, auth)
    doc = await add_text(client, auth, agent_id, content=GUIDE * 10)
    await client.app[app_keys.indexer_key].idle()
    db = client.app[app_keys.db_key]
    # As if the service had stopped half-way: status indexing, some passages written.
    async with db.write() as conn:
        await conn.execute("UPDATE documents SET status = 'indexing' WHERE id = ?", (doc["id"],))
        await conn.execute(
            "DELETE FROM passages WHERE document_id = ? AND position > 2", (doc["id"],)
        )
    assert await retrieval.retrieve(db, agent_id, "refund", 3) == []  # not ready: not used
    indexer = client.app[app_keys.indexer_key]
    assert await indexer.resume() == 1
    await indexer.idle()
    done = await wait_status(client, auth, doc["id"])
    assert done["status"] == "ready" and done["passageCount"] == 20
    rows = await db.reader.fetchall(
        "SELECT count(*) FROM passages WHERE document_id = ?", (doc["id"],)
    )
    assert rows[0][0] == 20
    assert len(await retrieval.retrieve(db, agent_id, "refund", 30)) == 10


async def test_openapi_documents_both_body_types(client):
    doc = await (await client.get("/api/v1/openapi.json")).json()
    op = doc["paths"]["/api/v1/agents/{id}/documents"]["post"]
    content = op["requestBody"]["content"]
    assert set(content) == {"application/json", "multipart/form-data"}
    form = doc["components"]["schemas"][content["multipart/form-data"]["schema"]["$ref"][21:]]
    assert form["required"] == ["file"]
    assert form["properties"]["file"]["format"] == "binary"
    assert {"201", "400", "404", "413", "415"} <= set(op["responses"])
    assert "delete" in doc["paths"]["/api/v1/documents/{id}"]


async def test_deleting_a_document_while_it_is_indexed(make_client):
    client = await make_client(knowledge={"background_index_kb": 1})
    auth = bearer(await new_api_key(client))
    agent_id = await make_agent(client, auth)
    docs = [await add_text(client, auth, agent_id, content=GUIDE * 40) for _ in range(3)]
    for doc in docs:
        assert doc["status"] == "indexing"
        resp = await client.delete(f"/api/v1/documents/{doc['id']}", headers=auth)
        assert resp.status == 200
    await client.app[app_keys.indexer_key].idle()
    db = client.app[app_keys.db_key]
    rows = await db.reader.fetchall("SELECT count(*) FROM passages")
    assert rows[0][0] == 0
    rows = await db.reader.fetchall(INDEXED_REFUND[db.reader.dialect])
    assert rows[0][0] == 0
    listed = await (await client.get(f"/api/v1/agents/{agent_id}/documents", headers=auth)).json()
    assert listed["data"] == []


def test_postgres_candidates_come_from_the_rarest_words():
    """PostgreSQL's retrieval: the rarest words up to the postings budget are selective (the
    rarest always, even over it); the candidates' query pairs each selective word with any
    later word, so the index starts from the selective words' postings."""
    from agentsvc.store import pg_passage_search as store

    budget = store.SELECTIVE_POSTINGS
    selective, common = store.selective_words(
        [("refund", budget * 0.9), ("warranti", 10.0), ("order", budget * 0.2)]
    )
    assert selective == ["'warranti'", "'order'"]
    assert common == ["refund"]
    assert store.selective_words([("the", budget * 5.0)]) == (["'the'"], [])
    assert store.pairs_query(["'a'", "'b'"], ["'c'"]) == "('a' & ('b' | 'c')) | ('b' & ('c'))"
    assert store.pairs_query(["'a'"], []) == ""
    assert store.selective_words([("it's", 1.0)])[0] == ["'it''s'"]
