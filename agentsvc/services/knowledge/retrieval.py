"""The passages that best answer a question: BM25, fused with vector similarity when on."""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass

from agentsvc import telemetry
from agentsvc.db import Database
from agentsvc.language import DEFAULT_LANGUAGE, stem
from agentsvc.llm.base import ProviderError
from agentsvc.services.knowledge.vectors import Semantic
from agentsvc.stopwords import STOP_WORDS
from agentsvc.store import documents as store

log = logging.getLogger(__name__)

MAX_QUERY_TERMS = 32
MIN_STEM_PREFIX = 4  # shorter stems as prefixes would match too many unrelated words
RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al.; the usual choice)
MIN_CANDIDATES = 20  # passages each ranking contributes to the fusion, at least
# Longest a chat turn waits for its question's embedding (retries included) before it
# goes on with BM25 alone: the provider's own timeout is meant for long model answers.
QUERY_EMBED_SECONDS = 10.0

_TERM = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Passage:
    """A passage retrieved for a question, with its document's title and BM25 score."""

    document_id: str
    title: str
    text: str
    score: float
    heading: str = ""
    url: str | None = None  # the document's address when it was fetched from a URL


def query_terms(text: str) -> list[str]:
    """The distinct words of a question (stop words dropped), safe to quote for FTS5.

    Only letters and digits survive, so nothing a user types can be read as FTS5 syntax.
    """
    seen: dict[str, None] = {}
    for match in _TERM.finditer(text.lower()):
        word = match.group(0)
        if word not in STOP_WORDS and word not in seen:
            seen[word] = None
            if len(seen) == MAX_QUERY_TERMS:
                break
    return list(seen)


def stem_prefixes(terms: list[str], language: str) -> list[str]:
    """Prefixes that find the terms' other word forms in a language other than English.

    The index folds English word forms on both sides already (FTS5's porter tokenizer,
    PostgreSQL's english configuration); for the other languages a prefix query on the
    Snowball stem finds the word's other forms ("bestellung" finds "bestellungen" through
    "bestell"*).
    """
    if language == DEFAULT_LANGUAGE:
        return []
    prefixes: dict[str, None] = {}
    for term in terms:
        root = stem(term, language)
        if root != term and len(root) >= MIN_STEM_PREFIX and _TERM.fullmatch(root):
            prefixes[root] = None
    return list(prefixes)


async def retrieve(
    db: Database,
    agent_id: str,
    query: str,
    k: int,
    semantic: Semantic | None = None,
    language: str = DEFAULT_LANGUAGE,
) -> list[Passage]:
    """Return the agent's k passages that best match the query, best first.

    BM25 alone, or with `semantic` BM25 and vector similarity fused by reciprocal rank;
    word forms of the agent's `language` match each other.
    """
    search = _ranked(db, agent_id, query, k, semantic, language)
    return await telemetry.retrieval(search, agent_id, query, k)


async def _ranked(
    db: Database,
    agent_id: str,
    query: str,
    k: int,
    semantic: Semantic | None,
    language: str,
) -> list[Passage]:
    terms = query_terms(query)
    if k <= 0 or (not terms and semantic is None):
        return []
    prefixes = stem_prefixes(terms, language)
    if semantic is None:
        hits = await store.search(db.reader, agent_id, terms, prefixes, k, k * 2)
        return [Passage(h.document_id, h.title, h.text, h.score, h.heading, h.url) for h in hits]
    depth = max(k * 4, MIN_CANDIDATES)
    lexical, nearest = await asyncio.gather(
        store.search(db.reader, agent_id, terms, prefixes, depth, depth) if terms else _nothing(),
        _nearest(semantic, agent_id, query, depth),
    )
    fused = fuse([[h.passage_id for h in lexical], nearest])
    # Vector hits BM25 did not return need their texts; ids of passages deleted since the
    # vectors were cached come back absent and are skipped.
    known = {h.passage_id: h for h in lexical}
    wanted = [pid for pid, _ in fused[: k * 2] if pid not in known]
    for hit in await store.hits_by_id(db.reader, agent_id, wanted):
        known[hit.passage_id] = hit
    out = []
    for pid, score in fused:
        hit = known.get(pid)
        if hit is not None:
            out.append(Passage(hit.document_id, hit.title, hit.text, score, hit.heading, hit.url))
            if len(out) == k:
                break
    return out


async def _nothing() -> list[store.Hit]:
    return []


async def _nearest(semantic: Semantic, agent_id: str, query: str, n: int) -> list[int]:
    """The vector ranking; empty (BM25 alone answers) when the question cannot be embedded."""
    try:
        async with asyncio.timeout(QUERY_EMBED_SECONDS):
            vector = (await semantic.embedder.embed([query]))[0]
    except ProviderError as exc:
        # A chat turn still gets BM25's passages rather than failing with the provider.
        log.warning("embedding a question failed, using BM25 alone: %s", exc.message)
        return []
    except TimeoutError:
        log.warning("embedding a question took over %gs, using BM25 alone", QUERY_EMBED_SECONDS)
        return []
    return await semantic.vectors.nearest(agent_id, vector, n)


def fuse(rankings: list[list[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: each id scores sum(1 / (k + rank)) over the rankings."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    # Ties keep the first ranking's (BM25's) order: dicts keep insertion order, sort is stable.
    return sorted(scores.items(), key=lambda pair: -pair[1])
