"""Experiments: an agent's versions tried side by side on real visitors.

An experiment names two to five of the agent's versions, each with a weight. While it
runs, each new conversation is given one version (its variant) and keeps it: a visitor
with a session, or a signed-in end user, is given the same variant in every conversation,
by a hash of the experiment and who they are, so every process picks the same one without
asking anyone; a caller who is neither gets a variant drawn by weight. Conversations that
began before it keep the live version. The running experiment's variants are kept on the
agent's row too, so a turn reads nothing more to choose.

The figures of each variant are counts over its conversations, each rate with its 95 %
Wilson interval (form submissions per conversation with a normal approximation of a
Poisson count); a variant leads a figure only when its interval clears every other's.
Stopping an experiment may make one variant live, as a new version.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import replace
from typing import Any

from agentsvc.db import ConstraintViolation, Database
from agentsvc.errors import Conflict, NotFound, ValidationFailed
from agentsvc.ids import new_id, now_iso
from agentsvc.services import audit, changes
from agentsvc.services.agents import versions
from agentsvc.services.audit import Actor
from agentsvc.store import agents as agents_store
from agentsvc.store import experiments as experiments_store
from agentsvc.store.agents import Agent
from agentsvc.store.experiments import Experiment, VariantCounts

MIN_VARIANTS, MAX_VARIANTS = 2, 5
Z = 1.96  # 95 %
# Each figure: how it is computed from a variant's counts, and whether higher is better.
FIGURES: dict[str, tuple[str, str, bool]] = {
    "upRate": ("rated_up", "answers", True),
    "downRate": ("rated_down", "answers", False),
    "unansweredRate": ("unanswered", "answers", False),
    "handoffRate": ("handed_over", "conversations", False),
    "submissionsPerConversation": ("submissions", "conversations", True),
}


def check_variants(variants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The variants as kept, or ValidationFailed naming what is wrong."""
    if not MIN_VARIANTS <= len(variants) <= MAX_VARIANTS:
        raise ValidationFailed(
            f"variants: give {MIN_VARIANTS} to {MAX_VARIANTS} versions to compare"
        )
    numbers = [v["version"] for v in variants]
    if len(set(numbers)) != len(numbers):
        raise ValidationFailed("variants: each version may be given once")
    weights = [float(v["weight"]) for v in variants]
    if not all(math.isfinite(w) and w >= 0 for w in weights) or not sum(weights) > 0:
        raise ValidationFailed(
            "variants: weights must be numbers of 0 or more that add up to more than 0"
        )
    return [{"version": n, "weight": w} for n, w in zip(numbers, weights, strict=True)]


def assign(running: dict[str, Any], visitor: str | None) -> int:
    """The variant (a version's number) of a new conversation of this visitor."""
    variants = running["variants"]
    total = sum(v["weight"] for v in variants)
    if visitor is None:
        point = random.random() * total  # noqa: S311 (a split, not a secret)
    else:
        digest = hashlib.sha256(f"{running['id']}\n{visitor}".encode()).digest()
        point = int.from_bytes(digest[:8], "big") / 2**64 * total
    for variant in variants:
        point -= variant["weight"]
        if point < 0:
            return variant["version"]
    return next(v["version"] for v in reversed(variants) if v["weight"] > 0)


async def start(
    db: Database, actor: Actor, agent: Agent, variants: list[dict[str, Any]]
) -> Experiment:
    """Start an experiment on the agent's versions (Conflict when one runs already)."""
    for variant in variants:
        await versions.get(db, agent.id, variant["version"])  # NotFound for an unknown one
    experiment = Experiment(
        id=new_id("experiment"),
        agent_id=agent.id,
        team_id=agent.team_id,
        variants=variants,
        status="running",
        winner=None,
        created_by=actor.user_id,
        created_at=now_iso(),
        stopped_at=None,
    )
    running = {"id": experiment.id, "variants": variants}
    try:
        async with db.write() as tx:
            await experiments_store.insert(tx, experiment)
            await agents_store.update(
                tx, agent.team_id, agent.id, {"experiment": running}, experiment.created_at
            )
            await audit.record_in(
                tx,
                actor,
                "experiment.started",
                target_type="agent",
                target_id=agent.id,
                label=agent.name,
                details={"experiment": experiment.id, "variants": variants},
            )
    except ConstraintViolation as exc:  # the partial unique index: one running per agent
        raise Conflict("This agent runs an experiment already: stop it first") from exc
    await db.announce(changes.agent(agent.id))
    return experiment


