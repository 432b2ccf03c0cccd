"""Which curated answer, if any, answers a visitor's question.

Questions are compared by the stems of their words in the agent's language, common words
left out (the builtin model's and the knowledge retrieval's normalisation: "resetting
passwords" and "How do I reset my password?" are both {reset, password}). The score is the
Dice coefficient of the two sets, 2|A∩B| / (|A| + |B|): 1 for the same words, 0.8 when the
visitor adds one word to a two-word question, 0.5 when one of two words differs ("reset my
router" against "reset my password"). A curated answer is used at `threshold` (0.8 by
default) or above, the best one first (ties: the newest); below it the question goes to the
model as usual. The bar is high on purpose: a curated answer is given word for word, and a
wrong one is worse than none.

Each agent's answers are read once and kept with their stems (`CuratedAnswers`); a change
announces `changes.answers(agent_id)` and every process forgets that agent's entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentsvc.db import Database
from agentsvc.language import stems
from agentsvc.store import answers as store

MAX_QUESTION_WORDS = 64  # distinct words of a question that count (as the builtin model)
# A message this long is not a question a curated one (at most 1,000 characters) answers:
# it is not even looked at.
MAX_MATCHED_CHARS = 4_000
QUESTION_KEY_CHARS = 300
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def question_key(text: str) -> str:
    """A question's words lower-cased, one space apart: what makes two questions the same."""
    return " ".join(_WORD.findall(text.lower()))[:QUESTION_KEY_CHARS]


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """The Dice coefficient of two sets of stems (0 when either is empty)."""
    if not a or not b:
        return 0.0
    return 2 * len(a & b) / (len(a) + len(b))


@dataclass(frozen=True, slots=True)
class CuratedMatch:
    """The curated answer given for a question, and how close the questions were."""

    answer_id: str
    question: str
    answer: str
    score: float


@dataclass(frozen=True, slots=True)
class _Entry:
    language: str
    answers: tuple[tuple[str, str, str, frozenset[str]], ...]  # id, question, answer, stems
    index: dict[str, tuple[int, ...]]  # stem -> positions of the answers that have it
    chars: int  # the text it holds


def _entry(language: str, rows: list[store.CuratedAnswer]) -> _Entry:
    answers = tuple(
        (r.id, r.question, r.answer, stems(r.question, language, MAX_QUESTION_WORDS)) for r in rows
    )
    index: dict[str, list[int]] = {}
    for position, (_, _, _, found) in enumerate(answers):
        for stem in found:
            index.setdefault(stem, []).append(position)
    chars = sum(len(r.question) + len(r.answer) for r in rows)
    return _Entry(language, answers, {k: tuple(v) for k, v in index.items()}, chars)


class CuratedAnswers:
    """Each agent's curated answers with their stems, read once, forgotten on a change.

    Bounded by the text it holds (`max_chars`, 32 million characters by default): past it
    the cache starts again empty (a miss costs one read of an agent's answers).
    """

    def __init__(self, threshold: float, max_chars: int = 32_000_000):
        self.threshold = threshold
        self._max_chars = max_chars
        self._chars = 0
        self._entries: dict[str, _Entry] = {}
        # Bumped by `forget`: an entry read before a change is not kept after it.
        self._generation: dict[str, int] = {}

    def forget(self, agent_id: str) -> None:
        """Drop an agent's answers (they changed, or the agent did)."""
        dropped = self._entries.pop(agent_id, None)
        if dropped is not None:
            self._chars -= dropped.chars
        self._generation[agent_id] = self._generation.get(agent_id, 0) + 1

    def clear(self) -> None:
        """Drop every agent's answers."""
        for agent_id in list(self._generation):
            self._generation[agent_id] += 1
        self._entries.clear()
        self._chars = 0

    async def _load(self, db: Database, agent_id: str, language: str) -> _Entry:
        entry = self._entries.get(agent_id)
        if entry is not None and entry.language == language:
            return entry
        generation = self._generation.get(agent_id, 0)
        rows = await store.list_for_agent(db.reader, agent_id)
        entry = _entry(language, rows)
        if self._generation.get(agent_id, 0) == generation:
            replaced = self._entries.pop(agent_id, None)
            if replaced is not None:
                self._chars -= replaced.chars
            if self._chars + entry.chars > self._max_chars:
                self._entries.clear()
                self._chars = 0
            self._entries[agent_id] = entry
            self._chars += entry.chars
        return entry

    async def match(
        self, db: Database, agent_id: str, question: str, language: str
    ) -> CuratedMatch | None:
        """The curated answer for the question, or None when none is close enough."""
        if len(question) > MAX_MATCHED_CHARS:
            return None
        entry = await self._load(db, agent_id, language)
        if not entry.answers:
            return None
        wanted = stems(question, language, MAX_QUESTION_WORDS)
        candidates = {p for stem in wanted for p in entry.index.get(stem, ())}
        best: tuple[float, int] | None = None
        for position in candidates:
            score = similarity(wanted, entry.answers[position][3])
            # Rows are newest first: on a tie the earlier position (newer answer) stays.
            if score >= self.threshold and (best is None or (score, -position) > best):
                best = (score, -position)
        if best is None:
            return None
        answer_id, text, answer, _ = entry.answers[-best[1]]
        return CuratedMatch(answer_id, text, answer, round(best[0], 3))
