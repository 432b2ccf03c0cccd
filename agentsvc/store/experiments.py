"""Experiments: an agent's versions as weighted variants, and their figures per variant."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentsvc.db import Tx
from agentsvc.store.rows import dump_json, load_json


@dataclass(frozen=True, slots=True)
class Experiment:
    id: str
    agent_id: str
    team_id: str
    variants: list[dict[str, Any]]  # [{version, weight}]
    status: str  # "running" | "stopped"
    winner: int | None
    created_by: str | None
    created_at: str
    stopped_at: str | None


@dataclass(frozen=True, slots=True)
class VariantCounts:
    """What happened in the conversations given one variant."""

    conversations: int = 0
    handed_over: int = 0  # conversations in which a person was asked for
    answers: int = 0  # the agent's answers (members' replies not counted)
    rated_up: int = 0
    rated_down: int = 0
    unanswered: int = 0
    submissions: int = 0  # form submissions made in those conversations


_COLUMNS = "id, agent_id, team_id, variants, status, winner, created_by, created_at, stopped_at"


def _experiment(row: Any) -> Experiment:
    return Experiment(row[0], row[1], row[2], load_json(row[3]), *row[4:])


async def insert(tx: Tx, experiment: Experiment) -> None:
    """Insert a running experiment (ConstraintViolation when the agent runs one already)."""
    await tx.execute(
        f"INSERT INTO experiments ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            experiment.id,
            experiment.agent_id,
            experiment.team_id,
            dump_json(experiment.variants),
            experiment.status,
            experiment.winner,
            experiment.created_by,
            experiment.created_at,
            experiment.stopped_at,
        ),
    )


async def get(tx: Tx, team_id: str, experiment_id: str) -> Experiment | None:
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM experiments WHERE id = ? AND team_id = ?",
        (experiment_id, team_id),
    )
    return _experiment(rows[0]) if rows else None


async def list_for_agent(tx: Tx, agent_id: str, limit: int) -> list[Experiment]:
    rows = await tx.fetchall(
        f"SELECT {_COLUMNS} FROM experiments WHERE agent_id = ?"
        " ORDER BY created_at DESC, id DESC LIMIT ?",
        (agent_id, limit),
    )
    return [_experiment(r) for r in rows]


async def stop(tx: Tx, experiment_id: str, winner: int | None, now: str) -> bool:
    """Stop a running experiment; False when it was not running."""
    changed = await tx.execute(
        "UPDATE experiments SET status = 'stopped', winner = ?, stopped_at = ?"
        " WHERE id = ? AND status = 'running'",
        (winner, now, experiment_id),
    )
    return changed > 0


async def counts(tx: Tx, experiment_id: str) -> dict[int, VariantCounts]:
    """Each variant's figures (read through the conversations' experiment index)."""
    found: dict[int, dict[str, int]] = {}
    conversations = await tx.fetchall(
        "SELECT variant, COUNT(*), SUM(CASE WHEN handoff_at IS NULL THEN 0 ELSE 1 END)"
        " FROM conversations WHERE experiment_id = ? GROUP BY variant",
        (experiment_id,),
    )
    for variant, total, handed in conversations:
        found.setdefault(variant, {}).update(conversations=total, handed_over=handed or 0)
    answers = await tx.fetchall(
        "SELECT c.variant, COUNT(*),"
        " SUM(CASE WHEN m.rating = 'up' THEN 1 ELSE 0 END),"
        " SUM(CASE WHEN m.rating = 'down' THEN 1 ELSE 0 END),"
        " SUM(CASE WHEN m.unanswered = 1 THEN 1 ELSE 0 END)"
        " FROM conversations c JOIN messages m ON m.conversation_id = c.id"
        " WHERE c.experiment_id = ? AND m.role = 'assistant' AND m.author_id IS NULL"
        " GROUP BY c.variant",
        (experiment_id,),
    )
    for variant, total, up, down, unanswered in answers:
        found.setdefault(variant, {}).update(
            answers=total, rated_up=up or 0, rated_down=down or 0, unanswered=unanswered or 0
        )
    submissions = await tx.fetchall(
        "SELECT c.variant, COUNT(*) FROM conversations c"
        " JOIN form_submissions s ON s.conversation_id = c.id"
        " WHERE c.experiment_id = ? GROUP BY c.variant",
        (experiment_id,),
    )
    for variant, total in submissions:
        found.setdefault(variant, {}).update(submissions=total)
    return {variant: VariantCounts(**values) for variant, values in found.items()}
