"""Mail the app kept in its outbox table (no SMTP configured)."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from agentsvc.api import app_keys


async def outbox(client: TestClient, to: str | None = None) -> list:
    """Messages kept in the outbox table (no SMTP configured), newest first, bodies opened."""
    mailer = client.app[app_keys.mailer_key]
    await mailer.drain()
    return await mailer.kept(to)