async def get(db: Database, team_id: str, experiment_id: str) -> Experiment:
    found = await experiments_store.get(db.reader, team_id, experiment_id)
    if found is None:
        raise NotFound("Experiment not found")
    return found


def won_note(experiment: Experiment, winner: int) -> str:
    """The winner's new version's note, in words an owner reads on the timeline."""
    others = [str(v["version"]) for v in experiment.variants if v["version"] != winner]
    against = ", ".join(others[:-1]) + (" and " if len(others) > 1 else "") + others[-1]
    return f"Version {winner} won an experiment against version{'s' * (len(others) > 1)} {against}"


async def stop(
    db: Database, actor: Actor, experiment: Experiment, winner: int | None
) -> Experiment:
    """Stop a running experiment; a winner (one of its versions) is made live."""
    if winner is not None and winner not in {v["version"] for v in experiment.variants}:
        raise ValidationFailed(f"winner: version {winner} is not one of this experiment's")
    now = now_iso()
    async with db.write() as tx:
        if not await experiments_store.stop(tx, experiment.id, winner, now):
            raise Conflict("This experiment has stopped already")
        await agents_store.update(
            tx, experiment.team_id, experiment.agent_id, {"experiment": None}, now
        )
        if winner is not None:
            version = await versions.get_in(tx, experiment.agent_id, winner)
            await versions.make_live_in(
                tx, actor, experiment.agent_id, version.snapshot, won_note(experiment, winner)
            )
        await audit.record_in(
            tx,
            actor,
            "experiment.stopped",
            target_type="agent",
            target_id=experiment.agent_id,
            details={"experiment": experiment.id, "winner": winner},
        )
    await db.announce(changes.agent(experiment.agent_id))
    return replace(experiment, status="stopped", winner=winner, stopped_at=now)


async def results(db: Database, experiment: Experiment) -> dict[str, Any]:
    """Each variant's figures with their intervals, and the leader of each figure."""
    counts = await experiments_store.counts(db.reader, experiment.id)
    rows = []
    for variant in experiment.variants:
        number = variant["version"]
        found = counts.get(number, VariantCounts())
        rows.append(
            {
                "version": number,
                "weight": variant["weight"],
                "conversations": found.conversations,
                "answers": found.answers,
                **{name: _figure(found, name) for name in FIGURES},
            }
        )
    leading = {name: _leader(rows, name) for name in FIGURES}
    return {"variants": rows, "leading": leading}


def _figure(counts: VariantCounts, name: str) -> dict[str, float | None]:
    part, whole, _ = FIGURES[name]
    k, n = getattr(counts, part), getattr(counts, whole)
    if n == 0:
        return {"value": None, "low": None, "high": None}
    if name == "submissionsPerConversation":
        rate, spread = k / n, Z * math.sqrt(k) / n
        return {
            "value": _round(rate),
            "low": _round(max(rate - spread, 0.0)),
            "high": _round(rate + spread),
        }
    low, high = wilson(k, n)
    return {"value": _round(100 * k / n), "low": _round(100 * low), "high": _round(100 * high)}


def wilson(k: int, n: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of k successes in n tries."""
    p = k / n
    denominator = 1 + Z * Z / n
    centre = (p + Z * Z / (2 * n)) / denominator
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / denominator
    return max(centre - half, 0.0), min(centre + half, 1.0)


def _leader(rows: list[dict[str, Any]], name: str) -> int | None:
    """The variant whose interval clears every other's on the better side, if one does."""
    higher_is_better = FIGURES[name][2]
    measured = [r for r in rows if r[name]["value"] is not None]
    if len(measured) < len(rows) or len(rows) < 2:
        return None
    for row in measured:
        others = [r for r in measured if r is not row]
        if higher_is_better and all(row[name]["low"] > o[name]["high"] for o in others):
            return row["version"]
        if not higher_is_better and all(row[name]["high"] < o[name]["low"] for o in others):
            return row["version"]
    return None


def _round(value: float) -> float:
    return round(value, 2)
