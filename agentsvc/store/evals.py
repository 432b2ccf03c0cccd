"""Evaluation sets, their cases, their runs (with leases) and the runs' results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.rows import dump_json, load_json


@dataclass(frozen=True, slots=True)
class EvalSet:
    id: str
    agent_id: str
    team_id: str
    name: str
    created_at: str
    updated_at: str
    case_count: int = 0


@dataclass(frozen=True, slots=True)
class EvalCase:
    id: str
    evalset_id: str
    question: str
    question_key: str
    expected: str | None
    must_include: list[str]
    must_not_include: list[str]
    tags: list[str]
    created_at: str


@dataclass(frozen=True, slots=True)
class EvalRun:
    id: str
    evalset_id: str
    agent_id: str
    team_id: str
    version: str  # "draft" or the number
    snapshot: dict[str, Any]
    judge: str | None
    case_ids: list[str]
    status: str  # queued, running, done, failed
    total: int
    done: int
    passed: int
    lease_until: str | None
    error: str | None
    created_by: str | None
    created_at: str
    finished_at: str | None


@dataclass(frozen=True, slots=True)
class EvalResult:
    run_id: str
    case_id: str
    position: int
    question: str
    answer: str
    passed: bool
    reason: str
    latency_ms: int


_SET = "id, agent_id, team_id, name, created_at, updated_at"
_CASE = (
    "id, evalset_id, question, question_key, expected, must_include, must_not_include, tags,"
    " created_at"
)
_RUN = (
    "id, evalset_id, agent_id, team_id, version, snapshot, judge, case_ids, status, total,"
    " done, passed, lease_until, error, created_by, created_at, finished_at"
)
_RESULT = "run_id, case_id, position, question, answer, passed, reason, latency_ms"


def _case(row: Any) -> EvalCase:
    return EvalCase(*row[:5], load_json(row[5]), load_json(row[6]), load_json(row[7]), row[8])


def _run(row: Any) -> EvalRun:
    return EvalRun(*row[:5], load_json(row[5]), row[6], load_json(row[7]), *row[8:])


def _placeholders(n: int) -> str:
    return ", ".join("?" for _ in range(n))


async def insert_set(tx: Tx, found: EvalSet) -> None:
    await tx.execute(
        f"INSERT INTO evalsets ({_SET}) VALUES ({_placeholders(6)})",
        (found.id, found.agent_id, found.team_id, found.name, found.created_at, found.updated_at),
    )


async def get_set(tx: Tx, team_id: str, evalset_id: str) -> EvalSet | None:
    rows = await tx.fetchall(
        f"SELECT {_SET}, (SELECT COUNT(*) FROM eval_cases c WHERE c.evalset_id = s.id)"
        " FROM evalsets s WHERE id = ? AND team_id = ?",
        (evalset_id, team_id),
    )
    return EvalSet(*rows[0]) if rows else None


async def sets_of_agent(tx: Tx, agent_id: str) -> list[EvalSet]:
    rows = await tx.fetchall(
        f"SELECT {_SET}, (SELECT COUNT(*) FROM eval_cases c WHERE c.evalset_id = s.id)"
        " FROM evalsets s WHERE agent_id = ? ORDER BY created_at DESC, id DESC LIMIT 100",
        (agent_id,),
    )
    return [EvalSet(*r) for r in rows]


async def delete_set(tx: Tx, team_id: str, evalset_id: str) -> bool:
    changed = await tx.execute(
        "DELETE FROM evalsets WHERE id = ? AND team_id = ?", (evalset_id, team_id)
    )
    return changed > 0


async def count_cases(tx: Tx, evalset_id: str) -> int:
    return int(
        await tx.fetchval("SELECT COUNT(*) FROM eval_cases WHERE evalset_id = ?", (evalset_id,))
    )


async def newest_case_at(tx: Tx, evalset_id: str) -> str | None:
    return await tx.fetchval(
        "SELECT MAX(created_at) FROM eval_cases WHERE evalset_id = ?", (evalset_id,)
    )


async def insert_cases(tx: Tx, cases: list[EvalCase]) -> None:
    await tx.executemany(
        f"INSERT INTO eval_cases ({_CASE}) VALUES ({_placeholders(9)})",
        [
            (
                c.id,
                c.evalset_id,
                c.question,
                c.question_key,
                c.expected,
                dump_json(c.must_include),
                dump_json(c.must_not_include),
                dump_json(c.tags),
                c.created_at,
            )
            for c in cases
        ],
    )


async def cases_of(tx: Tx, evalset_id: str) -> list[EvalCase]:
    rows = await tx.fetchall(
        f"SELECT {_CASE} FROM eval_cases WHERE evalset_id = ? ORDER BY created_at, id",
        (evalset_id,),
    )
    return [_case(r) for r in rows]


async def question_keys(tx: Tx, evalset_id: str) -> set[str]:
    rows = await tx.fetchall(
        "SELECT question_key FROM eval_cases WHERE evalset_id = ?", (evalset_id,)
    )
    return {r[0] for r in rows}


async def delete_case(tx: Tx, evalset_id: str, case_id: str) -> bool:
    changed = await tx.execute(
        "DELETE FROM eval_cases WHERE id = ? AND evalset_id = ?", (case_id, evalset_id)
    )
    return changed > 0


async def insert_run(tx: Tx, run: EvalRun) -> None:
    await tx.execute(
        f"INSERT INTO eval_runs ({_RUN}) VALUES ({_placeholders(17)})",
        (
            run.id,
            run.evalset_id,
            run.agent_id,
            run.team_id,
            run.version,
            dump_json(run.snapshot),
            run.judge,
            dump_json(run.case_ids),
            run.status,
            run.total,
            run.done,
            run.passed,
            run.lease_until,
            run.error,
            run.created_by,
            run.created_at,
            run.finished_at,
        ),
    )


async def get_run(tx: Tx, run_id: str) -> EvalRun | None:
    rows = await tx.fetchall(f"SELECT {_RUN} FROM eval_runs WHERE id = ?", (run_id,))
    return _run(rows[0]) if rows else None


async def runs_of_set(tx: Tx, evalset_id: str) -> list[EvalRun]:
    rows = await tx.fetchall(
        f"SELECT {_RUN} FROM eval_runs WHERE evalset_id = ? ORDER BY created_at DESC, id DESC"
        " LIMIT 50",
        (evalset_id,),
    )
    return [_run(r) for r in rows]


async def open_runs_of_team(tx: Tx, team_id: str, now: str) -> int:
    """The team's runs queued, or running under a lease still held."""
    return int(
        await tx.fetchval(
            "SELECT COUNT(*) FROM eval_runs WHERE team_id = ? AND (status = 'queued'"
            " OR (status = 'running' AND lease_until > ?))",
            (team_id, now),
        )
    )


