"""Agents API: shapes, slugs, validation, roles, cross-team isolation, cascade."""

from __future__ import annotations

import re

from agentsvc.api import app_keys
from tests.support.accounts import bearer, new_api_key
from tests.support.errors import assert_error

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


async def create(client, auth, **body):
    resp = await client.post("/api/v1/agents", json={"name": "Support Bot", **body}, headers=auth)
    assert resp.status == 201, await resp.text()
    return (await resp.json())["data"]


async def test_create_returns_interface_shape(client, auth):
    resp = await client.post(
        "/api/v1/agents",
        json={"name": "Support Bot", "systemPrompt": "Be kind.", "temperature": 40},
        headers=auth,
    )
    assert resp.status == 201
    body = await resp.json()
    assert body["error"] is None
    agent = body["data"]
    assert set(agent) == {
        "id",
        "name",
        "slug",
        "model",
        "temperature",
        "systemPrompt",
        "language",
        "createdAt",
    }
    assert agent["language"] == "english"
    assert agent["id"].startswith("agt_") and len(agent["id"]) > 20
    assert agent["slug"] == "support-bot"
    assert agent["model"] == "builtin"
    assert agent["temperature"] == 40
    assert agent["systemPrompt"] == "Be kind."
    assert ISO.match(agent["createdAt"])


async def test_list_and_get_shapes(client, auth):
    first = await create(client, auth)
    second = await create(client, auth, name="Sales")
    resp = await client.get("/api/v1/agents", headers=auth)
    listed = (await resp.json())["data"]
    assert [a["id"] for a in listed] == [second["id"], first["id"]]
    assert set(listed[0]) == {"id", "name", "slug", "model", "createdAt"}
    resp = await client.get(f"/api/v1/agents/{first['id']}", headers=auth)
    agent = (await resp.json())["data"]
    assert set(agent) == {
        "id",
        "name",
        "slug",
        "model",
        "temperature",
        "systemPrompt",
        "language",
        "createdAt",
        "updatedAt",
        "version",
        "versioning",
        "draft",
        "experiment",
        "publishGate",
        "handoff",
        "guardrails",
        "widget",
        "showSources",
        "retentionDays",
        "budget",
    }
    assert (agent["version"], agent["versioning"], agent["draft"]) == (1, "live", None)


async def test_slugs_fold_accents_and_stay_unique(client, auth):
    assert (await create(client, auth, name="  Café  Crème!! "))["slug"] == "cafe-creme"
    assert (await create(client, auth, name="Café crème"))["slug"] == "cafe-creme-2"
    assert (await create(client, auth, name="CAFE_CREME"))["slug"] == "cafe-creme-3"
    assert (await create(client, auth, name="!!!"))["slug"] == "agent"


async def test_patch_is_partial_and_keeps_slug(client, auth):
    agent = await create(client, auth)
    resp = await client.patch(
        f"/api/v1/agents/{agent['id']}", json={"name": "Renamed", "temperature": 0}, headers=auth
    )
    assert resp.status == 200
    updated = (await resp.json())["data"]
    assert updated["name"] == "Renamed"
    assert updated["slug"] == "support-bot"
    assert updated["temperature"] == 0
    assert updated["systemPrompt"] == agent["systemPrompt"]
    assert updated["updatedAt"] >= updated["createdAt"]


async def test_delete_then_404(client, auth):
    agent = await create(client, auth)
    resp = await client.delete(f"/api/v1/agents/{agent['id']}", headers=auth)
    assert (await resp.json()) == {"data": {"id": agent["id"], "deleted": True}, "error": None}
    resp = await client.get(f"/api/v1/agents/{agent['id']}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.delete(f"/api/v1/agents/{agent['id']}", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND")


