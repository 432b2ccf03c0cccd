"""Team secrets: names-only listing, encryption at rest, the key file, per-team scope."""

from __future__ import annotations

import logging
import stat

import pytest

from agentsvc.api import app_keys
from agentsvc.app import create_app
from agentsvc.secretbox import KEY_FILE_NAME, SecretBox, SecretBoxError
from agentsvc.store import tools as tools_store
from tests.support import pg
from tests.support.accounts import bearer, new_api_key
from tests.support.errors import assert_error
from tests.support.fakes.http_receiver import HttpReceiver
from tests.support.pg import stored_bytes
from tests.support.settings import make_settings

VALUE = "sk-live-0123456789-very-secret"


async def test_put_list_delete(client, auth):
    resp = await client.get("/api/v1/secrets", headers=auth)
    assert resp.status == 200 and await resp.json() == []
    resp = await client.put("/api/v1/secrets/API_KEY", json={"value": VALUE}, headers=auth)
    assert resp.status == 200
    first = await resp.json()
    assert set(first) == {"name", "createdAt", "updatedAt"} and first["name"] == "API_KEY"
    resp = await client.put("/api/v1/secrets/API_KEY", json={"value": "v2"}, headers=auth)
    second = await resp.json()
    assert second["createdAt"] == first["createdAt"]
    await client.put("/api/v1/secrets/OTHER", json={"value": "x"}, headers=auth)
    resp = await client.get("/api/v1/secrets", headers=auth)
    listed = await resp.json()
    assert [s["name"] for s in listed] == ["API_KEY", "OTHER"]
    assert VALUE not in await resp.text() and "v2" not in await resp.text()
    resp = await client.delete("/api/v1/secrets/API_KEY", headers=auth)
    assert resp.status == 200 and await resp.json() == {"success": True}
    resp = await client.delete("/api/v1/secrets/API_KEY", headers=auth)
    await assert_error(resp, 404, "NOT_FOUND", "Secret not found")
    resp = await client.get("/api/v1/secrets", headers=auth)
    assert [s["name"] for s in await resp.json()] == ["OTHER"]


@pytest.mark.parametrize(
    ("name", "body", "message"),
    [
        ("1BAD", {"value": "x"}, "name: must start with a letter"),
        ("HAS-DASH", {"value": "x"}, "name:"),
        ("A" * 65, {"value": "x"}, "name:"),
        ("OK", {"value": ""}, "value"),
        ("OK", {}, "value: is required"),
        ("OK", {"value": 5}, "value"),
        ("OK", {"value": "x", "extra": 1}, "extra: is not a known field"),
    ],
)
async def test_bad_secrets_are_refused(client, auth, name, body, message):
    resp = await client.put(f"/api/v1/secrets/{name}", json=body, headers=auth)
    await assert_error(resp, 400, "VALIDATION_ERROR", message)
    resp = await client.get("/api/v1/secrets", headers=auth)
    assert await resp.json() == []


async def test_secrets_need_a_key_and_are_per_team(client, auth):
    resp = await client.get("/api/v1/secrets")
    await assert_error(resp, 401, "UNAUTHORIZED")
    await client.put("/api/v1/secrets/MINE", json={"value": VALUE}, headers=auth)
    other = bearer(await new_api_key(client, "other@example.com"))
    resp = await client.get("/api/v1/secrets", headers=other)
    assert await resp.json() == []
    resp = await client.delete("/api/v1/secrets/MINE", headers=other)
    await assert_error(resp, 404, "NOT_FOUND")
    resp = await client.get("/api/v1/secrets", headers=auth)
    assert [s["name"] for s in await resp.json()] == ["MINE"]


