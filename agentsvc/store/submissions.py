"""Form submissions, their delivery outbox rows and form analytics events.

Functions of a `Tx`: reads on `db.reader`, writes inside a unit of work (the submit and
the outcome of an attempt are batched writes, so they cost no thread hop). The outbox's
claims, leases and attempt log are written once for every kind, in store/deliveries.py;
`OUTBOX` is the form deliveries' table there.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.deliveries import ATTEMPT_FIELDS, Attempt, OutboxTable, attempt_from_row
from agentsvc.store.rows import dump_json, load_json


@dataclass(frozen=True, slots=True)
class Submission:
    id: str
    team_id: str
    agent_id: str
    tool_id: str
    tool_name: str
    conversation_id: str | None
    form_data: dict
    files: dict | None  # field name -> path relative to the data directory
    fields_completed: list
    execution_mode: str
    client_handler: str | None
    status: str
    webhook_attempts: int
    last_error: str | None
    client_result: dict | None
    impression_at: str | None
    started_at: str | None
    created_at: str
    updated_at: str
    session_id: str | None = None  # the widget session that submitted it, if any
    files_bytes: int = 0  # decoded size of its stored files (the agent's file quota)
    trigger_id: str | None = None  # the trigger that showed the form, or started its chat


@dataclass(frozen=True, slots=True)
class Delivery:
    id: str
    submission_id: str
    position: int
    kind: str  # webhook | post_webhook | team_chat | email
    webhook_id: str
    spec: dict
    sealed_secret: str | None
    status: str  # pending | success | failed
    attempts: int
    cycle_start: int
    next_attempt_at: str | None
    lease_until: str | None
    last_error: str | None
    created_at: str
    updated_at: str
    completed_at: str | None


_SUB_FIELDS = tuple(Submission.__dataclass_fields__)
_SUB_COLUMNS = ", ".join(_SUB_FIELDS)
_SUB_JSON = {"form_data", "files", "fields_completed", "client_result"}
_DLV_FIELDS = tuple(Delivery.__dataclass_fields__)
_DLV_COLUMNS = ", ".join(_DLV_FIELDS)


def _submission(row: Any) -> Submission:
    values = {
        name: load_json(value) if name in _SUB_JSON else value
        for name, value in zip(_SUB_FIELDS, row, strict=True)
    }
    return Submission(**values)


def _delivery(row: Any) -> Delivery:
    values = dict(zip(_DLV_FIELDS, row, strict=True))
    values["spec"] = load_json(values["spec"])
    return Delivery(**values)


async def insert_submission(tx: Tx, sub: Submission) -> None:
    values = tuple(
        dump_json(v) if n in _SUB_JSON else v
        for n, v in zip(_SUB_FIELDS, astuple(sub), strict=True)
    )
    marks = ", ".join("?" for _ in _SUB_FIELDS)
    await tx.execute(f"INSERT INTO form_submissions ({_SUB_COLUMNS}) VALUES ({marks})", values)


async def insert_deliveries(tx: Tx, deliveries: list[Delivery]) -> None:
    rows = [
        tuple(
            dump_json(v) if n == "spec" else v for n, v in zip(_DLV_FIELDS, astuple(d), strict=True)
        )
        for d in deliveries
    ]
    marks = ", ".join("?" for _ in _DLV_FIELDS)
    await tx.executemany(f"INSERT INTO form_deliveries ({_DLV_COLUMNS}) VALUES ({marks})", rows)


def _submission_query(submission_id: str, team_id: str | None) -> tuple[str, tuple]:
    sql = f"SELECT {_SUB_COLUMNS} FROM form_submissions WHERE id = ?"
    if team_id is None:
        return sql, (submission_id,)
    return sql + " AND team_id = ?", (submission_id, team_id)


async def get_submission(
    tx: Tx, submission_id: str, team_id: str | None = None
) -> Submission | None:
    """A submission by id; with team_id, only that team's."""
    rows = await tx.fetchall(*_submission_query(submission_id, team_id))
    return _submission(rows[0]) if rows else None


async def get_submissions(tx: Tx, ids: list[str]) -> list[Submission]:
    """Submissions by id (those that exist), in one query."""
    if not ids:
        return []
    marks = ", ".join("?" for _ in ids)
    rows = await tx.fetchall(
        f"SELECT {_SUB_COLUMNS} FROM form_submissions WHERE id IN ({marks})", ids
    )
    return [_submission(r) for r in rows]


