"""An agent's versions: kept on every change of what it does, listed, compared, restored,
named on the answers they made; isolated by team; bad input refused."""

from __future__ import annotations

import sqlite3

from agentsvc.api import app_keys
from agentsvc.app import create_app
from tests.support import pg
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import chat, new_agent, user
from tests.support.errors import assert_error
from tests.support.settings import make_settings


async def _get(client, auth, path: str, status: int = 200) -> dict:
    resp = await client.get(f"/api/v1{path}", headers=auth)
    assert resp.status == status, await resp.text()
    return await resp.json()


async def _patch(client, auth, agent_id: str, **fields) -> dict:
    resp = await client.patch(f"/api/v1/agents/{agent_id}", json=fields, headers=auth)
    assert resp.status == 200, await resp.text()
    return (await resp.json())["data"]


async def _versions(client, auth, agent_id: str) -> list[dict]:
    return (await _get(client, auth, f"/agents/{agent_id}/versions"))["data"]


async def test_each_change_of_behaviour_is_a_version_and_nothing_else_is(client, auth):
    agent = await new_agent(client, auth, systemPrompt="We open at nine.")
    listed = await _versions(client, auth, agent["id"])
    assert [(v["number"], v["note"], v["live"]) for v in listed] == [(1, "Created", True)]
    # The owner has no name yet: the key they used names the change.
    assert listed[0]["author"] == {
        "userId": listed[0]["author"]["userId"],
        "name": None,
        "via": "apiKey",
        "keyName": "t",
    }
    assert listed[0]["author"]["userId"].startswith("usr_")

    assert (await _patch(client, auth, agent["id"], systemPrompt="We open at ten."))["version"] == 2
    # The name, the widget's look and the same prompt again change nothing it does.
    await _patch(client, auth, agent["id"], name="Renamed", widget={"appearance": {"title": "Hi"}})
    same = await _patch(client, auth, agent["id"], systemPrompt="We open at ten.")
    assert same["version"] == 2
    await _patch(client, auth, agent["id"], handoff={"enabled": True})
    await _patch(client, auth, agent["id"], temperature=20, language="german")
    listed = await _versions(client, auth, agent["id"])
    assert [(v["number"], v["live"]) for v in listed] == [
        (4, True),
        (3, False),
        (2, False),
        (1, False),
    ]
    got = (await _get(client, auth, f"/agents/{agent['id']}"))["data"]
    assert got["version"] == 4

    detail = (await _get(client, auth, f"/agents/{agent['id']}/versions/2"))["data"]
    assert detail["snapshot"]["systemPrompt"] == "We open at ten."
    assert detail["snapshot"]["handoff"]["enabled"] is False
    assert detail["live"] is False
    latest = (await _get(client, auth, f"/agents/{agent['id']}/versions/4"))["data"]
    assert latest["snapshot"]["temperature"] == 20
    assert latest["snapshot"]["language"] == "german"
    assert latest["snapshot"]["handoff"]["enabled"] is True


async def test_a_diff_names_the_changed_fields_and_the_prompts_lines(client, auth):
    agent = await new_agent(client, auth, systemPrompt="Line one.\nLine two.\nLine three.")
    await _patch(
        client,
        auth,
        agent["id"],
        systemPrompt="Line one.\nLine 2.\nLine three.",
        handoff={"notify": {"teamChat": "http://127.0.0.1:9/hook"}},
    )
    found = (await _get(client, auth, f"/agents/{agent['id']}/versions/1/diff/2"))["data"]
    assert found["from"] == 1 and found["to"] == 2
    fields = {c["field"]: c for c in found["changes"]}
    assert set(fields) == {"systemPrompt", "handoff"}
    assert fields["systemPrompt"]["lines"] == [
        "@@ -1,3 +1,3 @@",
        " Line one.",
        "-Line two.",
        "+Line 2.",
        " Line three.",
    ]
    assert fields["handoff"]["after"]["notify"]["teamChat"] == "http://127.0.0.1:9/hook"
    # The team chat's signing secret, sealed in the snapshot, is never shown by a version.
    assert "Sealed" not in str(found) and "whsec_" not in str(found)
    back = (await _get(client, auth, f"/agents/{agent['id']}/versions/2/diff/1"))["data"]
    assert [c["field"] for c in back["changes"]] == ["systemPrompt", "handoff"]
    same = (await _get(client, auth, f"/agents/{agent['id']}/versions/2/diff/2"))["data"]
    assert same["changes"] == []


