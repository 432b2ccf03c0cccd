"""Shared fixtures: the real app on a temporary SQLite file, API keys, the error helper."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from agentsvc.api import app_keys
from agentsvc.app import create_app
from agentsvc.config import Settings, load_settings
from agentsvc.db import holds
from agentsvc.services.team import accounts
from tests import pg

PUBLIC_ORIGIN = "http://127.0.0.1:8080"  # the public_url derived from the default listener


def make_settings(tmp_path: Path, **sections: dict[str, Any]) -> Settings:
    """Settings for a test: data in tmp_path, outbound to loopback allowed, plus overrides."""
    overrides: dict[str, Any] = {
        # Port 0 is never listened on here (the test server picks its own); links and the
        # trusted origin stay at the default listener's address.
        "server": {"data_dir": str(tmp_path / "data"), "port": 0, "public_url": PUBLIC_ORIGIN},
        "outbound": {"allow_private": True},
    }
    if pg.SERVER_URL:
        overrides["database"] = {"url": pg.database_url_for(tmp_path)}
        overrides["server"]["secret_key"] = "test-secret-shared-by-every-process"
        overrides["ratelimit"] = {"redis_url": pg.REDIS_URL}
    for name, values in sections.items():
        overrides[name] = {**overrides.get(name, {}), **values}
    return load_settings(None, environ={}, overrides=overrides)


# A write transaction holds only SQL (issue 29): one holding the writer longer, while the
# process worked at least half that time, fails its test.
WRITE_HOLD_LIMIT_SECONDS = 0.100


@pytest.fixture(autouse=True)
def _write_transactions_hold_only_sql():
    """Fail the test if a write transaction held the writer over 100 ms, naming where it
    was opened (agentsvc/db/holds.py times every one, on both backends).

    Only while the process was working: a hold during which it used under 50 ms of CPU
    was a busy machine not running it (the suite shares its cores with whatever else
    runs), not work done inside the transaction. Start-up migrations are not write
    transactions of the interface (they run before the app serves, on the writer
    connection directly) and are not timed."""
    held: list[tuple[float, float, str]] = []
    stop = holds.watch(WRITE_HOLD_LIMIT_SECONDS, lambda *found: held.append(found))
    yield
    stop()
    worked = [(s, cpu, where) for s, cpu, where in held if cpu >= WRITE_HOLD_LIMIT_SECONDS / 2]
    if worked:
        lines = "\n".join(
            f"  {seconds * 1000:.0f} ms ({cpu * 1000:.0f} ms of CPU), opened at {where}"
            for seconds, cpu, where in worked
        )
        pytest.fail(
            f"a write transaction held the writer over {WRITE_HOLD_LIMIT_SECONDS * 1000:.0f} ms"
            f" (run only SQL inside db.write()):\n{lines}",
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def _drop_postgres_schemas():
    """On PostgreSQL, drop the schemas the test's apps used (after they closed); those of
    module fixtures, set up before this one, live until the end of the session."""
    before = pg.mark()
    yield
    if pg.SERVER_URL:
        pg.drop_created(since=before)
        pg.flush_redis()


@pytest.fixture(autouse=True, scope="session")
def _drop_every_postgres_schema():
    yield
    if pg.SERVER_URL:
        pg.drop_created()


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
    db = client.app[app_keys.db_key]
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


@pytest.fixture
async def smtp_server():
    """A real SMTP server (aiosmtpd) on 127.0.0.1; pass `smtp=smtp_server.settings()`."""
    from tests.fakes.smtp import FakeSmtp

    server = await FakeSmtp().start()
    yield server
    await server.close()


async def outbox(client: TestClient, to: str | None = None) -> list:
    """Messages kept in the outbox table (no SMTP configured), newest first, bodies opened."""
    mailer = client.app[app_keys.mailer_key]
    await mailer.drain()
    return await mailer.kept(to)


SESSION_COOKIE = "agentsvc_session"
PASSWORD = "correct horse battery"  # noqa: S105 (a test password)


async def create_user(client: TestClient, email: str, password: str = PASSWORD, name: str = ""):
    """Create a user with a password and their own team; return (user, team)."""
    from agentsvc.passwords import hash_password_async

    db = client.app[app_keys.db_key]
    password_hash = await hash_password_async(password)
    async with db.write() as conn:
        return await accounts.create_user_with_team(
            conn, email=email, name=name, password_hash=password_hash, plan="pro"
        )


async def sign_in(client: TestClient, email: str, password: str = PASSWORD) -> str:
    """Sign in by e-mail and password; return the session token (the client's jar is cleared,
    so each test names the session it uses with `session(token)`)."""
    resp = await client.post(
        "/api/v1/auth/sign-in/email", json={"email": email, "password": password}
    )
    assert resp.status == 200, await resp.text()
    token = resp.cookies[SESSION_COOKIE].value
    client.session.cookie_jar.clear()
    return token


def session(token: str, origin: str | None = PUBLIC_ORIGIN) -> dict[str, str]:
    """Headers of a cookie-session request from a browser on `origin`."""
    headers = {"Cookie": f"{SESSION_COOKIE}={token}"}
    if origin is not None:
        headers["Origin"] = origin
    return headers


async def add_member(client: TestClient, team_id: str, email: str, role: str = "member"):
    """Make a (new) user a member of a team directly; return the user."""
    from agentsvc.ids import new_id, now_iso
    from agentsvc.store import accounts as account_store

    user, _ = await create_user(client, email)
    async with client.app[app_keys.db_key].write() as conn:
        await account_store.insert_membership(
            conn,
            id=new_id("membership"),
            team_id=team_id,
            user_id=user.id,
            role=role,
            now=now_iso(),
        )
    return user


async def key_for(client: TestClient, team_id: str, user_id: str) -> str:
    """A fresh API key of a user acting in a team."""
    async with client.app[app_keys.db_key].write() as conn:
        created = await accounts.create_api_key(conn, team_id=team_id, user_id=user_id, name="t")
    return created.key


def fill_path(endpoint, values: dict[str, str]) -> str:
    """An endpoint's full path with its parameters filled from `values`; a missing one gets
    an id that matches the route's pattern but names nothing (`tool_missing`)."""
    from agentsvc.api.routing import PATH_PARAM

    def value(match) -> str:
        name, pattern = match.group(1), match.group(2) or ""
        if name in values:
            return values[name]
        prefix = pattern.split("[", 1)[0] if pattern.split("[", 1)[0].endswith("_") else ""
        return f"{prefix}missing_id"

    return PATH_PARAM.sub(value, endpoint.full_path)


@pytest.fixture
async def openai_fake():
    """A fake OpenAI Chat Completions server on 127.0.0.1 (tests/fakes/openai_server.py)."""
    from tests.fakes import openai_server

    fake = await openai_server.FakeOpenAI().start()
    yield fake
    await fake.close()


@pytest.fixture
async def anthropic_fake():
    """A fake Anthropic Messages server on 127.0.0.1 (tests/fakes/anthropic_server.py)."""
    from tests.fakes import anthropic_server

    fake = await anthropic_server.FakeAnthropic().start()
    yield fake
    await fake.close()
