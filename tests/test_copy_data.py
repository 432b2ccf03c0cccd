"""`agentsvc copy-data --to URL`: a SQLite instance moved into an empty PostgreSQL database
serves the same answers; `backup` and `migrate` on PostgreSQL. PostgreSQL side only."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from agentsvc.app import create_app
from agentsvc.config import load_settings
from agentsvc.db.copy import NOT_COPIED, TABLES
from tests.support import pg
from tests.support.accounts import bearer, new_api_key
from tests.support.chat import add_document, chat, new_agent, user
from tests.support.cli import run
from tests.support.images import png

pytestmark = pytest.mark.skipif(not pg.SERVER_URL, reason="needs the test PostgreSQL")


def settings_for(data_dir: Path, url: str = "", secret_key: str = ""):
    overrides = {
        "server": {"data_dir": str(data_dir), "port": 0, "secret_key": secret_key},
        "outbound": {"allow_private": True},
        "database": {"url": url},
    }
    return load_settings(None, environ={}, overrides=overrides)


def cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return run([*args, "--data-dir", str(data_dir)], data_dir.parent)


async def answers(client, auth: dict) -> dict:
    """What a team sees: agents, conversations with messages, submissions, a search."""
    agents = (await (await client.get("/api/v1/agents", headers=auth)).json())["data"]
    agent_id = agents[0]["id"]
    conversations = await (
        await client.get(f"/api/v1/conversations?agentId={agent_id}", headers=auth)
    ).json()
    first = conversations["data"][0]["id"]
    messages = (await (await client.get(f"/api/v1/conversations/{first}", headers=auth)).json())[
        "data"
    ]["messages"]
    documents = await (
        await client.get(f"/api/v1/agents/{agent_id}/documents", headers=auth)
    ).json()
    return {
        "agents": [(a["id"], a["name"], a["slug"]) for a in agents],
        "conversations": [c["id"] for c in conversations["data"]],
        "total": conversations["pagination"]["total"],
        "messages": [(m["role"], m["content"]) for m in messages],
        "documents": [(d["id"], d["status"], d["passageCount"]) for d in documents["data"]],
    }


async def test_copy_data_moves_an_instance_and_checks_counts(aiohttp_client, tmp_path):
    data_dir = tmp_path / "data"
    client = await aiohttp_client(create_app(settings_for(data_dir)))
    key = await new_api_key(client)
    auth = bearer(key)
    agent = await new_agent(client, auth, name="Shop")
    await add_document(client, auth, agent["id"], "Refunds", "Refunds take five days.")
    for n in range(3):
        await chat(client, {"agentId": agent["id"], "messages": user(f"question {n}")})
    before = await answers(client, auth)
    await client.close()

    url = pg.fresh_database_url()
    done = cli(data_dir, "copy-data", "--to", url)
    assert done.returncode == 0, done.stderr
    assert "every table's count matches" in done.stdout
    assert "messages: 6 rows" in done.stdout

    # The copy serves the same answers with the same key, and keeps counting.
    moved = await aiohttp_client(create_app(settings_for(data_dir, url)))
    assert await answers(moved, auth) == before
    await chat(moved, {"agentId": agent["id"], "messages": user("refund")})
    after = await answers(moved, auth)
    assert after["total"] == before["total"] + 1

    again = cli(data_dir, "copy-data", "--to", url)
    assert again.returncode == 1
    assert "not empty" in again.stderr


async def test_copy_data_refuses_what_it_cannot_do(tmp_path):
    bad = cli(tmp_path / "data", "copy-data", "--to", "mysql://x/y")
    assert bad.returncode == 2 and "--to: must be a postgresql:// URL" in bad.stderr
    missing = cli(tmp_path / "nothing", "copy-data", "--to", pg.fresh_database_url())
    assert missing.returncode == 1 and f"no database in {tmp_path / 'nothing'}" in missing.stderr
    unreachable = cli(tmp_path / "nothing", "copy-data", "--to", "postgresql://x@127.0.0.1:1/y")
    assert unreachable.returncode == 1


async def test_backup_and_migrate_on_postgresql(aiohttp_client, tmp_path):
    url = pg.fresh_real_database_url()
    settings = settings_for(tmp_path / "data", url, secret_key="k")
    client = await aiohttp_client(create_app(settings))
    await new_api_key(client)
    await client.close()
    env_args = ("--config", str(_config(tmp_path, url)))
    migrated = cli(tmp_path / "data", "migrate", *env_args)
    assert migrated.returncode == 0, migrated.stderr
    assert "PostgreSQL 127.0.0.1" in migrated.stdout and "schema version" in migrated.stdout
    assert "@" not in migrated.stdout  # never the user or password
    target = tmp_path / "backup.dump"
    backup = cli(tmp_path / "data", "backup", str(target), *env_args)
    assert backup.returncode == 0, backup.stderr
    assert target.read_bytes().startswith(b"PGDMP")  # pg_dump's custom format
    assert target.stat().st_mode & 0o777 == 0o600
    again = cli(tmp_path / "data", "backup", str(target), *env_args)
    assert again.returncode == 1 and "already exists" in again.stderr


def _config(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "pg.toml"
    path.write_text(f'[database]\nurl = "{url}"\n[server]\nsecret_key = "k"\n', encoding="utf-8")
    return path


async def test_copy_data_keeps_review_answers_searches_and_figures(aiohttp_client, tmp_path):
    """Curated answers, ratings, unanswered questions and trigger figures arrive; the search
    index and the counters are built again on PostgreSQL from the copied rows."""
    data_dir = tmp_path / "data"
    client = await aiohttp_client(create_app(settings_for(data_dir)))
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, name="Shop", systemPrompt="Refunds take five days.")
    resp = await client.post(
        f"/api/v1/agents/{agent['id']}/answers",
        json={"question": "Do you sell hats?", "answer": "Caps only."},
        headers=auth,
    )
    assert resp.status == 201
    resp = await client.post(
        f"/api/v1/triggers?agentId={agent['id']}",
        json={"name": "Invite", "triggerType": "exit_intent", "conditions": {},
              "actionType": "open_chat", "actionConfig": {}},
        headers=auth,
    )  # fmt: skip
    trigger = await resp.json()
    await client.post(
        "/api/v1/triggers/event",
        json={"agentId": agent["id"], "triggerId": trigger["id"], "triggerName": "Invite",
              "triggerType": "exit_intent", "actionType": "open_chat", "eventType": "fired"},
    )  # fmt: skip
    stream = await chat(
        client,
        {
            "agentId": agent["id"],
            "messages": user("Any discount code?"),
            "triggerId": trigger["id"],
        },
    )
    conv_id, answer_id = stream.start["conversationId"], stream.start["messageId"]
    await client.post(
        f"/api/v1/conversations/{conv_id}/feedback",
        json={"messageId": answer_id, "rating": "down"},
        headers=auth,
    )
    await chat(client, {"agentId": agent["id"], "messages": user("refunds?")})

    async def seen(app_client) -> dict:
        async def data(path: str):
            return (await (await app_client.get(f"/api/v1{path}", headers=auth)).json())["data"]

        figures = await data(f"/agents/{agent['id']}/analytics")
        return {
            "feedback": await data(f"/feedback?agentId={agent['id']}&rating=down"),
            "answers": await data(f"/agents/{agent['id']}/answers"),
            "search": [
                c["id"] for c in await data(f"/conversations?agentId={agent['id']}&q=refund")
            ],
            "totals": figures["totals"],
            "triggers": figures["triggers"],
            "questions": figures["unansweredQuestions"],
        }

    before = await seen(client)
    assert before["search"] and before["feedback"] and before["questions"]
    assert before["triggers"][0]["fired"] == 1 and before["totals"]["triggerConversations"] == 1
    await client.close()
    url = pg.fresh_database_url()
    done = cli(data_dir, "copy-data", "--to", url)
    assert done.returncode == 0, done.stderr
    moved = await aiohttp_client(create_app(settings_for(data_dir, url)))
    assert await seen(moved) == before


async def test_copy_data_keeps_the_desk(aiohttp_client, tmp_path):
    """Notes, canned responses, read markers and members' pictures move too."""
    data_dir = tmp_path / "data"
    client = await aiohttp_client(create_app(settings_for(data_dir)))
    auth = bearer(await new_api_key(client))
    agent = await new_agent(client, auth, name="Shop")
    conv = (await chat(client, {"agentId": agent["id"], "messages": user("hi")})).start[
        "conversationId"
    ]
    note = {"content": "VIP customer"}
    assert (await client.post(f"/api/v1/conversations/{conv}/notes", json=note, headers=auth)).ok
    assert (await client.post(f"/api/v1/conversations/{conv}/read", headers=auth)).ok
    canned = {"shortcut": "hi", "title": "Hello", "content": "Hello there!"}
    assert (await client.post("/api/v1/team/canned-responses", json=canned, headers=auth)).ok
    headers = {**auth, "Content-Type": "image/png"}
    avatar = await (await client.put("/api/v1/me/avatar", data=png(), headers=headers)).json()
    path = avatar["avatarUrl"][avatar["avatarUrl"].index("/api/v1/") :]
    await client.close()

    url = pg.fresh_database_url()
    done = cli(data_dir, "copy-data", "--to", url)
    assert done.returncode == 0, done.stderr
    moved = await aiohttp_client(create_app(settings_for(data_dir, url)))
    got = (await (await moved.get(f"/api/v1/conversations/{conv}", headers=auth)).json())["data"]
    assert [n["content"] for n in got["notes"]] == ["VIP customer"]
    listed = await (await moved.get("/api/v1/team/canned-responses", headers=auth)).json()
    assert [c["shortcut"] for c in listed] == ["hi"]
    assert await (await moved.get(path)).read() == png()