async def test_values_are_encrypted_at_rest_and_never_logged(client, auth, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    await client.put("/api/v1/secrets/API_KEY", json={"value": VALUE}, headers=auth)
    rows = await client.app[app_keys.db_key].reader.fetchall(
        "SELECT sealed_value FROM team_secrets"
    )
    assert rows and VALUE not in rows[0][0] and rows[0][0].startswith("v1:")
    assert VALUE.encode() not in await stored_bytes(client.app)
    for path in (tmp_path / "data").glob("*"):
        if path.is_file():
            assert VALUE.encode() not in path.read_bytes(), path
    assert VALUE not in caplog.text


@pg.sqlite_only  # with PostgreSQL the key is configured: never generated per process
async def test_key_file_is_created_once_with_private_permissions(client, auth, tmp_path):
    key_file = tmp_path / "data" / KEY_FILE_NAME
    assert key_file.exists()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    content = key_file.read_text()
    box = SecretBox.from_settings("", tmp_path / "data")
    assert key_file.read_text() == content  # reused, not regenerated
    assert box.open(box.seal("x", "c"), "c") == "x"


async def _tool_sending_secret(client, auth: dict, url: str) -> str:
    """Store secret TOKEN and an http tool sending it as X-Token to `url`; return the tool id."""
    await client.put("/api/v1/secrets/TOKEN", json={"value": VALUE}, headers=auth)
    resp = await client.post("/api/v1/agents", json={"name": "A"}, headers=auth)
    agent_id = (await resp.json())["data"]["id"]
    resp = await client.post(
        "/api/v1/tools",
        json={
            "agentId": agent_id,
            "name": "call",
            "description": "Call",
            "executionType": "http",
            "inputSchema": {"type": "object", "properties": {}},
            "httpUrl": url,
            "httpHeaders": {"X-Token": "{{TOKEN}}"},
        },
        headers=auth,
    )
    return (await resp.json())["id"]


async def test_secrets_survive_a_restart_and_fill_tools(aiohttp_client, aiohttp_server, tmp_path):
    receiver = HttpReceiver()
    server = await aiohttp_server(receiver.app)
    settings = make_settings(tmp_path)
    first = await aiohttp_client(create_app(settings))
    auth = bearer(await new_api_key(first))
    tool_id = await _tool_sending_secret(first, auth, str(server.make_url("/x")))
    await first.close()

    second = await aiohttp_client(create_app(settings))
    tool = await tools_store.get_public(second.app[app_keys.db_key].reader, tool_id)
    result = await second.app[app_keys.tool_runner_key].run(tool, {})
    assert not result.is_error, result
    assert receiver.requests[-1].headers["X-Token"] == VALUE


async def test_configured_secret_key_and_wrong_key(aiohttp_client, aiohttp_server, tmp_path):
    receiver = HttpReceiver()
    server = await aiohttp_server(receiver.app)
    settings = make_settings(tmp_path, server={"secret_key": "correct horse battery staple"})
    first = await aiohttp_client(create_app(settings))
    assert not (tmp_path / "data" / KEY_FILE_NAME).exists()
    auth = bearer(await new_api_key(first))
    tool_id = await _tool_sending_secret(first, auth, str(server.make_url("/x")))
    await first.close()

    wrong = make_settings(tmp_path, server={"secret_key": "another key"})
    second = await aiohttp_client(create_app(wrong))
    tool = await tools_store.get_public(second.app[app_keys.db_key].reader, tool_id)
    result = await second.app[app_keys.tool_runner_key].run(tool, {})
    assert result.is_error and "cannot be decrypted" in result.output
    assert receiver.requests == []


def test_sealed_values_are_bound_to_their_context(tmp_path):
    box = SecretBox.from_settings("k", tmp_path)
    sealed = box.seal("value", "secret:team_a:NAME")
    assert box.open(sealed, "secret:team_a:NAME") == "value"
    with pytest.raises(SecretBoxError):
        box.open(sealed, "secret:team_b:NAME")
    with pytest.raises(SecretBoxError):
        box.open(sealed[:-4] + "AAAA", "secret:team_a:NAME")
    assert box.seal("value") != box.seal("value")  # fresh nonce each time


async def test_deleting_an_agent_keeps_team_secrets(client, auth):
    await client.put("/api/v1/secrets/KEEP", json={"value": "x"}, headers=auth)
    resp = await client.post("/api/v1/agents", json={"name": "A"}, headers=auth)
    agent_id = (await resp.json())["data"]["id"]
    await client.delete(f"/api/v1/agents/{agent_id}", headers=auth)
    resp = await client.get("/api/v1/secrets", headers=auth)
    assert [s["name"] for s in await resp.json()] == ["KEEP"]
