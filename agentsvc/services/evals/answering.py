"""An agent's answer to one question as a version of it would give it, for an evaluation:
the same knowledge, curated answers and model call as a chat turn, but no conversation is
stored and no tool is offered, so a run never calls anything outside (a form, a web
service) nor counts in the analytics."""

from __future__ import annotations

from dataclasses import dataclass

from agentsvc.db import Database
from agentsvc.llm.base import Message, ModelRequest, Providers, TextDelta
from agentsvc.services.answers.matching import CuratedAnswers
from agentsvc.services.knowledge import prompt
from agentsvc.services.knowledge.retrieval import retrieve
from agentsvc.services.knowledge.vectors import Semantic
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


async def answer(deps: Answering, agent: Agent, question: str) -> str:
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


async def complete(providers: Providers, model_id: str, request: ModelRequest) -> str:
    """A model's whole reply to a request, cut at MAX_ANSWER_CHARS."""
    provider, _ = providers.resolve(model_id)
    parts: list[str] = []
    size = 0
    async for event in provider.stream(request):
        if isinstance(event, TextDelta):
            parts.append(event.text)
            size += len(event.text)
            if size >= MAX_ANSWER_CHARS:
                break
    return "".join(parts)[:MAX_ANSWER_CHARS]
