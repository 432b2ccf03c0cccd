"""The in-process scheduler. It only wakes jobs; pending work lives in the database."""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from agentsvc import keys


async def scheduler_ctx(app: web.Application) -> AsyncIterator[None]:
    """cleanup_ctx: run an AsyncIOScheduler for the app's life."""
    scheduler = AsyncIOScheduler(timezone="UTC")
    scheduler.start()
    app[keys.scheduler_key] = scheduler
    yield
    scheduler.shutdown(wait=False)
