"""The rate-limit checks of the HTTP layer: a token from a bucket, or slots among a team's
open streams; 429 RATE_LIMITED with Retry-After otherwise."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from aiohttp import web

from agentsvc.api.errors import RateLimited
from agentsvc.api.state import request_deps, request_state
from agentsvc.services.team.access import Principal

# A stream slot frees up when a reply ends or a dashboard tab closes: try again soon.
STREAM_SLOT_RETRY_AFTER_SECONDS = 2
# A stream ends this long after its maximum lifetime at the latest (its last write's timeout,
# the shutdown grace): how long a shared slot count must outlive the stream's own limit.
STREAM_END_MARGIN_SECONDS = 60


async def take_token(
    request: web.Request, bucket: str, per_minute: int, message: str, *, report: bool = False
) -> None:
    """Take a token from `bucket` (`per_minute` capacity) or raise RateLimited with Retry-After.

    With `report`, the response carries the bucket's X-RateLimit-* headers (see
    `pipeline.finish_response`); without, no Decision is built (the hot public paths).
    Limits on several buckets call this once per bucket: a refusal stops at the first.
    """
    limiter = request_deps(request).limiter
    if report:
        decision = await limiter.take(bucket, per_minute)
        request_state(request).rate_decision = decision
        wait = decision.retry_after
    else:
        wait = await limiter.retry_after(bucket, per_minute)
    if wait:
        raise RateLimited(message, headers={"Retry-After": str(wait)})


@contextlib.asynccontextmanager
async def team_stream_slots(request: web.Request, principal: Principal) -> AsyncIterator[None]:
    """Hold a slot among the team's and among the key's open streams for the stream's life.

    Raises RateLimited (Retry-After) when either is full: `[ratelimit] max_streams_per_team`
    and `max_streams_per_key`. A member's cookie sessions count together as one key, so
    signing in again does not open more room. The slots are counted by the limiter: in this
    process, or shared by every process through Redis.
    """
    deps = request_deps(request)
    limiter, settings = deps.limiter, deps.settings
    longest = max(settings.chat.max_stream_seconds, settings.handoff.max_stream_seconds)
    lifetime = longest + STREAM_END_MARGIN_SECONDS
    retry = {"Retry-After": str(STREAM_SLOT_RETRY_AFTER_SECONDS)}
    team_slot = f"streams-team:{principal.team_id}"
    if principal.key_id is not None:
        key_slot, whose = f"streams-key:{principal.key_id}", "API key"
    else:
        key_slot = f"streams-member:{principal.team_id}:{principal.user_id}"
        whose = "signed-in member"
    team_cap, key_cap = (
        settings.ratelimit.max_streams_per_team,
        settings.ratelimit.max_streams_per_key,
    )
    if not await limiter.hold(key_slot, key_cap, lifetime):
        raise RateLimited(
            f"At most {key_cap} open streams per {whose}; close one or try again shortly",
            headers=retry,
        )
    try:
        if not await limiter.hold(team_slot, team_cap, lifetime):
            raise RateLimited(
                f"At most {team_cap} open streams per team; close one or try again shortly",
                headers=retry,
            )
        try:
            yield
        finally:
            # Shielded: a stream cancelled at shutdown still gives its slot back.
            await asyncio.shield(limiter.release(team_slot))
    finally:
        await asyncio.shield(limiter.release(key_slot))
