"""An agent's answer to one question as a version of it would give it, for an evaluation:
the same knowledge, curated answers and model call as a chat turn, but no conversation is
stored and no tool is offered, so a run never calls anything outside (a form, a web
service) nor counts in the analytics. Its tokens do count, as the team pays for them: in the
usage and against the budgets (`count`), and at a budget's limit no case calls the model."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Database
from agentsvc.ids import now_iso
from agentsvc.llm.base import Message, ModelRequest, Providers, TextDelta, Usage
from agentsvc.services.answers.matching import CuratedAnswers
from agentsvc.services.events.emitter import NOTHING, Emitter
from agentsvc.services.knowledge import prompt
from agentsvc.services.knowledge.retrieval import retrieve
from agentsvc.services.knowledge.vectors import Semantic
from agentsvc.services.usage import budgets
from agentsvc.services.usage.meter import MAX_TOKENS, UsageMeter, answered, token_count
from agentsvc.store.agents import Agent

MAX_ANSWER_CHARS = 20_000  # an answer longer than this is cut: it is judged, not shown


@dataclass(frozen=True, slots=True)
class Answering:
    """What answering needs (built once for the app in runtime.py)."""

    db: Database
    providers: Providers
    curated: CuratedAnswers | None
    semantic: Semantic | None
    top_k: int
    meter: UsageMeter | None = None  # tokens counted, budgets kept (None: not counted)
    emitter: Emitter | None = None  # the budgets' `budget.warning` events


@dataclass(frozen=True, slots=True)
class Completed:
    """A model's whole reply, and the tokens its provider said it used (None: not said)."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None


async def budget_reached(deps: Answering, agent: Agent) -> bool:
    """Whether the team's or the agent's monthly budget is spent (no model is then asked)."""
    return deps.meter is not None and budgets.reached(await deps.meter.spending(deps.db, agent))


async def count(deps: Answering, agent: Agent, model: str, completed: Completed) -> None:
    """Count a reply's tokens as the agent's (in its own transaction), with the warnings of
    the budgets it makes cross, as a chat answer's are."""
    meter = deps.meter
    tokens = (completed.input_tokens, completed.output_tokens)
    if meter is None or tokens == (None, None):
        return
    known = await meter.spending(deps.db, agent)
    cost = meter.prices.cost_nanos(model, tokens[0] or 0, tokens[1] or 0)
    used = answered(agent, None, tokens, cost, now_iso(), model)
    emitter = deps.emitter
    emission = await emitter.for_team(agent.team_id) if emitter is not None else NOTHING
    async with deps.db.write() as tx:
        alerts = await meter.record(tx, emission, agent, used, known)
    meter.notify(alerts)


async def answer(deps: Answering, agent: Agent, question: str) -> Completed:
    """The agent's answer to the question (ProviderError when its model fails)."""
    language = agent.language
    passages = await retrieve(deps.db, agent.id, question, deps.top_k, deps.semantic, language)
    match = None
    if deps.curated is not None:
        match = await deps.curated.match(deps.db, agent.id, question, language)
    provider, model_name = deps.providers.resolve(agent.model)
    system, texts, curated = prompt.for_model(agent, passages, match)
    request = ModelRequest(
        model=model_name,
        system=system,
        messages=(Message("user", question),),
        temperature=agent.temperature,
        knowledge=texts,
        language=language,
        curated_answer=curated,
    )
    return await complete(deps.providers, agent.model, request)


async def complete(providers: Providers, model_id: str, request: ModelRequest) -> Completed:
    """A model's whole reply to a request, cut at MAX_ANSWER_CHARS, with its usage."""
    provider, _ = providers.resolve(model_id)
    parts: list[str] = []
    size = 0
    tokens: list[int | None] = [None, None]
    async for event in provider.stream(request):
        if isinstance(event, TextDelta):
            parts.append(event.text)
            size += len(event.text)
            if size >= MAX_ANSWER_CHARS:
                break
        elif isinstance(event, Usage):
            for i, value in enumerate((event.input_tokens, event.output_tokens)):
                counted = token_count(value)
                if counted is not None:  # summed, as a chat turn's are
                    tokens[i] = min((tokens[i] or 0) + counted, MAX_TOKENS)
    return Completed("".join(parts)[:MAX_ANSWER_CHARS], tokens[0], tokens[1])
