"""The built-in offline model: deterministic answers from the agent's own text, and tools.

- When the newest user message is `/tool NAME {json}` (JSON optional) it calls tool NAME
  with that input; once the result is in the context it answers with the tool's output.
- Otherwise it answers with the sentences of the system prompt (and knowledge texts)
  sharing the most words with the question, stop words ignored, or says it found nothing.

The answer streams in several chunks, optionally paced by `[chat] builtin_chunk_delay_ms`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import orjson

from agentsvc.llm.base import (
    Message,
    ModelRequest,
    Stop,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
)
from agentsvc.stopwords import STOP_WORDS

NOTHING_FOUND = "I could not find anything relevant to your question."
MAX_SENTENCES = 3
WORDS_PER_CHUNK = 3


_TOOL_COMMAND = re.compile(r"^\s*/tool\s+([A-Za-z0-9_\-]+)\s*(.*)$", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_BIG_PROMPT_CHARS = 20_000
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)


def words(text: str) -> set[str]:
    """The distinct lower-cased words of a text, stop words removed."""
    return {w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in STOP_WORDS}


def sentences(text: str) -> list[str]:
    """Split text into trimmed, non-empty sentences."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def answer_from_text(question: str, texts: list[str]) -> str:
    """The sentences sharing most words with the question, in their original order."""
    wanted = words(question)
    scored = []
    for position, sentence in enumerate(s for text in texts for s in sentences(text)):
        score = len(wanted & words(sentence))
        if score:
            scored.append((-score, position, sentence))
    if not scored:
        return NOTHING_FOUND
    best = sorted(scored)[:MAX_SENTENCES]
    return " ".join(sentence for _, _, sentence in sorted(best, key=lambda item: item[1]))


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
    texts = [request.system, *request.knowledge]
    return answer_from_text(question, [t for t in texts if t]), None


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
