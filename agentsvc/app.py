"""create_app(settings): the aiohttp application with its resources and routes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import orjson
from aiohttp import web

from agentsvc import keys
from agentsvc.api import all_endpoints
from agentsvc.api.bodies import BodySlots
from agentsvc.api.chat import chat_ctx, close_streams
from agentsvc.api.documents import knowledge_body_mb
from agentsvc.api.openapi import build_document
from agentsvc.api.pipeline import add_fallback
from agentsvc.api.routing import make_handler
from agentsvc.api.system import openapi_body_key
from agentsvc.auth_runtime import auth_ctx
from agentsvc.config import Settings
from agentsvc.db.sqlite import SqliteDatabase
from agentsvc.jobs import scheduler_ctx
from agentsvc.observability import Metrics, metrics_key
from agentsvc.outbound import OutboundClient
from agentsvc.ratelimit import TokenBuckets
from agentsvc.secretbox import SecretBox
from agentsvc.services.agents.registry import AgentCache
from agentsvc.services.forms.delivery import delivery_ctx
from agentsvc.services.knowledge.indexing import knowledge_ctx
from agentsvc.services.team.access import KeyResolver
from agentsvc.services.tools.runner import ToolRunner
from agentsvc.services.triggers.events import event_writer_ctx


async def _database_ctx(app: web.Application) -> AsyncIterator[None]:
    db = SqliteDatabase(app[keys.settings_key].db_path)
    await db.open()
    checkpoints = asyncio.create_task(db.run_checkpoints(), name="wal-checkpoints")
    app[keys.db_key] = db
    app[keys.key_resolver_key] = KeyResolver(db)
    app[keys.agent_cache_key] = AgentCache()
    yield
    checkpoints.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await checkpoints
    await db.close()


async def _tools_ctx(app: web.Application) -> AsyncIterator[None]:
    """The secret box, the guarded outbound client and the tool runner built on them."""
    settings = app[keys.settings_key]
    box = SecretBox.from_settings(settings.server.secret_key, settings.server.data_dir)
    outbound = OutboundClient(
        allow_private=settings.outbound.allow_private,
        resolver=app.get(keys.outbound_resolver_key),
    )
    await outbound.open()
    app[keys.secret_box_key] = box
    app[keys.outbound_key] = outbound
    app[keys.tool_runner_key] = ToolRunner(app[keys.db_key], box, outbound)
    yield
    await outbound.close()


def create_app(settings: Settings) -> web.Application:
    """Build the application; resources open on startup and close on cleanup."""
    server = settings.server
    # aiohttp's own cap is the largest body any endpoint takes; endpoints check their own.
    max_mb = max(server.max_body_mb, server.submit_max_body_mb, knowledge_body_mb(settings))
    # No middleware and no response hook: see api/pipeline.py.
    app = web.Application(client_max_size=int(max_mb * 1024 * 1024))
    app[keys.settings_key] = settings
    app[keys.rate_buckets_key] = TokenBuckets()
    app[keys.body_slots_key] = BodySlots(server.max_large_bodies, server.large_body_wait_seconds)
    app.cleanup_ctx.append(_database_ctx)
    app.cleanup_ctx.append(scheduler_ctx)
    app.cleanup_ctx.append(_tools_ctx)
    app.cleanup_ctx.append(event_writer_ctx)
    app.cleanup_ctx.append(chat_ctx)
    app.cleanup_ctx.append(knowledge_ctx)  # after chat_ctx: embeddings use its ClientSession
    app.cleanup_ctx.append(auth_ctx)
    app.cleanup_ctx.append(delivery_ctx)
    app.on_shutdown.append(close_streams)
    app[metrics_key] = Metrics()

    endpoints = all_endpoints()
    for endpoint in endpoints:
        app.router.add_route(endpoint.method, endpoint.full_path, make_handler(endpoint))
    add_fallback(app)
    app[openapi_body_key] = orjson.dumps(build_document(endpoints, list(settings.providers)))
    return app
