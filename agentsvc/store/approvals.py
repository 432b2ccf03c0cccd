"""Tool calls waiting for a person's approval (`tool_approvals`), and the paused turns they
hold (`paused_turns`: what the turn needs to go on, and the lease of whoever holds it)."""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.rows import dump_json, load_json

STATUSES = ("pending", "approved", "denied", "expired")


@dataclass(frozen=True, slots=True)
class Approval:
    id: str
    pause_id: str
    conversation_id: str
    team_id: str
    agent_id: str
    tool_id: str | None
    tool_name: str
    tool_use_id: str
    input: dict[str, Any]
    edited_input: dict[str, Any] | None
    status: str  # pending, approved, denied, expired
    reason: str | None
    decided_by: str | None
    decided_by_name: str | None
    decided_at: str | None
    expires_at: str
    ran_at: str | None
    output: Any
    is_error: bool | None
    created_at: str
    # Read with it for people: the agent's name and the conversation's title.
    agent_name: str = ""
    conversation_title: str = ""


@dataclass(frozen=True, slots=True)
class PausedTurn:
    id: str
    conversation_id: str
    team_id: str
    message_id: str
    state: dict[str, Any]
    status: str  # waiting, done
    holder: str | None
    lease_until: str | None
    created_at: str


_APPROVAL = (
    "a.id, a.pause_id, a.conversation_id, a.team_id, a.agent_id, a.tool_id, a.tool_name,"
    " a.tool_use_id, a.input, a.edited_input, a.status, a.reason, a.decided_by,"
    " a.decided_by_name, a.decided_at, a.expires_at, a.ran_at, a.output, a.is_error, a.created_at"
)
_SELECT = (
    f"SELECT {_APPROVAL}, COALESCE(g.name, ''), COALESCE(c.title, '') FROM tool_approvals a"
    " LEFT JOIN agents g ON g.id = a.agent_id LEFT JOIN conversations c ON c.id = a.conversation_id"
)
_PAUSE = "id, conversation_id, team_id, message_id, state, status, holder, lease_until, created_at"
_JSON = frozenset({8, 9, 17})  # input, edited_input, output


def _to_db(index: int, value: Any) -> Any:
    if index in _JSON:
        return dump_json(value)
    return int(value) if isinstance(value, bool) else value


def _approval(row: Any) -> Approval:
    values = [load_json(v) if i in _JSON else v for i, v in enumerate(tuple(row))]
    if values[18] is not None:
        values[18] = bool(values[18])
    return Approval(*values)


def _pause(row: Any) -> PausedTurn:
    values = list(tuple(row))
    values[4] = load_json(values[4])
    return PausedTurn(*values)


async def insert_pause(tx: Tx, pause: PausedTurn, approvals: list[Approval]) -> None:
    """A paused turn and its held calls."""
    values = list(astuple(pause))
    values[4] = dump_json(values[4])
    await tx.execute(
        f"INSERT INTO paused_turns ({_PAUSE}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values
    )
    columns = _APPROVAL.replace("a.", "")
    await tx.executemany(
        f"INSERT INTO tool_approvals ({columns}) VALUES ({', '.join('?' * 20)})",
        [[_to_db(i, v) for i, v in enumerate(astuple(a)[:20])] for a in approvals],
    )


async def get(tx: Tx, team_id: str, approval_id: str) -> Approval | None:
    """The team's approval, or None (absent, or another team's)."""
    row = await tx.fetchone(f"{_SELECT} WHERE a.id = ? AND a.team_id = ?", (approval_id, team_id))
    return _approval(row) if row else None


async def list_for_team(
    tx: Tx,
    team_id: str,
    filters: dict[str, str | None],
    after: tuple[str, str] | None,
    limit: int,
) -> list[Approval]:
    """The team's approvals matching `filters` (status, agent_id, conversation_id; None:
    any): pending ones oldest first (the longest wait first), the others newest first;
    `after` is the (created_at, id) of the last one of the page before."""
    clauses, params = ["a.team_id = ?"], [team_id]
    for column in ("status", "agent_id", "conversation_id"):
        if filters.get(column) is not None:
            clauses.append(f"a.{column} = ?")
            params.append(filters[column])
    order, compare = ("ASC", ">") if filters.get("status") == "pending" else ("DESC", "<")
    if after is not None:
        clauses.append(f"(a.created_at {compare} ? OR (a.created_at = ? AND a.id {compare} ?))")
        params += [after[0], after[0], after[1]]
    rows = await tx.fetchall(
        f"{_SELECT} WHERE {' AND '.join(clauses)}"
        f" ORDER BY a.created_at {order}, a.id {order} LIMIT ?",
        (*params, limit),
    )
    return [_approval(r) for r in rows]


async def of_pause(tx: Tx, pause_id: str) -> list[Approval]:
    """The held calls of a paused turn."""
    rows = await tx.fetchall(f"{_SELECT} WHERE a.pause_id = ? ORDER BY a.id", (pause_id,))
    return [_approval(r) for r in rows]


