"""Privacy: an end user erased leaves nothing behind (every table, every column, the files
directory), an export holds all of it, `:ref` is read as documented, erasure stays in its
team, and retention purges old conversations and submissions on schedule."""

from __future__ import annotations

import asyncio
import base64
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pytest

from agentsvc.api import app_keys
from agentsvc.ids import iso
from agentsvc.services.privacy.retention import purge_expired
from tests.support.accounts import add_member, bearer, create_user, key_for
from tests.support.chat import chat, new_agent, user
from tests.support.errors import assert_error
from tests.support.fakes.webhook_receiver import WebhookReceiver
from tests.support.mail import outbox
from tests.support.storage import files_of, stored, stored_keys

ERIN_ID = "u-erin-7731"
ERIN_EMAIL = "erin.erase@example.com"
ERIN_NAME = "Erin Eraseme"
ERIN_SESSION = "sess-erin-0001"
ERIN_OTHER_SESSION = "sess-erin-0002"
BOB_ID = "u-bob-1200"
BOB_EMAIL = "bob.stays@example.com"
FAST = {"retry_schedule_seconds": [0, 0.2], "timeout_seconds": 1}
FIELDS = [
    {"name": "email", "label": "E-mail", "type": "email"},
    {"name": "note", "label": "Note", "type": "textarea"},
    {"name": "cv", "label": "CV", "type": "file"},
    {"name": "photo", "label": "Photo", "type": "image"},
]
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
async def receiver():
    rec = await WebhookReceiver().start()
    yield rec
    await rec.close()


def data_url(raw: bytes, kind: str, name: str) -> str:
    return f"data:{kind};name={name};base64,{base64.b64encode(raw).decode()}"


async def data_of(resp, status: int = 200) -> Any:
    assert resp.status == status, await resp.text()
    return (await resp.json())["data"]


# ── searching the whole database and the files ─────────────────────────────────────────


async def columns(db) -> list[tuple[str, str]]:
    """(table, column) of every table of the database (SQLite: not the virtual FTS table,
    whose words live in its shadow tables, which are searched)."""
    tx = db.reader
    if tx.dialect == "sqlite":
        tables = await tx.fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
            " AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'"
        )
        found = []
        for (table,) in tables:
            for row in await tx.fetchall(f'PRAGMA table_info("{table}")'):
                found.append((table, row[1]))
        return found
    rows = await tx.fetchall(
        "SELECT c.table_name, c.column_name FROM information_schema.columns c"
        " JOIN information_schema.tables t ON t.table_name = c.table_name"
        " AND t.table_schema = c.table_schema"
        " WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'"
    )
    return [(r[0], r[1]) for r in rows]


async def where_found(app, needles: list[str]) -> set[tuple[str, str, str]]:
    """(table, column, needle) for every column of every table holding a needle (any case)."""
    db = app[app_keys.db_key]
    tx = db.reader
    cast = (
        'instr(lower(CAST("{c}" AS TEXT)), ?) > 0'
        if tx.dialect == "sqlite"
        else 'strpos(lower("{c}"::text COLLATE "C"), ?) > 0'
    )
    hits = set()
    all_columns = await columns(db)
    assert len({t for t, _ in all_columns}) > 20  # the search sees the whole schema
    for table, column in all_columns:
        for needle in needles:
            # Names from the database's own catalog, not input.
            sql = f'SELECT COUNT(*) FROM "{table}" WHERE ' + cast.format(c=column)  # noqa: S608
            if await tx.fetchval(sql, (needle.lower(),)):
                hits.add((table, column, needle))
    return hits


async def files_holding(client, needles: list[str]) -> list[str]:
    """Stored files whose key or content holds a needle (whichever storage the app uses)."""
    found = []
    for key in await stored_keys(client):
        text = (key + ((await stored(client, key)) or b"").decode("latin-1")).lower()
        found += [f"{key}: {n}" for n in needles if n.lower() in text]
    return found


# ── an end user with a bit of everything ────────────────────────────────────────────────