async def claim(tx: Tx, run_id: str, now: str, lease_until: str) -> bool:
    """Take a queued run, or a running one whose lease ran out (its process died)."""
    changed = await tx.execute(
        "UPDATE eval_runs SET status = 'running', lease_until = ? WHERE id = ?"
        " AND (status = 'queued' OR (status = 'running' AND lease_until < ?))",
        (lease_until, run_id, now),
    )
    return changed > 0


async def abandoned(tx: Tx, now: str, limit: int) -> list[str]:
    """Runs nobody runs: queued, or running with a lease run out."""
    rows = await tx.fetchall(
        "SELECT id FROM eval_runs WHERE status IN ('queued', 'running')"
        " AND (lease_until IS NULL OR lease_until < ?) ORDER BY created_at LIMIT ?",
        (now, limit),
    )
    return [r[0] for r in rows]


async def renew(tx: Tx, run_id: str, lease_until: str) -> None:
    await tx.execute(
        "UPDATE eval_runs SET lease_until = ? WHERE id = ? AND status = 'running'",
        (lease_until, run_id),
    )


async def add_result(tx: Tx, result: EvalResult) -> bool:
    """Record a case's result once; the run's counts follow. False: it had one already."""
    changed = await tx.execute(
        f"INSERT INTO eval_results ({_RESULT}) VALUES ({_placeholders(8)})"
        " ON CONFLICT (run_id, case_id) DO NOTHING",
        (
            result.run_id,
            result.case_id,
            result.position,
            result.question,
            result.answer,
            1 if result.passed else 0,
            result.reason,
            result.latency_ms,
        ),
    )
    if changed:
        await tx.execute(
            "UPDATE eval_runs SET done = done + 1, passed = passed + ? WHERE id = ?",
            (1 if result.passed else 0, result.run_id),
        )
    return changed > 0


async def finish(tx: Tx, run_id: str, status: str, now: str, error: str | None = None) -> None:
    await tx.execute(
        "UPDATE eval_runs SET status = ?, finished_at = ?, lease_until = NULL, error = ?"
        " WHERE id = ?",
        (status, now, error, run_id),
    )


async def results_of(tx: Tx, run_id: str) -> list[EvalResult]:
    rows = await tx.fetchall(
        f"SELECT {_RESULT} FROM eval_results WHERE run_id = ? ORDER BY position", (run_id,)
    )
    return [EvalResult(*r[:5], bool(r[5]), *r[6:]) for r in rows]


async def done_case_ids(tx: Tx, run_id: str) -> set[str]:
    rows = await tx.fetchall("SELECT case_id FROM eval_results WHERE run_id = ?", (run_id,))
    return {r[0] for r in rows}