async def test_a_long_prompts_change_is_shown_whole_without_a_line_diff(client, auth):
    long = "\n".join(f"rule {i}" for i in range(6_000))
    agent = await new_agent(client, auth, systemPrompt="short")
    await _patch(client, auth, agent["id"], systemPrompt=long)
    found = (await _get(client, auth, f"/agents/{agent['id']}/versions/1/diff/2"))["data"]
    assert found["changes"][0]["lines"] is None
    assert found["changes"][0]["after"] == long


async def test_restore_makes_an_old_version_live_as_a_new_one(client, auth):
    agent = await new_agent(client, auth, systemPrompt="We open at nine.")
    await _patch(client, auth, agent["id"], systemPrompt="We open at ten.", temperature=10)
    resp = await client.post(f"/api/v1/agents/{agent['id']}/versions/1/restore", headers=auth)
    assert resp.status == 200, await resp.text()
    body = (await resp.json())["data"]
    assert body["restored"] is True
    assert body["version"]["number"] == 3 and body["version"]["note"] == "Restored version 1"
    assert body["agent"]["systemPrompt"] == "We open at nine."
    assert body["agent"]["temperature"] == 70 and body["agent"]["version"] == 3
    answer = await chat(client, {"agentId": agent["id"], "messages": user("When do you open?")})
    assert answer.text == "We open at nine."
    # Restoring what is live already makes nothing new.
    resp = await client.post(f"/api/v1/agents/{agent['id']}/versions/3/restore", headers=auth)
    again = (await resp.json())["data"]
    assert again["restored"] is False and again["version"]["number"] == 3
    log = (await _get(client, auth, "/audit-log?action=agent.version_restored"))["data"]
    assert [e["details"] for e in log] == [{"restored": 1, "version": 3}]


async def test_each_answer_names_the_version_that_made_it(client, auth):
    agent = await new_agent(client, auth, systemPrompt="We open at nine.")
    body = {"agentId": agent["id"], "sessionId": "s-1", "messages": user("When do you open?")}
    first = await chat(client, body)
    conversation_id = first.start["conversationId"]
    await _patch(client, auth, agent["id"], systemPrompt="We open at ten.")
    body = {**body, "conversationId": conversation_id, "messages": user("When do you open again?")}
    assert (await chat(client, body)).text == "We open at ten."
    messages = (await _get(client, auth, f"/conversations/{conversation_id}"))["data"]["messages"]
    assert [(m["role"], m["agentVersion"]) for m in messages] == [
        ("user", None),
        ("assistant", 1),
        ("user", None),
        ("assistant", 2),
    ]


