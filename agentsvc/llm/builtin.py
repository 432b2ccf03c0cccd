"""The built-in offline model: deterministic answers from the agent's own text, and tools.

- When the newest user message is `/tool NAME {json}` (JSON optional) it calls tool NAME
  with that input; once the result is in the context it answers with the tool's output.
- Otherwise, with a curated answer to the question (the team's own), it gives it word for
  word.
- Otherwise it answers with the sentences of the system prompt (and knowledge texts)
  sharing the most words with the question, compared by stem in the agent's language
  (rarer words weigh more, stop words ignored), or says it found nothing.

The answer streams in several chunks, optionally paced by `[chat] builtin_chunk_delay_ms`.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator
from functools import lru_cache

import orjson

from agentsvc.language import DEFAULT_LANGUAGE, stems
from agentsvc.llm.base import (
    Message,
    ModelRequest,
    Stop,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
)

NOTHING_FOUND = "I could not find anything relevant to your question."
MAX_SENTENCES = 3
# A further sentence joins the answer when the question words it adds (that the sentences
# picked so far lack) weigh at least this share of the best sentence's score.
ADDS_ENOUGH = 0.5
# System prompts and passages kept split and stemmed: a 100 kB prompt takes ~0.6 MB.
ANALYSED_TEXTS = 64
MAX_QUESTION_WORDS = 64  # distinct words of a question that count
WORDS_PER_CHUNK = 3


_TOOL_COMMAND = re.compile(r"^\s*/tool\s+([A-Za-z0-9_\-]+)\s*(.*)$", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LINE_BREAKS = re.compile(r"\n+")
_ABBREVIATIONS = frozenset("dr mr mrs ms prof st mt jr sr vs nr approx dept".split())
_BIG_PROMPT_CHARS = 20_000


def words(text: str, language: str = DEFAULT_LANGUAGE) -> frozenset[str]:
    """The distinct stems of a text's words in the language, stop words removed."""
    return stems(text, language)


def sentences(text: str) -> list[str]:
    """Split text into trimmed, non-empty sentences (not after "Dr." or an initial)."""
    out: list[str] = []
    for line in _LINE_BREAKS.split(text):
        pending = ""
        for piece in _SENTENCE_END.split(line):
            pending = f"{pending} {piece}" if pending else piece
            last = pending.rsplit(None, 1)[-1].lower() if pending.strip() else ""
            if last.endswith(".") and _is_abbreviation(last[:-1]):
                continue
            if pending.strip():
                out.append(pending.strip())
            pending = ""
        if pending.strip():
            out.append(pending.strip())
    return out


def _is_abbreviation(word: str) -> bool:
    # "J." and "e.g." (letters and dots) or a title such as "Dr." do not end a sentence.
    return word in _ABBREVIATIONS or (
        0 < len(word) <= 3 and word.replace(".", "").isalpha() and (len(word) == 1 or "." in word)
    )


@lru_cache(maxsize=ANALYSED_TEXTS)
def _analysed(text: str, language: str) -> tuple[tuple[str, frozenset[str]], ...]:
    # The system prompt is the same on every turn of an agent: split and stem it once.
    return tuple((s, words(s, language)) for s in sentences(text))


