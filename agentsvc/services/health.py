"""Readiness: whether this process can reach what it serves from (a load balancer's check)."""

from __future__ import annotations

import asyncio
import logging

from agentsvc.db import Database
from agentsvc.store import health as store

log = logging.getLogger(__name__)

READY_TIMEOUT_SECONDS = 2.0


async def database_reachable(db: Database) -> bool:
    """True when one query comes back within READY_TIMEOUT_SECONDS."""
    try:
        await asyncio.wait_for(store.ping(db.reader), READY_TIMEOUT_SECONDS)
    except Exception as exc:  # any failure means "not ready"; the reason goes to the log
        log.warning("readiness: the database does not answer: %s", exc)
        return False
    return True


class HealthService:
    """Readiness checks on the collaborators this process serves from."""

    def __init__(self, db: Database):
        self._db = db

    @property
    def serving(self) -> bool:
        """False while the database does not answer this process's pings (PostgreSQL's
        upkeep, db/postgres.py): the API then answers 503 at once rather than hang, so a
        load balancer passes the request to another process."""
        return self._db.reachable

    async def ready(self) -> bool:
        """True when the database answers: PostgreSQL's last ping (at most PROBE_SECONDS
        old, never waiting on a saturated pool); SQLite's reader within
        READY_TIMEOUT_SECONDS."""
        if self._db.shared:
            return self._db.reachable
        return await database_reachable(self._db)