async def build_erin(client, receiver) -> dict[str, Any]:
    """A team whose agent Erin talked to in every way; Bob too (he must stay)."""
    owner, team = await create_user(client, "owner@example.com", name="Olivia")
    auth = bearer(await key_for(client, team.id, owner.id))
    member = await add_member(client, team.id, "member@example.com")
    member_auth = bearer(await key_for(client, team.id, member.id))
    # The owner is e-mailed at each handoff (no SMTP: kept in the outbox, sealed).
    resp = await client.patch(
        "/api/v1/team/members/me", json={"notifyHandoffs": True}, headers=auth
    )
    assert resp.status == 200, await resp.text()
    hook = await data_of(
        await client.post(
            "/api/v1/webhooks",
            json={
                "url": receiver.url("/ok"),
                "events": [
                    "conversation.created",
                    "message.created",
                    "feedback.created",
                    "form.submitted",
                    "conversation.handoff",
                    "conversation.assigned",
                    "conversation.closed",
                ],
            },
            headers=auth,
        ),
        201,
    )
    agent = await new_agent(client, auth, systemPrompt="We open at nine. Parcels ship daily.")
    resp = await client.patch(
        f"/api/v1/agents/{agent['id']}",
        json={"handoff": {"enabled": True, "notify": {"email": True}}},
        headers=auth,
    )
    assert resp.status == 200, await resp.text()
    resp = await client.put(f"/api/v1/agents/{agent['id']}/identity-secret", json={}, headers=auth)
    secret = (await resp.json())["data"]["secret"]
    token = jwt.encode(
        {"sub": ERIN_ID, "email": ERIN_EMAIL, "name": ERIN_NAME, "exp": int(time.time()) + 600},
        secret,
        algorithm="HS256",
    )
    resp = await client.post(
        "/api/v1/tools",
        json={
            "agentId": agent["id"],
            "name": "contact",
            "description": "Contact form",
            "executionType": "form",
            "formSchema": {"fields": FIELDS},
            "formExecutionMode": "webhook",
            "formWebhookUrl": receiver.url("/ok"),
        },
        headers=auth,
    )
    tool = await resp.json()
    assert resp.status == 201, tool

    # 1. A signed conversation in the widget, with feedback and a handoff.
    signed = await chat(
        client,
        {
            "agentId": agent["id"],
            "messages": user(f"Hello, I am {ERIN_NAME} ({ERIN_EMAIL}). When do you open?"),
            "sessionId": ERIN_SESSION,
            "userToken": token,
        },
    )
    conv1 = signed.start["conversationId"]
    resp = await client.post(
        f"/api/v1/conversations/{conv1}/feedback",
        json={"messageId": signed.start["messageId"], "rating": "up"},
        headers={"X-Session-Id": ERIN_SESSION},
    )
    assert resp.status == 200
    await data_of(
        await client.post(
            f"/api/v1/conversations/{conv1}/handoff", json={"sessionId": ERIN_SESSION}
        )
    )
    await data_of(
        await client.post(
            f"/api/v1/conversations/{conv1}/messages",
            json={"content": f"Hi {ERIN_NAME}, we answered {ERIN_EMAIL}."},
            headers=member_auth,
        ),
        201,
    )
    # 2. Later, the same browser chats again before signing in (the session links it).
    later = await chat(
        client,
        {
            "agentId": agent["id"],
            "messages": user("Do parcels ship daily?"),
            "sessionId": ERIN_SESSION,
        },
    )
    conv2 = later.start["conversationId"]
    # 3. From another browser she asks for a person and leaves her address for the reply,
    #    which is e-mailed to it (she is gone).
    away = await chat(
        client,
        {
            "agentId": agent["id"],
            "messages": user("Anyone there?"),
            "sessionId": ERIN_OTHER_SESSION,
        },
    )
    conv3 = away.start["conversationId"]
    await data_of(
        await client.post(
            f"/api/v1/conversations/{conv3}/handoff", json={"sessionId": ERIN_OTHER_SESSION}
        )
    )
    await data_of(
        await client.post(
            f"/api/v1/conversations/{conv3}/contact",
            json={"sessionId": ERIN_OTHER_SESSION, "email": ERIN_EMAIL.upper()},
        )
    )
    await data_of(
        await client.post(
            f"/api/v1/conversations/{conv3}/messages",
            json={"content": "We will write to you."},
            headers=auth,
        ),
        201,
    )
    # 4. Submissions with files: in the signed conversation, from her session without a
    #    conversation (a trigger's form), and from elsewhere with her address as a value.
    cv = f"Curriculum of {ERIN_NAME}, {ERIN_EMAIL}, id {ERIN_ID}".encode()
    submissions = []
    for extra in (
        {"conversationId": conv1, "sessionId": ERIN_SESSION},
        {"sessionId": ERIN_SESSION},
        {"sessionId": "sess-somewhere-else"},
    ):
        resp = await client.post(
            "/api/v1/form-submissions/submit",
            json={
                "toolId": tool["id"],
                "formData": {
                    "email": ERIN_EMAIL,
                    "note": f"Please call {ERIN_NAME}",
                    "cv": data_url(cv, "text/plain", f"{ERIN_ID}-cv.txt"),
                    "photo": data_url(PNG, "image/png", "me.png"),
                },
                "fieldsCompleted": ["email", "note", "cv", "photo"],
                **extra,
            },
        )
        body = await resp.json()
        assert resp.status == 200 and body["success"], body
        submissions.append(body["submissionId"])
    # Her session's form impression.
    resp = await client.post(
        "/api/v1/form-submissions/event",
        json={"toolId": tool["id"], "eventType": "impression", "sessionId": ERIN_SESSION},
    )
    assert resp.status == 202

    # Bob, who stays.
    bob = await chat(
        client,
        {
            "agentId": agent["id"],
            "messages": user(f"I am {BOB_EMAIL}"),
            "sessionId": "sess-bob",
            "user": {"id": BOB_ID, "email": BOB_EMAIL},
        },
        auth,
    )
    resp = await client.post(
        "/api/v1/form-submissions/submit",
        json={
            "toolId": tool["id"],
            "conversationId": bob.start["conversationId"],
            "formData": {
                "email": BOB_EMAIL,
                "cv": data_url(f"Bob {BOB_ID}".encode(), "text/plain", "bob.txt"),
            },
            "fieldsCompleted": ["email", "cv"],
        },
        headers=auth,
    )
    bob_sub = (await resp.json())["submissionId"]
    # Everything has gone out: webhooks delivered, mail kept.
    await client.app[app_keys.mailer_key].drain()
    await wait_for_outbox(client)
    return {
        "auth": auth,
        "member_auth": member_auth,
        "agent": agent,
        "hook": hook,
        "conversations": [conv1, conv2, conv3],
        "submissions": submissions,
        "bob_conversation": bob.start["conversationId"],
        "bob_submission": bob_sub,
    }