async def test_versions_are_the_teams_alone_and_bad_numbers_are_not_found(client, auth):
    agent = await new_agent(client, auth)
    other = bearer(await new_api_key(client, "other@example.com"))
    base = f"/api/v1/agents/{agent['id']}/versions"
    for path in ("", "/1", "/1/diff/1"):
        await assert_error(await client.get(base + path, headers=other), 404, "NOT_FOUND")
    resp = await client.post(f"{base}/1/restore", headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    for bad in ("0", "2", "-1", "abc", "1e3", "9999999999", "%EF%BC%91"):
        resp = await client.get(f"{base}/{bad}", headers=auth)
        await assert_error(resp, 404, "NOT_FOUND")
        resp = await client.get(f"{base}/1/diff/{bad}", headers=auth)
        await assert_error(resp, 404, "NOT_FOUND")
        resp = await client.post(f"{base}/{bad}/restore", headers=auth)
        await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get(f"{base}/2", headers=auth)
    assert (await resp.json())["error"]["message"] == "This agent has no version 2"
    # Nothing about a member reaches past the name: no e-mail address.
    assert "@" not in await (await client.get(base, headers=auth)).text()


async def test_the_list_pages_by_cursor_and_refuses_a_forged_one(client, auth):
    agent = await new_agent(client, auth)
    for n in range(4):
        await _patch(client, auth, agent["id"], temperature=n)
    base = f"/agents/{agent['id']}/versions"
    first = await _get(client, auth, f"{base}?limit=2")
    assert [v["number"] for v in first["data"]] == [5, 4]
    cursor = first["pagination"]["nextCursor"]
    second = await _get(client, auth, f"{base}?limit=2&cursor={cursor}")
    assert [v["number"] for v in second["data"]] == [3, 2]
    third = await _get(client, auth, f"{base}?limit=2&cursor={second['pagination']['nextCursor']}")
    assert [v["number"] for v in third["data"]] == [1]
    assert third["pagination"]["nextCursor"] is None
    # Not base64 JSON; ["x","y"]; ["x","99999999999999999999"] (past any number SQL holds)
    for forged in ("abc", "WyJ4IiwieSJd", "WyJ4IiwiOTk5OTk5OTk5OTk5OTk5OTk5OTkiXQ"):
        resp = await client.get(f"/api/v1{base}?cursor={forged}", headers=auth)
        await assert_error(resp, 400, "VALIDATION_ERROR")


async def test_a_version_whose_model_is_gone_is_refused_with_a_reason(make_client, tmp_path):
    claude = {"claude": {"kind": "anthropic", "base_url": "http://127.0.0.1:9", "api_key": "k"}}
    client = await make_client(providers=claude)
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, model="claude/claude-fake-1")
    await _patch(client, auth, agent["id"], model="builtin")
    await client.close()
    client = await make_client(settings=make_settings(tmp_path))
    resp = await client.post(f"/api/v1/agents/{agent['id']}/versions/1/restore", headers=auth)
    error = await assert_error(resp, 400, "VALIDATION_ERROR")
    assert "claude/claude-fake-1" in error["message"] and "does not offer" in error["message"]
    assert (await _get(client, auth, f"/agents/{agent['id']}"))["data"]["version"] == 2


async def test_deleting_an_agent_removes_its_versions(client, auth):
    agent = await new_agent(client, auth)
    await _patch(client, auth, agent["id"], temperature=5)
    resp = await client.delete(f"/api/v1/agents/{agent['id']}", headers=auth)
    assert resp.status == 200
    db = client.app[app_keys.db_key]
    assert await db.reader.fetchval("SELECT COUNT(*) FROM agent_versions") == 0


_OLD_ROWS = (
    "INSERT INTO users (id, email, name, created_at, updated_at) VALUES"
    " ('usr_1', 'you@example.com', 'You', 't', 't');",
    "INSERT INTO teams VALUES ('team_1', 'Shop', 'usr_1', 'pro', 't', 't');",
    "INSERT INTO memberships (id, team_id, user_id, role, created_at)"
    " VALUES ('mem_1', 'team_1', 'usr_1', 'owner', 't');",
    "INSERT INTO agents (id, team_id, name, slug, model, temperature, system_prompt, created_at,"
    " updated_at, handoff) VALUES ('agt_1', 'team_1', 'A', 'a', 'builtin', 70, 'Hello.', 't',"
    " '2026-01-02', NULL), ('agt_2', 'team_1', 'B', 'b', 'builtin', 40.5, '', 't',"
    ' \'2026-01-03\', \'{"enabled": true, "offlineMessage": "Later."}\');',
)


async def _database_of_version_16(tmp_path) -> None:
    """The test's database as version 16 left it, with two agents in it."""
    if not pg.SERVER_URL:
        from agentsvc.db.migrations import schema_at

        data = tmp_path / "data"
        data.mkdir(mode=0o700)
        old = sqlite3.connect(data / "agentsvc.db")
        old.executescript(schema_at(16))
        with old:
            old.executescript("".join(_OLD_ROWS))
        old.close()
        return
    import asyncpg

    from agentsvc.db.migrations import VERSIONS
    from agentsvc.db.postgres import PostgresDatabase

    url = pg.database_url_for(tmp_path)
    db = PostgresDatabase(url)
    await db.open()
    await db.close()
    conn = await asyncpg.connect(url)
    for later in VERSIONS[16:][::-1]:
        await conn.execute(later.undo_postgres)
    await conn.execute("UPDATE schema_info SET version = 16")
    for statement in _OLD_ROWS:
        await conn.execute(statement)
    await conn.close()


