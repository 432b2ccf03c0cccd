"""Every typed key under which state lives on the application or the request."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    from agentsvc.config import Settings
    from agentsvc.db import Database
    from agentsvc.ratelimit import Decision, TokenBuckets
    from agentsvc.services.access import KeyResolver, Principal

settings_key: web.AppKey[Settings] = web.AppKey("settings")
db_key: web.AppKey[Database] = web.AppKey("db")
key_resolver_key: web.AppKey[KeyResolver] = web.AppKey("key_resolver")
rate_buckets_key: web.AppKey[TokenBuckets] = web.AppKey("rate_buckets")
scheduler_key: web.AppKey[AsyncIOScheduler] = web.AppKey("scheduler")

# Request-scoped values.
principal_request_key: web.RequestKey[Principal] = web.RequestKey("principal")
rate_decision_request_key: web.RequestKey[Decision] = web.RequestKey("rate_decision")
