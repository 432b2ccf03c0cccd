"""Shared fixtures: the real app on a temporary SQLite file, API keys, the error helper."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from agentsvc import keys
from agentsvc.app import create_app
from agentsvc.config import Settings, load_settings
from agentsvc.services import accounts


def make_settings(tmp_path: Path, **sections: dict[str, Any]) -> Settings:
    """Settings for a test: data in tmp_path, outbound to loopback allowed, plus overrides."""
    overrides: dict[str, Any] = {
        "server": {"data_dir": str(tmp_path / "data"), "port": 0},
        "outbound": {"allow_private": True},
    }
    for name, values in sections.items():
        overrides[name] = {**overrides.get(name, {}), **values}
    return load_settings(None, environ={}, overrides=overrides)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture
def make_client(aiohttp_client, tmp_path: Path) -> Callable[..., Any]:
    """Start the real app with optional setting overrides and return a test client."""

    async def start(settings: Settings | None = None, **sections: dict[str, Any]) -> TestClient:
        return await aiohttp_client(create_app(settings or make_settings(tmp_path, **sections)))

    return start


@pytest.fixture
async def client(make_client) -> TestClient:
    return await make_client()


async def new_api_key(client: TestClient, email: str = "owner@example.com", plan: str = "pro"):
    """Create (or reuse) a user with their own team on `plan` and return a fresh API key."""
    db = client.app[keys.db_key]
    user, team = await accounts.ensure_user_with_team(db, email=email, name="", plan=plan)
    async with db.write() as conn:
        created = await accounts.create_api_key(conn, team_id=team.id, user_id=user.id, name="t")
    return created.key


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
async def api_key(client: TestClient) -> str:
    return await new_api_key(client)


@pytest.fixture
def auth(api_key: str) -> dict[str, str]:
    return bearer(api_key)


async def assert_error(resp, status: int, code: str, message_contains: str | None = None) -> dict:
    """Assert an error response: status, JSON envelope shape, code, and optional message text."""
    assert resp.status == status, (resp.status, await resp.text())
    assert resp.content_type == "application/json"
    body = await resp.json()
    assert set(body) == {"data", "error"}, body
    assert body["data"] is None
    assert set(body["error"]) == {"code", "message"}, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if message_contains is not None:
        assert message_contains in body["error"]["message"], body
    return body["error"]
