"""The one rate-limit check of the HTTP layer: a token from a bucket, or 429 RATE_LIMITED."""

from __future__ import annotations

from aiohttp import web

from agentsvc import keys
from agentsvc.api.errors import RateLimited
from agentsvc.api.state import request_state


async def take_token(
    request: web.Request, bucket: str, per_minute: int, message: str, *, report: bool = False
) -> None:
    """Take a token from `bucket` (`per_minute` capacity) or raise RateLimited with Retry-After.

    With `report`, the response carries the bucket's X-RateLimit-* headers (see
    `pipeline.finish_response`); without, no Decision is built (the hot public paths).
    Limits on several buckets call this once per bucket: a refusal stops at the first.
    """
    limiter = request.app[keys.limiter_key]
    if report:
        decision = await limiter.take(bucket, per_minute)
        request_state(request).rate_decision = decision
        wait = decision.retry_after
    else:
        wait = await limiter.retry_after(bucket, per_minute)
    if wait:
        raise RateLimited(message, headers={"Retry-After": str(wait)})
