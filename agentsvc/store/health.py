"""The cheapest statement that proves the database answers."""

from __future__ import annotations

from agentsvc.db import Tx


async def ping(tx: Tx) -> None:
    await tx.fetchval("SELECT 1")
