"""The audit log: who did what in a team, and when."""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.rows import dump_json, load_json


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: str
    team_id: str
    action: str
    actor_user_id: str | None
    actor_key_id: str | None
    actor_session_id: str | None
    actor_ip: str | None
    target_type: str | None
    target_id: str | None
    target_label: str | None
    details: dict[str, Any] | None
    created_at: str


@dataclass(frozen=True, slots=True)
class LoggedEntry:
    """An entry as the log shows it: with its actor's e-mail, name and key name now."""

    entry: AuditEntry
    actor_email: str | None
    actor_name: str | None
    key_name: str | None
    seq: int = 0  # its place in the order of recording (rowid; an identity on PostgreSQL)

    # The cursor of a page is the (created_at, seq) of its last entry: entries of the same
    # millisecond keep the order they were recorded in, which random ids would not.
    @property
    def created_at(self) -> str:
        return self.entry.created_at

    @property
    def id(self) -> str:
        return self.entry.id


_FIELDS = tuple(AuditEntry.__dataclass_fields__)
_COLUMNS = ", ".join(_FIELDS)


async def insert(tx: Tx, entry: AuditEntry) -> None:
    values = [
        dump_json(v) if n == "details" else v for n, v in zip(_FIELDS, astuple(entry), strict=True)
    ]
    marks = ", ".join("?" for _ in _FIELDS)
    await tx.execute(f"INSERT INTO audit_log ({_COLUMNS}) VALUES ({marks})", values)


async def list_page(
    tx: Tx,
    team_id: str,
    *,
    action: str | None,
    limit: int,
    after: tuple[str, int] | None,
) -> tuple[list[LoggedEntry], bool]:
    """A page of the team's entries, newest first (the same millisecond's in the reverse
    order of recording), and whether more follow."""
    where = ["a.team_id = ?"]
    args: list[Any] = [team_id]
    if action is not None:
        where.append("a.action = ?")
        args.append(action)
    if after is not None:
        where.append("(a.created_at, a.rowid) < (?, ?)")
        args += after
    columns = ", ".join("a." + f for f in _FIELDS)
    rows = await tx.fetchall(
        f"SELECT {columns}, u.email, u.name, k.name, a.rowid FROM audit_log a"
        " LEFT JOIN users u ON u.id = a.actor_user_id"
        " LEFT JOIN api_keys k ON k.id = a.actor_key_id"
        f" WHERE {' AND '.join(where)} ORDER BY a.created_at DESC, a.rowid DESC LIMIT ?",
        (*args, limit + 1),
    )
    found = []
    for row in rows[:limit]:
        values = dict(zip(_FIELDS, row, strict=False))
        values["details"] = load_json(values["details"])
        n = len(_FIELDS)
        found.append(
            LoggedEntry(AuditEntry(**values), row[n], row[n + 1], row[n + 2], int(row[n + 3]))
        )
    return found, len(rows) > limit