async def test_agents_older_than_versions_start_at_version_1_as_they_were(aiohttp_client, tmp_path):
    await _database_of_version_16(tmp_path)
    client = await aiohttp_client(create_app(make_settings(tmp_path)))
    db = client.app[app_keys.db_key]
    rows = await db.reader.fetchall(
        "SELECT a.id, a.version, v.number, v.note, v.created_at FROM agents a"
        " JOIN agent_versions v ON v.agent_id = a.id ORDER BY a.id"
    )
    assert [tuple(r) for r in rows] == [
        ("agt_1", 1, 1, "As it was when versions began", "2026-01-02"),
        ("agt_2", 1, 1, "As it was when versions began", "2026-01-03"),
    ]
    # Version 1 holds what the agent does exactly: the same values again make no version.
    auth = bearer(await new_api_key(client, "you@example.com"))
    for agent_id, prompt in (("agt_1", "Hello."), ("agt_2", "")):
        resp = await client.patch(
            f"/api/v1/agents/{agent_id}",
            json={"systemPrompt": prompt, "temperature": 70 if agent_id == "agt_1" else 40.5},
            headers=auth,
        )
        assert (await resp.json())["data"]["version"] == 1
    first = (await _get(client, auth, "/agents/agt_2/versions/1"))["data"]["snapshot"]
    assert first["handoff"]["enabled"] is True
    assert first["handoff"]["offlineMessage"] == "Later."


async def test_tools_are_versioned_and_restored_with_their_ids(client, auth):
    from tests.support.chat import new_tool

    agent = await new_agent(client, auth, systemPrompt="We open at nine.")
    tool = await new_tool(client, auth, agent["id"], "lookup")
    resp = await client.put(
        f"/api/v1/tools/{tool['id']}", json={"description": "Finds orders"}, headers=auth
    )
    assert resp.status == 200, await resp.text()
    listed = await _versions(client, auth, agent["id"])
    assert [v["number"] for v in listed] == [3, 2, 1]
    third = (await _get(client, auth, f"/agents/{agent['id']}/versions/3"))["data"]["snapshot"]
    assert [(t["id"], t["name"], t["description"]) for t in third["tools"]] == [
        (tool["id"], "lookup", "Finds orders")
    ]
    assert "formWebhookSecret" not in third["tools"][0]
    changed = (await _get(client, auth, f"/agents/{agent['id']}/versions/2/diff/3"))["data"]
    assert [(c["field"], c["changed"]) for c in changed["changes"]] == [("tools", ["lookup"])]
    first = (await _get(client, auth, f"/agents/{agent['id']}/versions/1/diff/2"))["data"]
    assert (first["changes"][0]["added"], first["changes"][0]["removed"]) == (["lookup"], [])

    await client.delete(f"/api/v1/tools/{tool['id']}", headers=auth)
    resp = await client.post(f"/api/v1/agents/{agent['id']}/versions/3/restore", headers=auth)
    assert (await resp.json())["data"]["version"]["number"] == 5
    back = await _get(client, auth, f"/tools?agentId={agent['id']}")
    assert [(t["id"], t["description"]) for t in back] == [(tool["id"], "Finds orders")]
    # Restoring version 1 takes the tool away again; nothing else was lost.
    await client.post(f"/api/v1/agents/{agent['id']}/versions/1/restore", headers=auth)
    assert await _get(client, auth, f"/tools?agentId={agent['id']}") == []
    assert [v["number"] for v in await _versions(client, auth, agent["id"])][:1] == [6]


async def test_in_draft_mode_tools_change_at_once_and_publishing_keeps_them(client, auth):
    from tests.support.chat import new_tool

    agent = await new_agent(client, auth, systemPrompt="We open at nine.")
    await _patch(client, auth, agent["id"], versioning="draft", systemPrompt="Draft.")
    await new_tool(client, auth, agent["id"], "lookup")
    got = (await _get(client, auth, f"/agents/{agent['id']}"))["data"]
    assert got["version"] == 2 and got["draft"]["snapshot"]["tools"] is None
    resp = await client.post(f"/api/v1/agents/{agent['id']}/publish", json={}, headers=auth)
    published = (await resp.json())["data"]
    assert published["agent"]["systemPrompt"] == "Draft." and published["version"]["number"] == 3
    tools = await _get(client, auth, f"/tools?agentId={agent['id']}")
    assert [t["name"] for t in tools] == ["lookup"]
    snapshot = (await _get(client, auth, f"/agents/{agent['id']}/versions/3"))["data"]["snapshot"]
    assert [t["name"] for t in snapshot["tools"]] == ["lookup"]
