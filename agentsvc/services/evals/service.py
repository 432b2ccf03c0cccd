"""The evaluations feature as the API uses it: an agent's evaluation sets and their cases
(written, or imported from curated answers and 👎 answers), runs against a version of the
agent, their results and progress, and the publish gate."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from agentsvc.config import Settings
from agentsvc.db import Database
from agentsvc.errors import Conflict, NotFound, ValidationFailed
from agentsvc.ids import iso, new_id, now_iso, parse_iso
from agentsvc.llm.base import BUILTIN
from agentsvc.services.agents import registry, versions
from agentsvc.services.agents.models import model_error
from agentsvc.services.agents.registry import AgentCache
from agentsvc.services.answers.matching import CuratedAnswers, question_key
from agentsvc.services.audit import Actor
from agentsvc.services.evals.runs import EvalRunner
from agentsvc.store import answers as answers_store
from agentsvc.store import evals as store
from agentsvc.store import feedback as feedback_store
from agentsvc.store.agents import Agent
from agentsvc.store.evals import EvalCase, EvalResult, EvalRun, EvalSet

MAX_IMPORTED_RATINGS = 2_000  # 👎 answers looked at by one import


@dataclass(frozen=True, slots=True)
class NewCase:
    question: str
    expected: str | None
    must_include: list[str]
    must_not_include: list[str]
    tags: list[str]


@dataclass(frozen=True, slots=True)
class EvalsDeps:
    db: Database
    agents: AgentCache
    runner: EvalRunner
    curated: CuratedAnswers | None
    settings: Settings


class EvalsService:
    """Evaluation sets, cases, runs and the publish gate of a team's agents."""

    def __init__(self, deps: EvalsDeps):
        self._deps = deps
        self._db = deps.db

    async def _agent(self, team_id: str, agent_id: str) -> Agent:
        return await registry.get_agent(self._db, self._deps.agents, team_id, agent_id)

    async def create_set(self, actor: Actor, agent_id: str, name: str) -> EvalSet:
        agent = await self._agent(actor.team_id, agent_id)
        now = now_iso()
        found = EvalSet(new_id("evalset"), agent.id, agent.team_id, name, now, now)
        async with self._db.write() as tx:
            await store.insert_set(tx, found)
        return found

    async def sets(self, team_id: str, agent_id: str) -> list[EvalSet]:
        agent = await self._agent(team_id, agent_id)
        return await store.sets_of_agent(self._db.reader, agent.id)

    async def get_set(self, team_id: str, evalset_id: str) -> EvalSet:
        found = await store.get_set(self._db.reader, team_id, evalset_id)
        if found is None:
            raise NotFound("Evaluation set not found")
        return found

    async def is_set_of(self, team_id: str, agent_id: str, evalset_id: str) -> bool:
        """Whether the evaluation set is one of the agent's."""
        found = await store.get_set(self._db.reader, team_id, evalset_id)
        return found is not None and found.agent_id == agent_id

    async def cases(self, team_id: str, evalset_id: str) -> list[EvalCase]:
        found = await self.get_set(team_id, evalset_id)
        return await store.cases_of(self._db.reader, found.id)

    async def delete_set(self, team_id: str, evalset_id: str) -> None:
        async with self._db.write() as tx:
            if not await store.delete_set(tx, team_id, evalset_id):
                raise NotFound("Evaluation set not found")

    def _limit(self, plan_id: str) -> int:
        planned = self._deps.settings.plans.limits(plan_id).eval_cases
        ceiling = self._deps.settings.evals.max_cases
        return ceiling if planned is None else min(planned, ceiling)

    async def add_cases(
        self, team_id: str, plan_id: str, evalset_id: str, new: list[NewCase]
    ) -> list[EvalCase]:
        """Add cases to a set, within the plan's limit (ValidationFailed beyond it)."""
        found = await self.get_set(team_id, evalset_id)
        now = now_iso()
        cases = [
            EvalCase(
                new_id("eval_case"),
                found.id,
                c.question,
                question_key(c.question),
                c.expected,
                c.must_include,
                c.must_not_include,
                c.tags,
                now,
            )
            for c in new
        ]
        limit = self._limit(plan_id)
        async with self._db.write() as tx:
            held = await store.count_cases(tx, found.id)
            if held + len(cases) > limit:
                raise ValidationFailed(
                    f"This set holds {held} cases; your plan allows {limit} in a set"
                )
            cases = _in_order_added(cases, await store.newest_case_at(tx, found.id))
            await store.insert_cases(tx, cases)
        return cases

    async def delete_case(self, team_id: str, evalset_id: str, case_id: str) -> None:
        found = await self.get_set(team_id, evalset_id)
        async with self._db.write() as tx:
            if not await store.delete_case(tx, found.id, case_id):
                raise NotFound("Case not found")

    async def import_cases(
        self, team_id: str, plan_id: str, evalset_id: str, source: str
    ) -> list[EvalCase]:
        """Cases from the agent's curated answers, or from its 👎 answers that a curated
        answer now answers; a question the set has already is skipped."""
        found = await self.get_set(team_id, evalset_id)
        agent = await self._agent(team_id, found.agent_id)
        have = await store.question_keys(self._db.reader, found.id)
        pairs = await (self._curated(agent) if source == "curated" else self._rated(agent))
        new: list[NewCase] = []
        for question, expected in pairs:
            key = question_key(question)
            if key and key not in have:
                have.add(key)
                new.append(NewCase(question, expected, [], [], [source]))
        room = self._limit(plan_id) - found.case_count
        return await self.add_cases(team_id, plan_id, found.id, new[: max(room, 0)])

    async def _curated(self, agent: Agent) -> list[tuple[str, str]]:
        rows = await answers_store.list_for_agent(self._db.reader, agent.id)
        return [(r.question, r.answer) for r in rows]

    async def _rated(self, agent: Agent) -> list[tuple[str, str]]:
        curated = self._deps.curated
        if curated is None:
            return []
        rated, _ = await feedback_store.list_rated(
            self._db.reader, agent.id, "down", MAX_IMPORTED_RATINGS
        )
        pairs = []
        for done, item in enumerate(rated):
            if done % 50 == 49:
                await asyncio.sleep(0)  # up to 2,000 matches: other requests go between
            if not item.question:
                continue
            match = await curated.match(self._db, agent.id, item.question, agent.language)
            if match is not None:
                pairs.append((item.question, match.answer))
        return pairs

    async def start_run(
        self, actor: Actor, evalset_id: str, version: int | str | None, judge: str | None
    ) -> EvalRun:
        """Run a set against a version ("draft", a number; None: the live one) -> queued."""
        found = await self.get_set(actor.team_id, evalset_id)
        agent = await self._agent(actor.team_id, found.agent_id)
        if judge is not None:
            problem = model_error(self._deps.settings, judge)
            if judge == BUILTIN:
                problem = "the builtin model cannot judge: name a provider's model"
            if problem:
                raise ValidationFailed(f"judge: {problem}")
        label, snapshot = await self._snapshot(agent, version)
        return await self._queue(actor, found, agent, label, snapshot, judge)

    async def _snapshot(self, agent: Agent, version: int | str | None) -> tuple[str, dict]:
        if version == "draft":
            if agent.draft is None:
                raise NotFound("This agent has no draft")
            return "draft", agent.draft["snapshot"]
        number = agent.version if version is None else int(version)
        return str(number), (await versions.get(self._db, agent.id, number)).snapshot

    async def _queue(
        self,
        actor: Actor,
        found: EvalSet,
        agent: Agent,
        label: str,
        snapshot: dict,
        judge: str | None,
    ) -> EvalRun:
        now = now_iso()
        async with self._db.write() as tx:
            case_ids = [c.id for c in await store.cases_of(tx, found.id)]
            if not case_ids:
                raise ValidationFailed("This set has no cases yet: add some first")
            under_way = await store.open_runs_of_team(tx, actor.team_id, now)
            if under_way >= self._deps.settings.evals.runs_per_team:
                raise Conflict(
                    f"Your team has {under_way} evaluation runs under way: wait for one to end"
                )
            run = EvalRun(
                id=new_id("eval_run"),
                evalset_id=found.id,
                agent_id=agent.id,
                team_id=agent.team_id,
                version=label,
                snapshot=snapshot,
                judge=judge,
                case_ids=case_ids,
                status="queued",
                total=len(case_ids),
                done=0,
                passed=0,
                lease_until=None,
                error=None,
                created_by=actor.user_id,
                created_at=now,
                finished_at=None,
            )
            await store.insert_run(tx, run)
        self._deps.runner.start(run.id)
        return run

    async def get_run(self, team_id: str, run_id: str) -> tuple[EvalRun, list[EvalResult]]:
        run = await store.get_run(self._db.reader, run_id)
        if run is None or run.team_id != team_id:
            raise NotFound("Evaluation run not found")
        return run, await store.results_of(self._db.reader, run.id)

    async def runs(self, team_id: str, evalset_id: str) -> list[EvalRun]:
        found = await self.get_set(team_id, evalset_id)
        return await store.runs_of_set(self._db.reader, found.id)

    async def progress(self, team_id: str, run_id: str) -> AsyncIterator[EvalRun]:
        """The run each time it moves on, until it ends (read from the database, so a run
        another process works on is followed the same way)."""
        run, _ = await self.get_run(team_id, run_id)
        yield run
        poll = self._deps.settings.evals.progress_poll_seconds
        while run.status in ("queued", "running"):
            await asyncio.sleep(poll)
            now = await store.get_run(self._db.reader, run_id)
            if now is None:
                return
            if (now.status, now.done) != (run.status, run.done):
                yield now
            run = now

    async def _ended(self, team_id: str, run_id: str) -> None:
        """Until the run ends, whichever process runs it."""
        await self._deps.runner.wait(run_id)
        async for _ in self.progress(team_id, run_id):
            pass

    async def gate(self, actor: Actor, agent: Agent, gate: dict[str, Any]) -> None:
        """Run the gate's set on the draft and on the live version; Conflict naming the
        failing cases when the draft passes too few, or too many fewer than live."""
        found = await store.get_set(self._db.reader, actor.team_id, gate["evalsetId"])
        if found is None:
            raise Conflict(
                "The publish gate's evaluation set was deleted: choose another one, or remove"
                " the gate"
            )
        assert agent.draft is not None
        draft = await self._queue(actor, found, agent, "draft", agent.draft["snapshot"], None)
        live_snapshot = (await versions.get(self._db, agent.id, agent.version)).snapshot
        live = await self._queue(actor, found, agent, str(agent.version), live_snapshot, None)
        timeout = self._deps.settings.evals.gate_timeout_seconds
        try:
            await asyncio.wait_for(
                asyncio.gather(
                    self._ended(actor.team_id, draft.id), self._ended(actor.team_id, live.id)
                ),
                timeout,
            )
        except TimeoutError as exc:
            raise Conflict("The evaluation did not end in time: publish again later") from exc
        draft_run, results = await self.get_run(actor.team_id, draft.id)
        live_run, _ = await self.get_run(actor.team_id, live.id)
        draft_rate, live_rate = pass_rate(draft_run), pass_rate(live_run)
        too_low = draft_rate < gate["minPassRate"]
        dropped = live_rate - draft_rate > gate["maxDrop"]
        if not (too_low or dropped):
            return
        failing = [r.question for r in results if not r.passed][:5]
        why = (
            f"at least {gate['minPassRate']:g} % needed"
            if too_low
            else f"{live_rate:g} % live, at most {gate['maxDrop']:g} points fewer allowed"
        )
        raise Conflict(
            f'The draft passes {draft_rate:g} % of "{found.name}" ({why}); failing: '
            + "; ".join(f'"{q}"' for q in failing)
            + f" (run {draft_run.id})"
        )


def pass_rate(run: EvalRun) -> float:
    """The share of a run's cases that passed, in % (one decimal)."""
    return round(100 * run.passed / run.total, 1) if run.total else 0.0


def _in_order_added(cases: list[EvalCase], newest: str | None) -> list[EvalCase]:
    """The cases stamped a millisecond apart, after the set's newest: a set lists its cases
    by `created_at`, and an import (or two requests in one millisecond) would otherwise
    share a stamp and come back in the order of their random ids."""
    if not cases:
        return cases
    start = parse_iso(cases[0].created_at)
    if newest is not None:
        start = max(start, parse_iso(newest) + timedelta(milliseconds=1))
    return [
        replace(case, created_at=iso(start + timedelta(milliseconds=i)))
        for i, case in enumerate(cases)
    ]
