"""Team and sessions at run time: the mailer, the OAuth HTTP client and their periodic jobs."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from agentsvc import keys
from agentsvc.mail import Mailer
from agentsvc.passwords import warm_up
from agentsvc.services.team import membership as team_service
from agentsvc.services.team import oauth
from agentsvc.services.team import sessions as session_service

log = logging.getLogger(__name__)

EXPIRE_JOB_ID = "expire-invitations"
PRUNE_JOB_ID = "prune-sessions"
PRUNE_INTERVAL_SECONDS = 3600


async def expire_invitations_job(app: web.Application) -> None:
    """Mark pending invitations past [auth] invitation_ttl_seconds expired."""
    await team_service.expire_invitations(app[keys.db_key])


async def prune_sessions_job(app: web.Application) -> None:
    """Delete expired sessions, magic links and OAuth states."""
    await session_service.prune(app[keys.db_key])


async def auth_ctx(app: web.Application) -> AsyncIterator[None]:
    """cleanup_ctx (after the database and the scheduler): mailer, OAuth client, jobs."""
    settings = app[keys.settings_key]
    mailer = Mailer(settings.smtp, app[keys.db_key], app[keys.secret_box_key])
    app[keys.mailer_key] = mailer
    # Redirects are not followed: a token endpoint that redirects is misconfigured.
    http = aiohttp.ClientSession(timeout=oauth.HTTP_TIMEOUT)
    app[keys.oauth_http_key] = http
    warm_up()
    scheduler = app[keys.scheduler_key]
    scheduler.add_job(
        expire_invitations_job,
        "interval",
        seconds=settings.auth.invitation_sweep_seconds,
        args=[app],
        id=EXPIRE_JOB_ID,
        max_instances=1,
        coalesce=True,
    )
    scheduler.add_job(
        prune_sessions_job,
        "interval",
        seconds=PRUNE_INTERVAL_SECONDS,
        args=[app],
        id=PRUNE_JOB_ID,
        max_instances=1,
        coalesce=True,
    )
    yield
    for job_id in (EXPIRE_JOB_ID, PRUNE_JOB_ID):
        if scheduler.get_job(job_id) is not None:
            scheduler.remove_job(job_id)
    await mailer.close()
    await http.close()