def test_copy_data_names_every_table_of_the_schema():
    """A table added later is copied, or listed as not copied with the reason."""
    schema = (Path(__file__).resolve().parent.parent / "schema.sql").read_text(encoding="utf-8")
    tables = set(re.findall(r"CREATE (?:VIRTUAL )?TABLE (\w+)", schema))
    assert tables == set(TABLES) | set(NOT_COPIED), tables ^ (set(TABLES) | set(NOT_COPIED))
    assert not set(TABLES) & set(NOT_COPIED)


async def test_copy_data_keeps_webhooks_the_audit_log_and_provisioning(aiohttp_client, tmp_path):
    data_dir = tmp_path / "data"
    client = await aiohttp_client(create_app(settings_for(data_dir)))
    auth = bearer(await new_api_key(client))
    hook = {"url": "http://127.0.0.1:9/hook", "events": ["conversation.created"]}
    assert (await client.post("/api/v1/webhooks", json=hook, headers=auth)).status == 201
    scim = await (await client.post("/api/v1/team/scim-token", headers=auth)).json()
    log = (await (await client.get("/api/v1/audit-log", headers=auth)).json())["data"]
    await client.close()

    done = cli(data_dir, "copy-data", "--to", pg.fresh_database_url())
    assert done.returncode == 0, done.stderr
    url = done.args[done.args.index("--to") + 1]
    moved = await aiohttp_client(create_app(settings_for(data_dir, url)))
    hooks = (await (await moved.get("/api/v1/webhooks", headers=auth)).json())["data"]
    assert [h["url"] for h in hooks] == [hook["url"]]
    assert (await (await moved.get("/api/v1/audit-log", headers=auth)).json())["data"] == log
    token = scim.get("token") or scim["data"]["token"]
    users = await moved.get("/api/v1/scim/v2/Users", headers=bearer(token))
    assert users.status == 200, await users.text()