async def wait_for_outbox(client, timeout: float = 10) -> None:
    deliverer = client.app[app_keys.deliverer_key]
    deadline = asyncio.get_running_loop().time() + timeout
    while await deliverer.pending_count():
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.05)


ERIN = [ERIN_EMAIL, ERIN_ID, ERIN_NAME, ERIN_SESSION, ERIN_OTHER_SESSION]
BOB = [BOB_EMAIL, BOB_ID]


async def test_an_erased_end_user_leaves_nothing_behind(make_client, receiver):
    client = await make_client(webhooks=FAST)
    erin = await build_erin(client, receiver)
    auth = erin["auth"]
    # Positive controls: the same search finds her (and Bob) everywhere she was written.
    before = await where_found(client.app, ERIN + BOB)
    tables = {t for t, _, n in before if n in ERIN}
    assert {
        "conversations",
        "messages",
        "form_submissions",
        "form_events",
        "webhook_events",
        "mail_outbox",
    } <= tables, tables
    assert await files_holding(client, [ERIN_EMAIL, ERIN_ID])
    kept = await outbox(client)
    assert any(m.to_address.lower() == ERIN_EMAIL for m in kept)
    assert any(ERIN_NAME in m.body for m in kept if m.to_address == "owner@example.com")

    resp = await client.delete(f"/api/v1/end-users/{ERIN_EMAIL}", headers=auth)
    body = await data_of(resp)
    assert body["ref"] == ERIN_EMAIL and body["by"] == "email"
    deleted = body["deleted"]
    assert deleted["conversations"] == 3
    assert deleted["submissions"] == 3 and deleted["files"] == 6
    assert deleted["messages"] >= 8 and deleted["conversationEvents"] >= 6
    assert deleted["formDeliveries"] == 3 and deleted["formEvents"] == 1
    assert deleted["webhookEvents"] >= 10 and deleted["webhookDeliveries"] >= 10
    assert deleted["mails"] == 2
    assert body["total"] == sum(deleted.values())

    # Nothing of her anywhere: every column of every table, and the files.
    after = await where_found(client.app, ERIN + BOB)
    assert {hit for hit in after if hit[2] in ERIN} == set()
    assert await files_holding(client, ERIN) == []
    assert not any(
        m.to_address.lower() == ERIN_EMAIL or ERIN_NAME in m.body for m in await outbox(client)
    )
    # Bob and his file are still there.
    assert {(t, n) for t, _, n in after if n in BOB} >= {
        ("conversations", BOB_EMAIL),
        ("form_submissions", BOB_EMAIL),
    }
    assert await files_holding(client, [BOB_ID])
    convs = await data_of(
        await client.get(
            "/api/v1/conversations", params={"agentId": erin["agent"]["id"]}, headers=auth
        )
    )
    assert [c["id"] for c in convs] == [erin["bob_conversation"]]
    resp = await client.get("/api/v1/form-submissions", headers=auth)
    assert [s["id"] for s in (await resp.json())["submissions"]] == [erin["bob_submission"]]
    for conv_id in erin["conversations"]:
        resp = await client.get(f"/api/v1/conversations/{conv_id}", headers=auth)
        await assert_error(resp, 404, "NOT_FOUND")
    # Counters follow: the agent's conversation total, the form's analytics.
    resp = await client.get(
        "/api/v1/conversations", params={"agentId": erin["agent"]["id"]}, headers=auth
    )
    assert (await resp.json())["pagination"]["total"] == 1
    # The audit log says an end user was erased, naming them only by a hash.
    log = await data_of(
        await client.get("/api/v1/audit-log", params={"action": "end_user.erased"}, headers=auth)
    )
    [entry] = log
    assert entry["target"]["label"].startswith("sha256:")
    assert entry["details"]["conversations"] == 3
    # Erasing again finds nothing.
    again = await data_of(await client.delete(f"/api/v1/end-users/{ERIN_ID}", headers=auth))
    assert again["by"] == "userId" and again["total"] == 0