async def read_submission(
    tx: Tx, submission_id: str, team_id: str | None = None
) -> Submission | None:
    """`get_submission` inside a write transaction."""
    row = await tx.fetchone(*_submission_query(submission_id, team_id))
    return _submission(row) if row else None


async def read_deliveries(tx: Tx, submission_id: str) -> list[Delivery]:
    """`deliveries_for` inside a write transaction."""
    rows = await tx.fetchall(
        f"SELECT {_DLV_COLUMNS} FROM form_deliveries WHERE submission_id = ? ORDER BY position",
        (submission_id,),
    )
    return [_delivery(r) for r in rows]


def _filters(team_id: str, status: str | None, agent_id: str | None, tool_id: str | None):
    where = ["team_id = ?"]
    args: list[Any] = [team_id]
    for column, value in (("status", status), ("agent_id", agent_id), ("tool_id", tool_id)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    return " AND ".join(where), args


async def list_submissions(
    tx: Tx,
    team_id: str,
    *,
    status: str | None,
    agent_id: str | None,
    tool_id: str | None,
    limit: int,
    offset: int,
    after: tuple[str, str] | None = None,
) -> tuple[list[Submission], bool]:
    """A page of the team's submissions, newest first (`created_at`, then `id`), and
    whether more follow. With `after` (the (created_at, id) of the last one seen), the
    page starts after it (keyset) and `offset` is not used."""
    where, args = _filters(team_id, status, agent_id, tool_id)
    if after is not None:
        where += " AND (created_at, id) < (?, ?)"
        args += after
        offset = 0
    rows = await tx.fetchall(
        f"SELECT {_SUB_COLUMNS} FROM form_submissions WHERE {where}"
        " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
        (*args, limit + 1, offset),
    )
    return [_submission(r) for r in rows[:limit]], len(rows) > limit


async def count_submissions(
    tx: Tx, team_id: str, *, status: str | None, agent_id: str | None, tool_id: str | None
) -> int:
    """How many of the team's submissions match (from the counters, not the rows)."""
    where, args = _filters(team_id, status, agent_id, tool_id)
    total = await tx.fetchval(f"SELECT SUM(submissions) FROM submission_totals WHERE {where}", args)
    return int(total or 0)


async def update_submission(tx: Tx, submission_id: str, fields: dict[str, Any], now: str) -> None:
    """Set some columns of a submission (JSON columns serialised)."""
    assignments = "".join(f"{col} = ?, " for col in fields)
    values = [dump_json(v) if k in _SUB_JSON else v for k, v in fields.items()]
    await tx.execute(
        f"UPDATE form_submissions SET {assignments}updated_at = ? WHERE id = ?",
        (*values, now, submission_id),
    )


async def deliveries_for(tx: Tx, submission_id: str) -> list[Delivery]:
    rows = await tx.fetchall(
        f"SELECT {_DLV_COLUMNS} FROM form_deliveries WHERE submission_id = ? ORDER BY position",
        (submission_id,),
    )
    return [_delivery(r) for r in rows]


async def attempts_for(tx: Tx, submission_id: str) -> list[Attempt]:
    """Every attempt of a submission's deliveries, in order."""
    rows = await tx.fetchall(
        f"SELECT {', '.join('a.' + c for c in ATTEMPT_FIELDS)} FROM form_delivery_attempts a"
        " JOIN form_deliveries d ON d.id = a.delivery_id WHERE d.submission_id = ?"
        " ORDER BY d.position, a.attempt",
        (submission_id,),
    )
    return [attempt_from_row(r) for r in rows]


OUTBOX: OutboxTable[Delivery] = OutboxTable(
    table="form_deliveries",
    attempts_table="form_delivery_attempts",
    columns=_DLV_COLUMNS,
    load=_delivery,
    order=lambda d: (d.next_attempt_at, d.position),
)
# The form outbox's claims, leases and attempt log, by the names its callers use.
claim_due = OUTBOX.claim_due
count_pending = OUTBOX.count_pending
next_due_at = OUTBOX.next_due_at
release_all_leases = OUTBOX.release_all_leases
delivery_exists = OUTBOX.delivery_exists
record_attempt = OUTBOX.record_attempt
update_delivery = OUTBOX.update_delivery


async def insert_event(
    tx: Tx,
    *,
    tool_id: str,
    agent_id: str,
    event_type: str,
    session_id: str | None,
    now: str,
) -> None:
    await tx.execute(
        "INSERT INTO form_events (tool_id, agent_id, event_type, session_id, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        (tool_id, agent_id, event_type, session_id, now),
    )


async def event_counts(tx: Tx, agent_id: str) -> dict[tuple[str, str], int]:
    """(tool id, event type) -> number of events, for an agent's forms (counters)."""
    rows = await tx.fetchall(
        "SELECT tool_id, event_type, events FROM form_event_totals"
        " WHERE agent_id = ? AND events > 0",
        (agent_id,),
    )
    return {(r[0], r[1]): int(r[2]) for r in rows}


async def outcome_counts(tx: Tx, agent_id: str) -> dict[str, dict[str, int]]:
    """tool id -> {submitted, successful, failed, unseen, unstarted} over an agent's
    submissions; `unseen` and `unstarted` count those sent without `impressionAt` and
    without `startedAt` (the widget sends both, with its impression and start events)."""
    rows = await tx.fetchall(
        "SELECT tool_id, SUM(submissions),"
        " SUM(CASE WHEN status = 'success'"
        "     OR (execution_mode = 'webhook' AND status = 'webhook_success')"
        "     OR (execution_mode = 'client' AND status = 'client_success')"
        "     THEN submissions ELSE 0 END),"
        " SUM(CASE WHEN status IN ('failed', 'webhook_failed', 'client_failed')"
        "     THEN submissions ELSE 0 END),"
        " SUM(unseen), SUM(unstarted)"
        " FROM submission_totals WHERE agent_id = ? GROUP BY tool_id HAVING SUM(submissions) > 0",
        (agent_id,),
    )
    return {
        r[0]: {
            "submitted": int(r[1]),
            "successful": int(r[2] or 0),
            "failed": int(r[3] or 0),
            "unseen": int(r[4] or 0),
            "unstarted": int(r[5] or 0),
        }
        for r in rows
    }


async def field_counts(tx: Tx, agent_id: str) -> dict[tuple[str, str], int]:
    """(tool id, field name) -> number of submissions that completed that field (counters)."""
    rows = await tx.fetchall(
        "SELECT tool_id, field, completed FROM form_field_totals"
        " WHERE agent_id = ? AND completed > 0",
        (agent_id,),
    )
    return {(r[0], r[1]): int(r[2]) for r in rows}


async def member_emails(tx: Tx, team_id: str, user_ids: list[str]) -> list[str]:
    """E-mail addresses of those users who are members of the team, in the order given."""
    if not user_ids:
        return []
    marks = ", ".join("?" for _ in user_ids)
    rows = await tx.fetchall(
        f"SELECT u.id, u.email FROM users u JOIN memberships m ON m.user_id = u.id"
        f" WHERE m.team_id = ? AND u.id IN ({marks})",
        (team_id, *user_ids),
    )
    found = {r[0]: r[1] for r in rows}
    return [found[i] for i in dict.fromkeys(user_ids) if i in found]


_FILE_BYTES_SQL = (
    "SELECT COALESCE(SUM(files_bytes), 0) FROM form_submissions"
    " WHERE agent_id = ? AND files_bytes > 0"
)


async def file_bytes_of_agent(tx: Tx, agent_id: str) -> int:
    """Total size of the agent's stored form files."""
    rows = await tx.fetchall(_FILE_BYTES_SQL, (agent_id,))
    return int(rows[0][0])


async def read_file_bytes_of_agent(tx: Tx, agent_id: str) -> int:
    """`file_bytes_of_agent` inside a write transaction."""
    return int(await tx.fetchval(_FILE_BYTES_SQL, (agent_id,)))


async def conversation_of_agent(tx: Tx, agent_id: str, conversation_id: str) -> bool:
    """Whether the conversation exists and belongs to the agent."""
    row = await tx.fetchone(
        "SELECT 1 FROM conversations WHERE id = ? AND agent_id = ?", (conversation_id, agent_id)
    )
    return row is not None


async def add_conversation_note(
    tx: Tx, *, message_id: str, conversation_id: str, text: str, now: str
) -> None:
    """Append a user-side message to a conversation (what the end user did, for the model)."""
    await tx.execute(
        "INSERT INTO messages (id, conversation_id, role, content, status, created_at)"
        " VALUES (?, ?, 'user', ?, 'complete', ?)",
        (message_id, conversation_id, text, now),
    )
    await tx.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id))


async def existing_ids(tx: Tx, ids: list[str]) -> set[str]:
    """Which of these submission ids exist."""
    if not ids:
        return set()
    marks = ", ".join("?" for _ in ids)
    rows = await tx.fetchall(f"SELECT id FROM form_submissions WHERE id IN ({marks})", ids)
    return {r[0] for r in rows}
