"""The identity secret of an agent (the `agents.identity_secret` column, sealed)."""

from __future__ import annotations

from agentsvc.db import Tx


async def get_sealed(tx: Tx, agent_id: str) -> str | None:
    """Return the sealed identity secret of an agent, or None when it has none."""
    rows = await tx.fetchall("SELECT identity_secret FROM agents WHERE id = ?", (agent_id,))
    return rows[0][0] if rows else None


async def set_sealed(tx: Tx, team_id: str, agent_id: str, sealed: str | None, now: str) -> bool:
    """Set (or clear with None) the sealed secret; return False when the agent is absent."""
    changed = await tx.execute(
        "UPDATE agents SET identity_secret = ?, updated_at = ? WHERE id = ? AND team_id = ?",
        (sealed, now, agent_id, team_id),
    )
    return changed > 0