async def test_an_export_holds_everything_of_the_end_user(make_client, receiver):
    client = await make_client(webhooks=FAST)
    erin = await build_erin(client, receiver)
    doc = await data_of(
        await client.get(f"/api/v1/end-users/{ERIN_ID}/export", headers=erin["auth"])
    )
    assert doc["ref"] == ERIN_ID and doc["by"] == "userId"
    assert doc["userIds"] == [ERIN_ID] and doc["emails"] == [ERIN_EMAIL]
    assert sorted(c["id"] for c in doc["conversations"]) == sorted(erin["conversations"])
    first = next(c for c in doc["conversations"] if c["id"] == erin["conversations"][0])
    assert first["user"] == {"id": ERIN_ID, "email": ERIN_EMAIL, "name": ERIN_NAME}
    assert first["agentName"] == erin["agent"]["name"]
    contents = [m["content"] for m in first["messages"]]
    assert contents[0].startswith("Hello, I am") and len(contents) >= 3
    assert any(m["rating"] == "up" for m in first["messages"])
    assert any(m["author"]["type"] == "human" for m in first["messages"])
    third = next(c for c in doc["conversations"] if c["id"] == erin["conversations"][2])
    assert third["contactEmail"] == ERIN_EMAIL.upper()
    assert sorted(s["id"] for s in doc["submissions"]) == sorted(erin["submissions"])
    files = doc["submissions"][0]["files"]
    assert {f["field"] for f in files} == {"cv", "photo"}
    cv = next(f for f in files if f["field"] == "cv")
    assert cv["fileName"] == f"{ERIN_ID}-cv.txt" and cv["contentType"] == "text/plain"
    assert base64.b64decode(cv["dataUrl"].rsplit(",", 1)[1]).startswith(b"Curriculum of")
    assert BOB_EMAIL not in str(doc)
    # The same by address, any case; an export changes nothing.
    by_mail = await data_of(
        await client.get(f"/api/v1/end-users/{ERIN_EMAIL.upper()}/export", headers=erin["auth"])
    )
    assert sorted(c["id"] for c in by_mail["conversations"]) == sorted(erin["conversations"])
    log = await data_of(
        await client.get(
            "/api/v1/audit-log", params={"action": "end_user.exported"}, headers=erin["auth"]
        )
    )
    assert len(log) == 2 and all(ERIN_ID not in str(e) for e in log)