def answer_from_text(question: str, texts: list[str], language: str = DEFAULT_LANGUAGE) -> str:
    """The sentences that best share the question's words, the best first.

    Words are compared by stem in the agent's language ("ships" finds "shipping"). A shared
    word counts more the fewer sentences have it (log(1 + n / df), n sentences), so a word
    every sentence repeats decides little. The best sentence comes first, then sentences
    that tie with it, then those that add enough words the answer lacks so far (a question
    about two things gets both), up to MAX_SENTENCES.
    """
    wanted = stems(question, language, MAX_QUESTION_WORDS)
    if not wanted:
        return NOTHING_FOUND
    seen: dict[str, frozenset[str]] = {}
    for text in texts:
        for sentence, found in _analysed(text, language):
            # Overlapping knowledge passages repeat sentences: each counts once.
            seen.setdefault(sentence, found)
    df: dict[str, int] = {}
    for found in seen.values():
        for w in wanted & found:
            df[w] = df.get(w, 0) + 1
    if not df:
        return NOTHING_FOUND
    weight = {w: math.log(1 + len(seen) / n) for w, n in df.items()}
    scored = []
    for position, (sentence, found) in enumerate(seen.items()):
        shared = wanted & found
        if shared:
            # Ties go to longer shared words (more specific: "paypal" over "pay"), then
            # to the earlier sentence.
            specific = sum(len(w) for w in shared)
            scored.append((-sum(weight[w] for w in shared), -specific, position, sentence, shared))
    scored.sort(key=lambda item: item[:3])
    best = -scored[0][0]
    picked = [scored[0][3]]
    covered = set(scored[0][4])
    for negative, _, _, sentence, shared in scored[1:]:
        if len(picked) == MAX_SENTENCES:
            break
        ties = -negative >= best - 1e-9
        if ties or sum(weight[w] for w in shared - covered) >= best * ADDS_ENOUGH:
            picked.append(sentence)
            covered |= shared
    return " ".join(picked)


def parse_tool_command(text: str) -> tuple[str, dict | None] | None:
    """`/tool NAME {json}` → (NAME, input); input is None when the JSON is not an object."""
    match = _TOOL_COMMAND.match(text)
    if not match:
        return None
    name, raw = match.group(1), match.group(2).strip()
    if not raw:
        return name, {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return name, None
    return name, value if isinstance(value, dict) else None


def _arguments_text(tool_input: dict | None) -> str:
    try:
        return "" if tool_input is None else orjson.dumps(tool_input).decode()
    except TypeError:  # nests deeper than orjson writes; the chat loop refuses such input
        return ""


def chunks(text: str) -> list[str]:
    """Split an answer into several pieces that concatenate back to it."""
    pieces = re.findall(r"\S+\s*", text)
    out = ["".join(pieces[i : i + WORDS_PER_CHUNK]) for i in range(0, len(pieces), WORDS_PER_CHUNK)]
    if len(out) == 1 and len(text) > 1:
        half = len(text) // 2
        out = [text[:half], text[half:]]
    return out or [text]


def _reply(request: ModelRequest) -> tuple[str, ToolCall | None]:
    messages = list(request.messages)
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    question = messages[last_user].content if last_user >= 0 else ""
    after: list[Message] = messages[last_user + 1 :]
    command = parse_tool_command(question)
    if command is not None:
        name, tool_input = command
        results = [m for m in after if m.role == "tool"]
        if results:
            # The loop has run the tool: answer with what it returned.
            lines = []
            for r in results:
                verb = "failed" if r.is_error else "returned"
                lines.append(f"The tool {r.tool_name} {verb}: {r.content}")
            return "\n".join(lines), None
        if request.tools:
            number = sum(1 for m in messages if m.role == "tool") + 1
            return "", ToolCall(
                f"toolu_builtin_{number}", name, tool_input, _arguments_text(tool_input)
            )
        return f"The tool {name} is not available right now.", None
    if request.curated_answer is not None:
        return request.curated_answer, None
    texts = [request.system, *request.knowledge]
    return answer_from_text(question, [t for t in texts if t], request.language), None


class BuiltinModel:
    """A ModelProvider that needs no network."""

    def __init__(self, chunk_delay: float = 0.0):
        self._delay = chunk_delay

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if sum(len(m.content) for m in request.messages) > _BIG_PROMPT_CHARS:
            # Word scoring is linear but takes tens of ms on a 100,000-character message.
            text, call = await asyncio.to_thread(_reply, request)
        else:
            text, call = _reply(request)
        prompt_words = sum(len(m.content.split()) for m in request.messages)
        if call is not None:
            yield Usage(prompt_words, 1)
            yield call
            yield Stop("tool_use")
            return
        for position, piece in enumerate(chunks(text)):
            if position:
                # Paced between chunks only, so the first one is never delayed; with no
                # delay, still let other streams run between chunks.
                await asyncio.sleep(self._delay)
            yield TextDelta(piece)
        yield Usage(prompt_words, len(text.split()))
        yield Stop("end_turn")
