"""Evaluation runs: each case of a set answered by a version of the agent and scored.

A run is a row holding what it runs (the version's snapshot, frozen when it was asked for,
and its cases' ids); the process that takes it holds a lease on it, renewed while it
works, and records each case's result once (a result already there is never redone). A
process that dies leaves its lease to run out; another process's sweep then takes the run
and answers the cases still without a result. At most `[evals] concurrency` cases are
answered at once in a process, each within `case_timeout_seconds`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from agentsvc.config import EvalSettings
from agentsvc.ids import iso, now_iso
from agentsvc.llm.base import ProviderError
from agentsvc.services.agents import versions
from agentsvc.services.evals import scoring
from agentsvc.services.evals.answering import Answering, answer, budget_reached, count
from agentsvc.store import agents as agents_store
from agentsvc.store import evals as store
from agentsvc.store.agents import Agent
from agentsvc.store.evals import EvalCase, EvalResult, EvalRun

log = logging.getLogger(__name__)
SWEEP_BATCH = 20


def _later(seconds: float) -> str:
    return iso(datetime.now(UTC) + timedelta(seconds=seconds))


# A case's reason when the month's budget is spent: the model was not asked.
BUDGET_REACHED = (
    "The monthly budget is spent: the agent's model was not asked (raise the budget on the"
    " Usage page, or wait for next month)"
)


class EvalRunner:
    """The runs this process works on: a task each, their cases bounded together."""

    def __init__(self, answering: Answering, settings: EvalSettings) -> None:
        self._answering = answering
        self._db = answering.db
        self._settings = settings
        self._cases = asyncio.Semaphore(settings.concurrency)
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def start(self, run_id: str) -> None:
        """Work on the run, unless this process does already."""
        if run_id in self._tasks:
            return
        task = asyncio.ensure_future(self._run(run_id))
        self._tasks[run_id] = task
        task.add_done_callback(lambda _: self._tasks.pop(run_id, None))

    async def wait(self, run_id: str) -> None:
        """Until this process's work on the run ends (at once when it has none)."""
        task = self._tasks.get(run_id)
        if task is not None:
            await asyncio.shield(task)

    async def sweep(self) -> None:
        """Take the runs nobody works on (queued, or left by a process that stopped)."""
        for run_id in await store.abandoned(self._db.reader, now_iso(), SWEEP_BATCH):
            self.start(run_id)

    async def close(self) -> None:
        """Stop working: the runs under way are left to their leases (and resumed)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, run_id: str) -> None:
        lease = self._settings.lease_seconds
        async with self._db.write() as tx:
            if not await store.claim(tx, run_id, now_iso(), _later(lease)):
                return  # another process has it, or it ended
        run = await store.get_run(self._db.reader, run_id)
        assert run is not None
        renewing = asyncio.ensure_future(self._renew(run_id, lease))
        try:
            agent = await agents_store.get_public(self._db.reader, run.agent_id)
            if agent is None:  # deleted meanwhile: its sets and runs go with it
                return
            agent = replace(agent, **versions.columns_of(run.snapshot))
            await self._cases_of(run, agent)
            status, error = "done", None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 (a run ends with a reason, never silently)
            log.exception("evaluation run %s failed", run_id)
            status, error = "failed", f"The run stopped: {type(exc).__name__}"
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
        async with self._db.write() as tx:
            await store.finish(tx, run_id, status, now_iso(), error)

    async def _renew(self, run_id: str, lease: float) -> None:
        while True:
            await asyncio.sleep(lease / 3)
            async with self._db.write() as tx:
                await store.renew(tx, run_id, _later(lease))

    async def _cases_of(self, run: EvalRun, agent: Agent) -> None:
        done = await store.done_case_ids(self._db.reader, run.id)
        cases = {c.id: c for c in await store.cases_of(self._db.reader, run.evalset_id)}
        await asyncio.gather(
            *(
                self._case(run, agent, position, case_id, cases.get(case_id))
                for position, case_id in enumerate(run.case_ids)
                if case_id not in done
            )
        )

    async def _case(
        self, run: EvalRun, agent: Agent, position: int, case_id: str, case: EvalCase | None
    ) -> None:
        async with self._cases:
            started = time.monotonic()
            if case is None:
                given, passed, reason = "", False, "The case was deleted during the run"
            else:
                given, passed, reason = await self._score(run, agent, case)
            result = EvalResult(
                run_id=run.id,
                case_id=case_id,
                position=position,
                question=case.question if case else "",
                answer=given,
                passed=passed,
                reason=reason,
                latency_ms=round((time.monotonic() - started) * 1000),
            )
            async with self._db.write() as tx:
                await store.add_result(tx, result)

    async def _score(self, run: EvalRun, agent: Agent, case: EvalCase) -> tuple[str, bool, str]:
        timeout, deps = self._settings.case_timeout_seconds, self._answering
        if await budget_reached(deps, agent):
            return "", False, BUDGET_REACHED
        try:
            completed = await asyncio.wait_for(answer(deps, agent, case.question), timeout)
        except (ProviderError, TimeoutError) as exc:
            why = "it took too long" if isinstance(exc, TimeoutError) else str(exc)
            return "", False, f"The agent could not answer: {why}"
        await count(deps, agent, agent.model, completed)
        given = completed.text
        problems = scoring.word_checks(given, case, agent.language)
        verdict = None
        if run.judge and case.expected:
            try:
                passed, why, reply = await asyncio.wait_for(
                    scoring.judge(deps.providers, run.judge, case, given), timeout
                )
                verdict = (passed, why)
                if reply is not None:
                    await count(deps, agent, run.judge, reply)
            except TimeoutError:
                verdict = (False, "The judge took too long to answer")
        passed = not problems and (verdict is None or verdict[0])
        reasons = [f"{p[0].upper()}{p[1:]}" for p in problems]
        if verdict is not None:
            reasons.append(verdict[1])
        reason = ". ".join(reasons) if reasons else "It says what it must and nothing it must not"
        return given, passed, reason
