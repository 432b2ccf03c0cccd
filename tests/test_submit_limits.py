"""Hostile visitors on the public form endpoints: the per-IP limit before the body, the cap
on large bodies in memory, files decoded to disk, the per-agent file quota, memory under a
burst of big bodies, and submits and client results bound to their widget session."""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from pathlib import Path

import pytest

from agentsvc.api import app_keys
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, new_agent, user
from tests.support.errors import assert_error
from tests.support.forms import data_url, detail, make_form, submit, submitted
from tests.support.storage import stored, stored_keys

# It measures the machine (timings, memory, recovery): it runs alone (tests/conftest.py).
pytestmark = pytest.mark.needs_the_machine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from bench_submit_memory import big_body, measure  # noqa: E402

SUBMIT = "/api/v1/form-submissions/submit"
CLIENT_RESULT = "/api/v1/form-submissions/client-result"


async def _setup(make_client, **sections):
    client = await make_client(**sections)
    auth = bearer(await new_api_key(client))
    return client, auth


async def open_submit(client, length: int, first: bytes = b"") -> tuple:
    """A raw submit whose headers announce `length` bytes, of which only `first` is sent."""
    reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    head = (
        f"POST {SUBMIT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    )
    writer.write(head.encode() + first)
    await writer.drain()
    return reader, writer


async def read_status(reader, timeout: float = 10) -> tuple[int, bytes]:
    """The status and body of the response on a raw connection."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
    status = int(head.split(b" ", 2)[1])
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return status, await asyncio.wait_for(reader.readexactly(length), timeout)


async def wait_held(client, count: int) -> None:
    slots = client.app[app_keys.body_slots_key]
    for _ in range(500):
        if slots.held == count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"slots held: {slots.held}, expected {count}")


async def stored_folders(client) -> list[str]:
    """The submissions that have files stored."""
    return sorted({key.partition("/")[0] for key in await stored_keys(client, "sub_")})


# ── the per-IP limit comes before the body ───────────────────────────────────────────────
async def test_rate_limit_applies_before_the_body_is_read(make_client):
    client, auth = await _setup(make_client, ratelimit={"form_submits_per_minute": 2})
    tool = await make_form(client, auth)
    for _ in range(2):
        assert (await submit(client, tool["id"], {"email": "a@b.co"})).status != 429
    # 20 MB announced, nothing sent: the answer comes without waiting for the body.
    reader, writer = await open_submit(client, 20 * 2**20)
    try:
        status, body = await read_status(reader, timeout=5)
    finally:
        writer.close()
    assert status == 429 and b"RATE_LIMITED" in body, body
    assert client.app[app_keys.body_slots_key].held == 0


async def test_submit_limit_is_its_own_setting_not_the_trigger_event_limit(make_client):
    client, auth = await _setup(
        make_client, ratelimit={"trigger_events_per_minute": 1, "form_submits_per_minute": 3}
    )
    tool = await make_form(client, auth)
    for _ in range(3):
        assert (await submit(client, tool["id"], {"email": "a@b.co"})).status != 429
    resp = await submit(client, tool["id"], {"email": "a@b.co"})
    assert resp.status == 429
    assert int(resp.headers["Retry-After"]) >= 1


# ── large bodies: a bounded number in memory ─────────────────────────────────────────────
async def test_large_bodies_beyond_the_cap_get_503_with_retry_after(make_client):
    client, auth = await _setup(
        make_client, server={"max_large_bodies": 1, "large_body_wait_seconds": 0.3}
    )
    tool = await make_form(client, auth)
    reader, writer = await open_submit(client, 5 * 2**20, b'{"toolId":')  # holds the slot
    try:
        await wait_held(client, 1)
        resp = await client.post(
            SUBMIT, data=big_body(3), headers={"Content-Type": "application/json"}
        )
        await assert_error(resp, 503, "SERVER_BUSY", "large requests")
        assert resp.headers["Retry-After"] == "1"
        # Bodies within the general limit do not need a slot.
        small = await submitted(client, tool["id"], {"email": "a@b.co"})
        assert small["success"] is True
    finally:
        writer.close()
    await wait_held(client, 0)
    resp = await client.post(SUBMIT, data=big_body(3), headers={"Content-Type": "application/json"})
    await assert_error(resp, 404, "NOT_FOUND", "Form not found")


async def test_large_bodies_wait_their_turn_within_the_wait(make_client):
    client, _ = await _setup(
        make_client, server={"max_large_bodies": 1, "large_body_wait_seconds": 30}
    )
    body = big_body(3)
    reader, writer = await open_submit(client, len(body), body[:100])
    try:
        await wait_held(client, 1)
        waiting = asyncio.ensure_future(
            client.post(SUBMIT, data=big_body(3), headers={"Content-Type": "application/json"})
        )
        await asyncio.sleep(0.2)
        assert not waiting.done()
        writer.write(body[100:])  # the first finishes; the second gets its slot
        await writer.drain()
        status, _ = await read_status(reader)
        assert status == 404
        resp = await asyncio.wait_for(waiting, 20)
        await assert_error(resp, 404, "NOT_FOUND")
    finally:
        writer.close()
    await wait_held(client, 0)


async def test_slow_large_body_times_out_and_frees_its_slot(make_client):
    client, _ = await _setup(
        make_client,
        server={
            "max_large_bodies": 1,
            "large_body_wait_seconds": 30,
            "large_body_read_seconds": 0.5,
        },
    )
    reader, writer = await open_submit(client, 5 * 2**20, b'{"toolId":')
    try:
        status, body = await read_status(reader)
    finally:
        writer.close()
    assert status == 408 and b"REQUEST_TIMEOUT" in body, body
    await wait_held(client, 0)


# ── files go to disk in pieces ───────────────────────────────────────────────────────────
async def test_files_are_decoded_to_disk_in_pieces(make_client):
    client, auth = await _setup(make_client)
    tool = await make_form(client, auth)
    raw = os.urandom(3 * 2**20 + 5)  # several pieces, with padding at the end
    result = await submitted(client, tool["id"], {"email": "a@b.co", "cv": data_url(raw)})
    sub = await detail(client, auth, result["submissionId"])
    assert sub["formData"]["cv"]["size"] == len(raw)
    [key] = await stored_keys(client, f"{result['submissionId']}/")
    assert await stored(client, key) == raw


@pytest.mark.parametrize(
    "payload",
    [
        "QUJD" * 300_000 + "!" + "QUJD" * 10 + "QUJ",  # a bad character past the first piece
        "QQ==" + "QUJD" * 300_000,  # padding in the middle
        "QUJD" * 10 + "QUJ",  # a length that is not a multiple of 4
        "QUJDé",  # not ASCII
    ],
)
async def test_bad_base64_is_refused_and_nothing_is_stored(make_client, payload):
    client, auth = await _setup(make_client)
    tool = await make_form(client, auth)
    value = "data:application/pdf;base64," + payload
    resp = await submit(client, tool["id"], {"email": "a@b.co", "cv": value})
    await assert_error(resp, 400, "VALIDATION_ERROR", "formData.cv: the data URL is not valid")
    assert await stored_folders(client) == []
    listed = await client.get("/api/v1/form-submissions", headers=auth)
    assert (await listed.json())["pagination"]["total"] == 0


async def test_data_url_header_is_bounded(make_client):
    client, auth = await _setup(make_client)
    tool = await make_form(client, auth)
    value = "data:application/pdf;" + "x" * 5000 + ";base64,QUJD"
    resp = await submit(client, tool["id"], {"email": "a@b.co", "cv": value})
    await assert_error(resp, 400, "VALIDATION_ERROR", "formData.cv: must be a base64 data URL")


# ── the per-agent file quota ─────────────────────────────────────────────────────────────
async def test_file_quota_per_agent_is_enforced_and_nothing_half_stored(make_client):
    quota_mb = 10_000 / 2**20  # 10,000 bytes
    client, auth = await _setup(make_client, forms={"file_quota_mb_per_agent": quota_mb})
    tool = await make_form(client, auth)
    first = await submitted(client, tool["id"], {"email": "a@b.co", "cv": data_url(b"x" * 6000)})
    resp = await submit(client, tool["id"], {"email": "a@b.co", "cv": data_url(b"y" * 6000)})
    error = await assert_error(resp, 413, "FILE_QUOTA_EXCEEDED", "file_quota_mb_per_agent")
    assert "nothing was stored" in error["message"]
    assert await stored_folders(client) == [first["submissionId"]]
    listed = await client.get("/api/v1/form-submissions", headers=auth)
    assert (await listed.json())["pagination"]["total"] == 1
    # Submissions without files still go through, and the quota is per agent.
    assert (await submitted(client, tool["id"], {"email": "a@b.co"}))["success"]
    other = await make_form(client, auth)
    assert (await submitted(client, other["id"], {"email": "a@b.co", "cv": data_url(b"z" * 6000)}))[
        "success"
    ]


async def test_concurrent_submits_cannot_pass_the_quota_together(make_client):
    client, auth = await _setup(make_client, forms={"file_quota_mb_per_agent": 10_000 / 2**20})
    tool = await make_form(client, auth)
    body = {"email": "a@b.co", "cv": data_url(b"x" * 6000)}
    answers = await asyncio.gather(*(submit(client, tool["id"], body) for _ in range(6)))
    assert sorted(r.status for r in answers) == [200] + [413] * 5
    assert len(await stored_folders(client)) == 1


async def test_zero_file_quota_refuses_every_file(make_client):
    client, auth = await _setup(make_client, forms={"file_quota_mb_per_agent": 0})
    tool = await make_form(client, auth)
    resp = await submit(client, tool["id"], {"email": "a@b.co", "cv": data_url(b"x")})
    await assert_error(resp, 413, "FILE_QUOTA_EXCEEDED", "(0 MB")


# ── memory under a burst of big bodies ───────────────────────────────────────────────────
def test_12_concurrent_24_mb_bodies_raise_rss_by_less_than_150_mb():
    result = measure(concurrency=12, mb=24)
    assert sum(result.statuses.values()) == 12, result.statuses
    assert set(result.statuses) <= {404, 503}, result.statuses
    assert result.statuses[404] >= 1, result.statuses
    assert result.growth_mb < 150, result


# ── submits and client results are bound to their session ────────────────────────────────
async def _visitor_conversation(client, auth, session_id: str = "s_visitor"):
    agent = await new_agent(client, auth)
    tool = await make_form(
        client,
        auth,
        agent["id"],
        formExecutionMode="client",
        formClientHandler="crm",
        formWebhookUrl=None,
    )
    body = {"agentId": agent["id"], "messages": user("hello"), "sessionId": session_id}
    stream = await chat(client, body)
    return tool, stream.start["conversationId"]


async def test_submit_to_a_conversation_needs_its_session(make_client):
    client, auth = await _setup(make_client)
    tool, conv_id = await _visitor_conversation(client, auth)
    form = {"email": "a@b.co"}
    for extra in ({}, {"sessionId": "s_intruder"}):
        resp = await submit(client, tool["id"], form, conversationId=conv_id, **extra)
        await assert_error(resp, 404, "NOT_FOUND", "Conversation not found")
    # Another team's key is no better than no session.
    stranger = bearer(await new_api_key(client, "stranger@example.com"))
    body = {"toolId": tool["id"], "formData": form, "fieldsCompleted": ["email"]}
    resp = await client.post(SUBMIT, json={**body, "conversationId": conv_id}, headers=stranger)
    await assert_error(resp, 404, "NOT_FOUND", "Conversation not found")
    # The visitor's own session, or a key of the conversation's team, may.
    own = await submitted(client, tool["id"], form, conversationId=conv_id, sessionId="s_visitor")
    resp = await client.post(SUBMIT, json={**body, "conversationId": conv_id}, headers=auth)
    assert resp.status == 200, await resp.text()
    conv = await client.get(f"/api/v1/conversations/{conv_id}", headers=auth)
    notes = [
        m for m in (await conv.json())["data"]["messages"] if "submitted the form" in m["content"]
    ]
    assert len(notes) == 2 and own["submissionId"] in notes[0]["content"]


async def test_conversation_started_with_a_key_takes_no_public_submit(make_client):
    client, auth = await _setup(make_client)
    agent = await new_agent(client, auth)
    tool = await make_form(client, auth, agent["id"])
    stream = await chat(client, {"agentId": agent["id"], "messages": user("hi")}, auth)
    conv_id = stream.start["conversationId"]
    resp = await submit(
        client, tool["id"], {"email": "a@b.co"}, conversationId=conv_id, sessionId="s"
    )
    await assert_error(resp, 404, "NOT_FOUND", "Conversation not found")


async def test_session_id_is_checked(make_client):
    client, auth = await _setup(make_client)
    tool = await make_form(client, auth)
    resp = await submit(client, tool["id"], {"email": "a@b.co"}, sessionId="s" * 201)
    await assert_error(resp, 400, "VALIDATION_ERROR", "sessionId")
    resp = await submit(client, tool["id"], {"email": "a@b.co"}, sessionId=7)
    await assert_error(resp, 400, "VALIDATION_ERROR", "sessionId")


async def test_client_result_needs_the_submissions_session(make_client):
    client, auth = await _setup(make_client)
    tool, _ = await _visitor_conversation(client, auth)
    sub = await submitted(client, tool["id"], {"email": "a@b.co"}, sessionId="s_visitor")
    report = {"submissionId": sub["submissionId"], "success": True}
    for extra in ({}, {"sessionId": "s_intruder"}):
        resp = await client.post(CLIENT_RESULT, json={**report, **extra})
        await assert_error(resp, 404, "NOT_FOUND", "Submission not found")
    stranger = bearer(await new_api_key(client, "stranger@example.com"))
    resp = await client.post(CLIENT_RESULT, json=report, headers=stranger)
    await assert_error(resp, 404, "NOT_FOUND", "Submission not found")
    assert (await detail(client, auth, sub["submissionId"]))["status"] == "submitted"
    resp = await client.post(CLIENT_RESULT, json={**report, "sessionId": "s_visitor"})
    assert resp.status == 200, await resp.text()
    assert (await detail(client, auth, sub["submissionId"]))["status"] == "client_success"

    # The team's key may report too; a submission made without a session takes any caller.
    keyed = await submitted(client, tool["id"], {"email": "a@b.co"}, sessionId="s_other")
    resp = await client.post(
        CLIENT_RESULT, json={"submissionId": keyed["submissionId"], "success": False}, headers=auth
    )
    assert resp.status == 200, await resp.text()
    anonymous = await submitted(client, tool["id"], {"email": "a@b.co"})
    resp = await client.post(
        CLIENT_RESULT, json={"submissionId": anonymous["submissionId"], "success": True}
    )
    assert resp.status == 200, await resp.text()


def test_bench_body_is_about_the_size_asked():
    assert abs(len(big_body(1)) - 2**20) < 8
    assert base64.b64decode(big_body(0.01).split(b"base64,")[1].split(b'"')[0])


# ── long data URLs are left in the body buffer, and only where that changes nothing ─────
def _plain(value):
    from agentsvc.services.forms.values import BodyText

    if isinstance(value, BodyText):
        return value.text()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


LONG = "data:application/pdf;base64," + "QUJD" * 30_000


@pytest.mark.parametrize(
    "raw",
    [
        f'{{"toolId":"t","formData":{{"cv":"{LONG}","photo":"{LONG}"}},"fieldsCompleted":[]}}',
        f'{{"formData":{{"cv":"{LONG}","cv":"{LONG}x"}},"toolId":"t"}}',  # repeated key
        f'{{"formData":{{"cv":["{LONG}"]}}}}',  # in a list
        f'{{"formData":{{"{LONG}":1}}}}',  # as a key
        f'{{"conversationId":"{LONG}","formData":{{}}}}',  # in another field
        f'{{"formData":{{"name":"say \\"{LONG}"}}}}',  # after an escaped quote
        f'{{"formData":{{"cv":"{LONG}\\n"}}}}',  # an escape inside
        f'{{"formData":{{"cv":"{LONG}","n":"\\"data:x"}}}}',
        f'{{"formData":{{"cv":"{LONG}"}}',  # malformed
        f'{{"formData":{{"cv":"{LONG}',  # unterminated
    ],
)
def test_body_parse_leaving_data_urls_in_the_buffer_equals_plain_parse(raw):
    import orjson

    from agentsvc.api.form_body import parse_submit_body
    from agentsvc.errors import ValidationFailed

    data = bytearray(raw.encode())
    try:
        expected = orjson.loads(data)
    except orjson.JSONDecodeError:
        with pytest.raises(ValidationFailed, match="malformed JSON"):
            parse_submit_body(data)
        return
    assert _plain(parse_submit_body(data)) == expected


async def test_long_data_urls_outside_file_fields_are_checked_as_sent(make_client):
    client, auth = await _setup(make_client)
    tool = await make_form(client, auth)
    big = data_url(os.urandom(100_000))
    resp = await submit(client, tool["id"], {"email": "a@b.co", "name": big})
    await assert_error(resp, 400, "VALIDATION_ERROR", "formData.name: must be at most")
    resp = await submit(client, tool["id"], {"email": "a@b.co", "extras": [big]})
    await assert_error(resp, 400, "VALIDATION_ERROR", "formData.extras:")
    resp = await submit(client, tool["id"], {"email": "a@b.co"}, conversationId=big)
    await assert_error(resp, 400, "VALIDATION_ERROR", "conversationId")
    # A repeated key: the last one counts, as in any JSON object.
    first, last = os.urandom(100_000), os.urandom(100_000)
    raw = (
        f'{{"toolId":"{tool["id"]}","fieldsCompleted":["email"],"formData":{{"email":"a@b.co",'
        f'"cv":"{data_url(first)}","cv":"{data_url(last)}"}}}}'
    )
    resp = await client.post(SUBMIT, data=raw, headers={"Content-Type": "application/json"})
    assert resp.status == 200, await resp.text()
    sub_id = (await resp.json())["submissionId"]
    [key] = await stored_keys(client, f"{sub_id}/")
    assert await stored(client, key) == last


async def test_body_slots_queue_is_bounded_fifo_and_survives_cancelled_waiters():
    from agentsvc.api.bodies import WAITERS_PER_SLOT, BodySlots
    from agentsvc.api.errors import ServerBusy

    slots = BodySlots(1, 30)
    holder = await slots.acquire()
    waiters = [asyncio.ensure_future(slots.acquire()) for _ in range(WAITERS_PER_SLOT)]
    await asyncio.sleep(0)
    with pytest.raises(ServerBusy):  # the queue is full: refused at once
        await slots.acquire()
    waiters[0].cancel()  # a waiter that goes away leaves no trace
    await asyncio.sleep(0)
    holder.release()
    holder.release()  # a second release is a no-op
    second = await asyncio.wait_for(waiters[1], 1)  # first come, first served
    assert slots.held == 1 and not waiters[2].done()
    second.release()
    third = await asyncio.wait_for(waiters[2], 1)
    for waiter in waiters[3:]:
        waiter.cancel()
    await asyncio.gather(*waiters[3:], return_exceptions=True)
    third.release()
    assert slots.held == 0
    assert slots.held == 0 and (await slots.acquire()) is not None


# ── existing databases ───────────────────────────────────────────────────────────────────
async def test_a_database_from_before_sessions_and_file_sizes_is_migrated(tmp_path):
    """The version before: submissions without session_id/files_bytes; opening migrates it
    and counts the files already stored against the quota."""
    import sqlite3

    from agentsvc.db.migrations import schema_at, schema_version
    from agentsvc.db.sqlite import SqliteDatabase
    from agentsvc.store import submissions as store

    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.executescript(schema_at(2))
    # Foreign keys are off on this plain connection: no team or agent rows are needed.
    old.execute(
        "INSERT INTO form_submissions (id, team_id, agent_id, tool_id, tool_name, form_data,"
        " files, fields_completed, execution_mode, status, created_at, updated_at) VALUES"
        " ('sub_1', 'team_1', 'agt_1', 'tool_1', 'f',"
        """ '{"cv": {"fileName": null, "contentType": "application/pdf", "size": 1234},"""
        """ "photo": {"fileName": "p", "contentType": "image/png", "size": 10}, "e": "a@b.co"}',"""
        """ '{"cv": "files/sub_1/cv.pdf", "photo": "files/sub_1/photo.png"}', '[]',"""
        " 'webhook', 'pending', 'now', 'now'),"
        """ ('sub_2', 'team_1', 'agt_1', 'tool_1', 'f', '{"e": "x"}', NULL, '[]',"""
        " 'webhook', 'pending', 'now', 'now')"
    )
    old.commit()
    old.close()
    db = SqliteDatabase(path)
    await db.open()
    try:
        rows = await db.reader.fetchall("PRAGMA user_version")
        assert rows[0][0] == schema_version()
        assert await store.file_bytes_of_agent(db.reader, "agt_1") == 1244
        sub = await store.get_submission(db.reader, "sub_2")
        assert sub is not None and sub.session_id is None and sub.files_bytes == 0
    finally:
        await db.close()


async def test_chunked_body_over_the_submit_limit_is_refused(make_client):
    client, _ = await _setup(make_client, server={"submit_max_body_mb": 3})

    async def chunks():
        for _ in range(8):  # 4 MB, no Content-Length
            yield b"x" * (512 * 1024)

    resp = await client.post(SUBMIT, data=chunks(), headers={"Content-Type": "application/json"})
    await assert_error(resp, 413, "PAYLOAD_TOO_LARGE", "over 3 MB")
    await wait_held(client, 0)
