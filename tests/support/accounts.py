"""Users, teams, API keys and cookie sessions made directly, for tests that need them."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from agentsvc.api import app_keys
from agentsvc.services.team import accounts
from tests.support.settings import PUBLIC_ORIGIN


async def new_api_key(client: TestClient, email: str = "owner@example.com", plan: str = "pro"):
    """Create (or reuse) a user with their own team on `plan` and return a fresh API key."""
    db = client.app[app_keys.db_key]
    user, team = await accounts.ensure_user_with_team(db, email=email, name="", plan=plan)
    async with db.write() as conn:
        created = await accounts.create_api_key(conn, team_id=team.id, user_id=user.id, name="t")
    return created.key


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


SESSION_COOKIE = "agentsvc_session"
_HASHES: dict[str, str] = {}


async def _password_hash(password: str) -> str:
    """A real argon2id hash of `password` by the service's own function, made once per test
    process and password: each costs 33 ms of CPU, and the suite creates hundreds of users
    with the same few passwords. Signing in still verifies it for real."""
    if password not in _HASHES:
        from agentsvc.passwords import hash_password_async

        _HASHES[password] = await hash_password_async(password)
    return _HASHES[password]


PASSWORD = "correct horse battery"  # noqa: S105 (a test password)


async def create_user(client: TestClient, email: str, password: str = PASSWORD, name: str = ""):
    """Create a user with a password and their own team; return (user, team)."""
    db = client.app[app_keys.db_key]
    password_hash = await _password_hash(password)
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
