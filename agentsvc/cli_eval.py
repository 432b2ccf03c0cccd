"""`agentsvc eval run`: an agent's evaluation set run against a version from the command
line, as the API runs it (a run like any other, listed under the set), each case printed
with its verdict and the pass rate at the end; exit status 1 under `--min-pass`, so an
owner's own CI can stop a change that makes answers worse. Safe while a server runs."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from typing import Any

from agentsvc.config import Settings
from agentsvc.db import Database
from agentsvc.errors import DomainError

POLL_SECONDS = 0.1
UNDER_THE_BAR = 1


class EvalFailed(Exception):
    """The run could not be made (a reason for people), or it failed."""


def add_eval_command(commands: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """`eval run` on the parser; `add(parent, name, help)` makes the subcommand, with the
    common options and what it runs."""
    evals = commands.add_parser("eval", help="evaluation runs: run").add_subparsers(
        dest="subcommand", required=True, metavar="SUBCOMMAND"
    )
    run = add(
        evals,
        "run",
        "run an agent's evaluation set against a version; print each case and the pass rate;"
        " exit 1 under --min-pass",
    )
    run.add_argument("--agent", required=True, metavar="AGENT_ID", help="the agent (required)")
    run.add_argument(
        "--evalset", required=True, metavar="EVALSET_ID", help="one of its sets (required)"
    )
    run.add_argument(
        "--version",
        metavar="V",
        help="draft, or a version's number (default: the live version)",
    )
    run.add_argument("--judge", metavar="PROVIDER/MODEL", help="a model that judges each answer")
    run.add_argument(
        "--min-pass",
        dest="min_pass",
        type=float,
        metavar="SHARE",
        help="the share of cases that must pass, 0 to 1 (such as 0.9); under it, exit 1",
    )


def version_of(text: str | None) -> int | str | None:
    """The --version value: None (live), "draft" or a number (EvalFailed otherwise)."""
    if text is None or text == "draft":
        return text
    if text.isascii() and text.isdigit() and 0 < int(text) < 10**9:
        return int(text)
    raise EvalFailed(f"--version: give draft or a version's number, not {text!r}")


async def run_eval(db: Database, settings: Settings, args: argparse.Namespace) -> int:
    """Run the set, print the table; the exit status."""
    # Loaded here: `agentsvc --help` and the other commands do without the web client.
    import aiohttp

    from agentsvc.llm.base import Providers
    from agentsvc.services.agents.registry import AgentCache
    from agentsvc.services.answers.matching import CuratedAnswers
    from agentsvc.services.audit import Actor
    from agentsvc.services.evals.answering import Answering
    from agentsvc.services.evals.runs import EvalRunner
    from agentsvc.services.evals.service import EvalsDeps, EvalsService, pass_rate
    from agentsvc.store import agents as agents_store

    version = version_of(args.version)
    if args.min_pass is not None and not 0 <= args.min_pass <= 1:
        raise EvalFailed("--min-pass: a share from 0 to 1, such as 0.9")
    agent = await agents_store.get_public(db.reader, args.agent)
    if agent is None:
        raise EvalFailed(f"no agent {args.agent!r}")
    async with aiohttp.ClientSession() as session:
        providers = Providers(settings, session)
        curated = CuratedAnswers(settings.answers.match_threshold)
        answering = Answering(db, providers, curated, None, settings.knowledge.top_k)
        runner = EvalRunner(answering, settings.evals)
        evals = EvalsService(EvalsDeps(db, AgentCache(), runner, curated, settings))
        actor = Actor(user_id=None, team_id=agent.team_id)
        try:
            found = await evals.get_set(agent.team_id, args.evalset)
            if found.agent_id != agent.id:
                raise EvalFailed(f"the set {args.evalset!r} is not one of this agent's")
            run = await evals.start_run(actor, found.id, version, args.judge)
            await runner.wait(run.id)
            while run.status in ("queued", "running"):
                await asyncio.sleep(POLL_SECONDS)
                run, results = await evals.get_run(agent.team_id, run.id)
            run, results = await evals.get_run(agent.team_id, run.id)
        except DomainError as exc:
            raise EvalFailed(str(exc)) from exc
        finally:
            await runner.close()
    width = max((len(r.question) for r in results), default=8)
    width = min(max(width, 8), 60)
    print(f"{'question':{width}}  verdict  reason")
    for result in results:
        verdict = "pass" if result.passed else "FAIL"
        print(f"{result.question[:width]:{width}}  {verdict:7}  {result.reason}")
    rate = pass_rate(run)
    print(f"\n{run.passed} of {run.total} passed ({rate:g} %), run {run.id}, version {run.version}")
    if run.status != "done":
        raise EvalFailed(run.error or "the run did not finish")
    if args.min_pass is not None and run.passed < args.min_pass * run.total:
        print(f"under the bar: at least {args.min_pass:.0%} needed")
        return UNDER_THE_BAR
    return 0