async def decide(tx: Tx, approval_id: str, fields: dict[str, Any]) -> bool:
    """Record a decision (status, reason, edited_input, decided_by...) on a pending call;
    False when it was decided already."""
    values = [dump_json(v) if k == "edited_input" else v for k, v in fields.items()]
    assignments = ", ".join(f"{k} = ?" for k in fields)
    changed = await tx.execute(
        f"UPDATE tool_approvals SET {assignments} WHERE id = ? AND status = 'pending'",
        (*values, approval_id),
    )
    return changed > 0


async def due(tx: Tx, now: str, limit: int) -> list[Approval]:
    """Pending calls whose time to be approved ran out."""
    rows = await tx.fetchall(
        f"{_SELECT} WHERE a.status = 'pending' AND a.expires_at <= ? ORDER BY a.expires_at LIMIT ?",
        (now, limit),
    )
    return [_approval(r) for r in rows]


async def start_run(tx: Tx, approval_id: str, now: str) -> bool:
    """Mark an approved call's tool as running; False when it ran (or began to) before."""
    changed = await tx.execute(
        "UPDATE tool_approvals SET ran_at = ? WHERE id = ? AND status = 'approved'"
        " AND ran_at IS NULL",
        (now, approval_id),
    )
    return changed > 0


async def set_output(tx: Tx, approval_id: str, output: Any, is_error: bool) -> None:
    """What the approved call's tool gave."""
    await tx.execute(
        "UPDATE tool_approvals SET output = ?, is_error = ? WHERE id = ?",
        (dump_json(output), 1 if is_error else 0, approval_id),
    )


async def get_pause(tx: Tx, pause_id: str) -> PausedTurn | None:
    row = await tx.fetchone(f"SELECT {_PAUSE} FROM paused_turns WHERE id = ?", (pause_id,))
    return _pause(row) if row else None


async def set_state(tx: Tx, pause_id: str, state: dict[str, Any]) -> None:
    await tx.execute("UPDATE paused_turns SET state = ? WHERE id = ?", (dump_json(state), pause_id))


async def renew(tx: Tx, pause_id: str, holder: str, lease_until: str) -> bool:
    """Extend the holder's lease; False when the pause is no longer theirs (or done)."""
    changed = await tx.execute(
        "UPDATE paused_turns SET lease_until = ? WHERE id = ? AND holder = ?"
        " AND status = 'waiting'",
        (lease_until, pause_id, holder),
    )
    return changed > 0


_DECIDED = (
    "NOT EXISTS (SELECT 1 FROM tool_approvals a WHERE a.pause_id = paused_turns.id"
    " AND a.status = 'pending')"
)


async def claim(tx: Tx, pause_id: str, holder: str, now: str, lease_until: str) -> bool:
    """Take a waiting pause whose calls are all decided, when nobody holds it (or its
    holder's lease ran out)."""
    changed = await tx.execute(
        "UPDATE paused_turns SET holder = ?, lease_until = ? WHERE id = ? AND status = 'waiting'"
        f" AND (lease_until IS NULL OR lease_until < ?) AND {_DECIDED}",
        (holder, lease_until, pause_id, now),
    )
    return changed > 0


async def supersede(tx: Tx, message_id: str, pause_id: str) -> None:
    """The turn pauses again: its earlier pause is over."""
    await tx.execute(
        "UPDATE paused_turns SET status = 'done', lease_until = NULL WHERE message_id = ?"
        " AND status = 'waiting' AND id <> ?",
        (message_id, pause_id),
    )


async def release(tx: Tx, pause_id: str, holder: str) -> None:
    """The holder lets go: done when the turn's answer is stored, else waiting for another."""
    await tx.execute(
        "UPDATE paused_turns SET lease_until = NULL, status = CASE WHEN EXISTS"
        " (SELECT 1 FROM messages m WHERE m.id = paused_turns.message_id) THEN 'done'"
        " ELSE status END WHERE id = ? AND holder = ?",
        (pause_id, holder),
    )


async def finish(tx: Tx, pause_id: str) -> None:
    """The pause is over (its turn ended, or paused again in a new one)."""
    await tx.execute(
        "UPDATE paused_turns SET status = 'done', lease_until = NULL WHERE id = ?", (pause_id,)
    )


async def answered(tx: Tx, message_id: str) -> bool:
    """Whether the turn's answer is stored (its turn ended)."""
    return bool(await tx.fetchval("SELECT 1 FROM messages WHERE id = ?", (message_id,)))


async def ready(tx: Tx, now: str, limit: int) -> list[str]:
    """Waiting pauses nobody holds whose calls are all decided: their turns go on."""
    rows = await tx.fetchall(
        "SELECT id FROM paused_turns WHERE status = 'waiting'"
        f" AND (lease_until IS NULL OR lease_until < ?) AND {_DECIDED}"
        " ORDER BY created_at LIMIT ?",
        (now, limit),
    )
    return [r[0] for r in rows]