async def test_validation_errors_name_the_field(client, auth):
    cases = [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x", "temperature": 101}, "temperature"),
        ({"name": "x", "temperature": -1}, "temperature"),
        ({"name": "x", "temperature": "50"}, "temperature"),
        ({"name": 5}, "name"),
        ({"name": "x", "nmae": "typo"}, "nmae"),
        ({"name": "x", "model": None}, "model"),
        ({"name": "x", "model": "nosuch/model"}, "model"),
        ({"name": "x", "model": "gpt"}, "model"),
    ]
    for body, field in cases:
        resp = await client.post("/api/v1/agents", json=body, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", field)
    for raw in (b"{", b"[]", b"", b"null"):
        resp = await client.post("/api/v1/agents", data=raw, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", "body")
    resp = await client.get("/api/v1/agents", headers=auth)
    assert (await resp.json())["data"] == []  # nothing was created by bad input


async def test_model_defaults_from_configuration(make_client, tmp_path):
    client = await make_client(
        models={"default": "local/llama3.2:1b"},
        providers={"local": {"kind": "openai", "base_url": "http://127.0.0.1:1/v1"}},
    )
    auth = bearer(await new_api_key(client))
    agent = await create(client, auth)
    assert agent["model"] == "local/llama3.2:1b"
    agent = await create(client, auth, model="local/org/model:tag")
    assert agent["model"] == "local/org/model:tag"


async def test_another_teams_agent_is_not_found(client, auth):
    agent = await create(client, auth)
    other = bearer(await new_api_key(client, "other@example.com"))
    for method in ("get", "patch", "delete"):
        kwargs = {"json": {"name": "stolen"}} if method == "patch" else {}
        resp = await getattr(client, method)(
            f"/api/v1/agents/{agent['id']}", headers=other, **kwargs
        )
        await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get("/api/v1/agents", headers=other)
    assert (await resp.json())["data"] == []
    resp = await client.get(f"/api/v1/agents/{agent['id']}", headers=auth)
    assert (await resp.json())["data"]["name"] == "Support Bot"


async def test_members_may_edit_but_not_create_or_delete(client, auth):
    from agentsvc.ids import new_id, now_iso
    from agentsvc.services.team import accounts as accounts_service
    from agentsvc.store import accounts

    agent = await create(client, auth)
    db = client.app[app_keys.db_key]
    owner = await accounts.get_user_by_email(db.reader, "owner@example.com")
    team = await accounts.get_owned_team(db.reader, owner.id)
    async with db.write() as conn:
        member = await accounts.insert_user(
            conn,
            id=new_id("user"),
            email="m@example.com",
            name="M",
            password_hash=None,
            now=now_iso(),
        )
        await accounts.insert_membership(
            conn,
            id=new_id("membership"),
            team_id=team.id,
            user_id=member.id,
            role="member",
            now=now_iso(),
        )
        key = await accounts_service.create_api_key(
            conn, team_id=team.id, user_id=member.id, name="m"
        )
    member_auth = bearer(key.key)
    resp = await client.post("/api/v1/agents", json={"name": "x"}, headers=member_auth)
    await assert_error(resp, 403, "FORBIDDEN")
    resp = await client.delete(f"/api/v1/agents/{agent['id']}", headers=member_auth)
    await assert_error(resp, 403, "FORBIDDEN")
    resp = await client.patch(
        f"/api/v1/agents/{agent['id']}", json={"systemPrompt": "new"}, headers=member_auth
    )
    assert resp.status == 200
    resp = await client.get("/api/v1/agents", headers=member_auth)
    assert len((await resp.json())["data"]) == 1


async def test_reads_after_changes_are_never_stale(client, auth):
    agent = await create(client, auth)
    url = f"/api/v1/agents/{agent['id']}"
    assert (await (await client.get(url, headers=auth)).json())["data"]["name"] == "Support Bot"
    await client.patch(url, json={"name": "Renamed", "model": "builtin"}, headers=auth)
    fetched = (await (await client.get(url, headers=auth)).json())["data"]
    assert fetched["name"] == "Renamed"
    other = bearer(await new_api_key(client, "cache-other@example.com"))
    await assert_error(await client.get(url, headers=other), 404, "NOT_FOUND")  # cached, still
    await client.delete(url, headers=auth)
    await assert_error(await client.get(url, headers=auth), 404, "NOT_FOUND")


async def test_language_is_validated_and_kept(client, auth):
    agent = await create(client, auth, language="french")
    assert agent["language"] == "french"
    url = f"/api/v1/agents/{agent['id']}"
    for bad in ("klingon", "English", "porter", 5, None, "x" * 10_000):
        resp = await client.patch(url, json={"language": bad}, headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR", "language")
    resp = await client.post(
        "/api/v1/agents", json={"name": "X", "language": "latin"}, headers=auth
    )
    error = await assert_error(resp, 400, "VALIDATION_ERROR", "language: must be one of")
    assert '"german"' in error["message"]
    resp = await client.patch(url, json={"language": "german"}, headers=auth)
    assert (await resp.json())["data"]["language"] == "german"
    resp = await client.get(url, headers=auth)
    assert (await resp.json())["data"]["language"] == "german"


async def test_openapi_lists_the_languages(client):
    doc = await (await client.get("/api/v1/openapi.json")).json()
    text = str(doc)
    for schema in ("AgentCreate", "AgentPatch", "AgentOut"):
        assert schema in doc["components"]["schemas"], schema
    assert "'german'" in text and "'english'" in text and "'porter'" not in text


async def test_a_database_from_before_the_language_column_is_migrated(tmp_path):
    """Version 1 (no `language`): opening migrates it; its agents read as English."""
    import sqlite3

    from agentsvc.db.migrations import schema_at, schema_version
    from agentsvc.db.sqlite import SqliteDatabase

    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.executescript(schema_at(1))
    assert "language" not in [r[1] for r in old.execute("PRAGMA table_info(agents)")]
    # Foreign keys are off on this plain connection: no user is needed for the team.
    old.execute("INSERT INTO teams VALUES ('team_1', 'T', 'usr_1', 'pro', 'now', 'now')")
    old.execute(
        "INSERT INTO agents (id, team_id, name, slug, model, temperature, created_at, "
        "updated_at) VALUES ('agt_1', 'team_1', 'A', 'a', 'builtin', 70, 'now', 'now')"
    )
    old.commit()
    old.close()
    db = SqliteDatabase(path)
    await db.open()
    try:
        rows = await db.reader.fetchall("PRAGMA user_version")
        assert rows[0][0] == schema_version() >= 2
        rows = await db.reader.fetchall("SELECT language FROM agents")
        assert [r[0] for r in rows] == ["english"]
    finally:
        await db.close()
