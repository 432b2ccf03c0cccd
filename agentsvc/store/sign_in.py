"""Single-use sign-in secrets: magic links and OAuth states (stored hashed)."""

from __future__ import annotations

from agentsvc.db import Tx


async def insert_magic_link(
    tx: Tx,
    *,
    token_hash: str,
    user_id: str,
    callback_url: str,
    now: str,
    expires_at: str,
) -> None:
    await tx.execute(
        "INSERT INTO magic_links (token_hash, user_id, callback_url, created_at, expires_at)"
        " VALUES (?, ?, ?, ?, ?)",
        (token_hash, user_id, callback_url, now, expires_at),
    )


async def consume_magic_link(tx: Tx, token_hash: str, now: str) -> tuple[str, str] | None:
    """Mark a live, unused link used in one statement; return (user_id, callback_url)."""
    rows = await tx.fetchall(
        "UPDATE magic_links SET used_at = ?"
        " WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?"
        " RETURNING user_id, callback_url",
        (now, token_hash, now),
    )
    return (rows[0][0], rows[0][1]) if rows else None


async def insert_oauth_state(
    tx: Tx,
    *,
    state_hash: str,
    provider: str,
    code_verifier: str,
    callback_url: str,
    now: str,
    expires_at: str,
) -> None:
    await tx.execute(
        "INSERT INTO oauth_states"
        " (state_hash, provider, code_verifier, callback_url, created_at, expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (state_hash, provider, code_verifier, callback_url, now, expires_at),
    )


async def consume_oauth_state(
    tx: Tx, state_hash: str, provider: str, now: str
) -> tuple[str, str] | None:
    """Delete a live state of this provider in one statement; return (verifier, callback)."""
    rows = await tx.fetchall(
        "DELETE FROM oauth_states WHERE state_hash = ? AND provider = ? AND expires_at > ?"
        " RETURNING code_verifier, callback_url",
        (state_hash, provider, now),
    )
    return (rows[0][0], rows[0][1]) if rows else None


async def delete_expired(tx: Tx, now: str) -> None:
    """Drop magic links and OAuth states that can no longer be used."""
    await tx.execute("DELETE FROM magic_links WHERE expires_at <= ?", (now,))
    await tx.execute("DELETE FROM oauth_states WHERE expires_at <= ?", (now,))