async def test_the_reference_is_read_as_documented(client):
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    agent = await new_agent(client, auth)
    odd_ids = ["someone@home", "a/b c", "ünïcode-id", "100%"]
    for ref in odd_ids:
        await chat(
            client,
            {"agentId": agent["id"], "messages": user("hi"), "user": {"id": ref}},
            auth,
        )
    # An id with an @ is an address unless `by=userId` says otherwise.
    as_address = await data_of(
        await client.get("/api/v1/end-users/someone@home/export", headers=auth)
    )
    assert as_address["by"] == "email" and as_address["conversations"] == []
    as_id = await data_of(
        await client.get(
            "/api/v1/end-users/someone@home/export", params={"by": "userId"}, headers=auth
        )
    )
    assert as_id["by"] == "userId" and len(as_id["conversations"]) == 1
    # Percent-encoded references reach the service whole.
    from urllib.parse import quote

    for ref in odd_ids[1:]:
        doc = await data_of(
            await client.get(f"/api/v1/end-users/{quote(ref, safe='')}/export", headers=auth)
        )
        assert doc["ref"] == ref and len(doc["conversations"]) == 1, ref
    gone = await data_of(
        await client.delete("/api/v1/end-users/someone@home", params={"by": "userId"}, headers=auth)
    )
    assert gone["deleted"]["conversations"] == 1
    resp = await client.get("/api/v1/end-users/x/export", params={"by": "phone"}, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "by")
    resp = await client.delete("/api/v1/end-users/" + "x" * 201, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", "ref")


async def test_erasure_and_export_stay_in_the_team_and_belong_to_the_owner(client):
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    member = await add_member(client, team.id, "member@example.com")
    member_auth = bearer(await key_for(client, team.id, member.id))
    other_owner, other_team = await create_user(client, "other@example.com")
    other = bearer(await key_for(client, other_team.id, other_owner.id))
    ours, theirs = await new_agent(client, auth), await new_agent(client, other)
    for agent, key in ((ours, auth), (theirs, other)):
        await chat(
            client,
            {"agentId": agent["id"], "messages": user("hi"), "user": {"id": ERIN_ID}},
            key,
        )
    for method, path in (
        ("DELETE", f"/api/v1/end-users/{ERIN_ID}"),
        ("GET", f"/api/v1/end-users/{ERIN_ID}/export"),
    ):
        resp = await client.request(method, path, headers=member_auth)
        await assert_error(resp, 403, "FORBIDDEN")
        resp = await client.request(method, path)
        await assert_error(resp, 401, "UNAUTHORIZED")
    # The other team sees none of ours, and erases only its own.
    doc = await data_of(await client.get(f"/api/v1/end-users/{ERIN_ID}/export", headers=other))
    assert [c["agentId"] for c in doc["conversations"]] == [theirs["id"]]
    gone = await data_of(await client.delete(f"/api/v1/end-users/{ERIN_ID}", headers=other))
    assert gone["deleted"]["conversations"] == 1
    doc = await data_of(await client.get(f"/api/v1/end-users/{ERIN_ID}/export", headers=auth))
    assert [c["agentId"] for c in doc["conversations"]] == [ours["id"]]


# ── retention ───────────────────────────────────────────────────────────────────────────


async def test_retention_days_is_an_owner_setting_of_the_agent(client):
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    member = await add_member(client, team.id, "member@example.com")
    member_auth = bearer(await key_for(client, team.id, member.id))
    agent = await new_agent(client, auth)
    path = f"/api/v1/agents/{agent['id']}"
    assert (await data_of(await client.get(path, headers=auth)))["retentionDays"] is None
    updated = await data_of(await client.patch(path, json={"retentionDays": 30}, headers=auth))
    assert updated["retentionDays"] == 30
    assert (await data_of(await client.get(path, headers=member_auth)))["retentionDays"] == 30
    resp = await client.patch(path, json={"retentionDays": 1}, headers=member_auth)
    await assert_error(resp, 403, "FORBIDDEN", "retentionDays")
    # A member may still edit the rest of the agent.
    resp = await client.patch(path, json={"name": "Renamed"}, headers=member_auth)
    assert resp.status == 200
    for bad in (0, -1, 36501, "30", 1.5, True):
        resp = await client.patch(path, json={"retentionDays": bad}, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", "retentionDays")
    # 7.0 is a whole number to JSON Schema too.
    week = await data_of(await client.patch(path, json={"retentionDays": 7.0}, headers=auth))
    assert week["retentionDays"] == 7
    cleared = await data_of(await client.patch(path, json={"retentionDays": None}, headers=auth))
    assert cleared["retentionDays"] is None
    log = await data_of(
        await client.get(
            "/api/v1/audit-log", params={"action": "agent.retention_changed"}, headers=auth
        )
    )
    assert [e["details"] for e in log] == [
        {"from": 7, "to": None},
        {"from": 30, "to": 7},
        {"from": None, "to": 30},
    ]


async def _backdate(client, days: float, conversation_ids=(), submission_ids=()) -> None:
    """Make rows look `days` old (the purge reads their times)."""
    when = iso(datetime.now(UTC) - timedelta(days=days))
    async with client.app[app_keys.db_key].write() as tx:
        for conv_id in conversation_ids:
            await tx.execute(
                "UPDATE conversations SET created_at = ?, updated_at = ? WHERE id = ?",
                (when, when, conv_id),
            )
        for sub_id in submission_ids:
            await tx.execute(
                "UPDATE form_submissions SET created_at = ? WHERE id = ?", (when, sub_id)
            )


async def _agent_with_data(client, auth, retention_days: int | None):
    agent = await new_agent(client, auth)
    if retention_days is not None:
        await data_of(
            await client.patch(
                f"/api/v1/agents/{agent['id']}",
                json={"retentionDays": retention_days},
                headers=auth,
            )
        )
    resp = await client.post(
        "/api/v1/tools",
        json={
            "agentId": agent["id"],
            "name": "upload",
            "description": "Upload",
            "executionType": "form",
            "formSchema": {"fields": FIELDS},
            "formExecutionMode": "client",
            "formClientHandler": "save",
        },
        headers=auth,
    )
    tool_id = (await resp.json())["id"]
    convs, subs = [], []
    for n in range(2):
        stream = await chat(
            client, {"agentId": agent["id"], "messages": user(f"question {n}")}, auth
        )
        convs.append(stream.start["conversationId"])
        resp = await client.post(
            "/api/v1/form-submissions/submit",
            json={
                "toolId": tool_id,
                "formData": {"cv": data_url(b"file", "text/plain", "f.txt")},
                "fieldsCompleted": ["cv"],
            },
        )
        subs.append((await resp.json())["submissionId"])
    return agent, convs, subs


async def test_the_retention_job_purges_what_is_older_than_the_agents_days(make_client):
    client = await make_client(privacy={"retention_sweep_seconds": 0.2})
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    kept_agent, kept_convs, kept_subs = await _agent_with_data(client, auth, None)
    agent, convs, subs = await _agent_with_data(client, auth, 30)
    # Old rows of both agents; only the agent with retention loses them.
    await _backdate(client, 31, [convs[0], kept_convs[0]], [subs[0], kept_subs[0]])
    await _backdate(client, 29, [convs[1]], [subs[1]])

    async def purged() -> bool:
        # The job's run ends with the submissions' files: wait for the last of them.
        conv = await client.get(f"/api/v1/conversations/{convs[0]}", headers=auth)
        sub = await client.get(f"/api/v1/form-submissions/{subs[0]}", headers=auth)
        statuses = (conv.status, sub.status)
        return statuses == (404, 404) and not await stored_keys(client, f"{subs[0]}/")

    deadline = asyncio.get_running_loop().time() + 10
    while not await purged():
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.1)
    resp = await client.get(f"/api/v1/form-submissions/{subs[0]}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    for conv_id in (convs[1], *kept_convs):
        assert (await client.get(f"/api/v1/conversations/{conv_id}", headers=auth)).status == 200
    for sub_id in (subs[1], *kept_subs):
        resp = await client.get(f"/api/v1/form-submissions/{sub_id}", headers=auth)
        assert resp.status == 200
        assert await stored_keys(client, f"{sub_id}/")
    resp = await client.get("/api/v1/conversations", params={"agentId": agent["id"]}, headers=auth)
    assert (await resp.json())["pagination"]["total"] == 1


async def test_a_conversation_still_in_use_is_kept_and_the_job_runs_directly(client):
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    agent, convs, subs = await _agent_with_data(client, auth, 7)
    db, files = client.app[app_keys.db_key], files_of(client)
    # Started 10 days ago, written to today: idle for less than 7 days, kept.
    await _backdate(client, 10, convs)
    stream = await chat(
        client,
        {"agentId": agent["id"], "messages": user("still here"), "conversationId": convs[0]},
        auth,
    )
    assert stream.names[-1] == "message_stop"
    done = await purge_expired(db, files, 30)
    assert (done.conversations, done.submissions) == (1, 0)
    assert (await client.get(f"/api/v1/conversations/{convs[0]}", headers=auth)).status == 200
    # Everything is older than 7 days a week from now.
    later = await purge_expired(db, files, 30, now=datetime.now(UTC) + timedelta(days=8))
    assert (later.conversations, later.submissions) == (1, 2)
    assert not any([await stored_keys(client, f"{s}/") for s in subs])


async def test_the_delivery_log_is_kept_for_delivery_log_days(make_client, receiver):
    client = await make_client(webhooks={"retry_schedule_seconds": [0, 3600], "timeout_seconds": 1})
    owner, team = await create_user(client, "owner@example.com")
    auth = bearer(await key_for(client, team.id, owner.id))
    for path in ("/ok", "/fail"):
        await data_of(
            await client.post(
                "/api/v1/webhooks",
                json={"url": receiver.url(path), "events": ["conversation.created"]},
                headers=auth,
            ),
            201,
        )
    agent = await new_agent(client, auth)
    await chat(client, {"agentId": agent["id"], "messages": user("hi")}, auth)
    await receiver.wait_for(2)
    await asyncio.sleep(0.2)
    db, files = client.app[app_keys.db_key], files_of(client)
    assert (await purge_expired(db, files, 30)).deliveries == 0
    done = await purge_expired(db, files, 30, now=datetime.now(UTC) + timedelta(days=31))
    assert done.deliveries == 1  # the delivered one; the one still retrying stays
    rows = await db.reader.fetchall("SELECT status FROM webhook_deliveries")
    assert [r[0] for r in rows] == ["pending"]
    assert await db.reader.fetchval("SELECT COUNT(*) FROM webhook_events") == 1
