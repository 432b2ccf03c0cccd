"""The OpenAI Chat Completions streaming protocol (OpenAI, Ollama, vLLM, llama.cpp, ...)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson

from agentsvc.config import ProviderSettings
from agentsvc.llm.base import (
    ModelRequest,
    ProviderError,
    Stop,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
    open_stream,
    scale_temperature,
)
from agentsvc.llm.sse import iter_events


def _messages(request: ModelRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for m in request.messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_use_id, "content": m.content})
        elif m.role == "assistant" and m.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": m.content or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": c.raw_arguments or orjson.dumps(c.input).decode(),
                            },
                        }
                        for c in m.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def build_payload(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of a streaming chat completion."""
    payload: dict[str, Any] = {
        "model": request.model,
        "messages": _messages(request),
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": scale_temperature(request.temperature),
    }
    if request.tools:
        payload["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in request.tools
        ]
    return payload


class _Call:
    __slots__ = ("id", "name", "arguments")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []


def _finish_call(call: _Call, position: int) -> ToolCall:
    raw = "".join(call.arguments)
    try:
        parsed = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError:
        parsed = None
    return ToolCall(
        id=call.id or f"call_{position}",
        name=call.name,
        input=parsed if isinstance(parsed, dict) else None,
        raw_arguments=raw,
    )


class OpenAIProvider:
    """Streams `POST {base_url}/chat/completions`."""

    def __init__(self, session: aiohttp.ClientSession, conf: ProviderSettings):
        self._session = session
        self._conf = conf
        self._url = conf.base_url.rstrip("/") + "/chat/completions"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        headers = {"Accept": "text/event-stream"}
        key = self._conf.resolved_api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        resp = await open_stream(
            self._session, self._conf, self._url, headers, build_payload(request)
        )
        try:
            async for event in _parse(resp):
                yield event
        finally:
            resp.release()


async def _parse(resp: aiohttp.ClientResponse) -> AsyncIterator[StreamEvent]:
    calls: dict[int, _Call] = {}
    seen_alias: dict[str, int] = {}
    finish: str | None = None
    done = False
    # The last usage sent counts: OpenAI sends it once, in the final chunk; some servers
    # send a running total with every chunk.
    usage: Usage | None = None
    try:
        async for sse in iter_events(resp.content.iter_any()):
            if sse.data.strip() == "[DONE]":
                done = True
                break
            try:
                chunk = orjson.loads(sse.data)
            except orjson.JSONDecodeError as exc:
                raise ProviderError("provider sent malformed JSON in its stream") from exc
            if not isinstance(chunk, dict):
                continue
            if chunk.get("error"):
                error = chunk["error"]
                text = error.get("message") if isinstance(error, dict) else str(error)
                raise ProviderError(f"provider error: {text}")
            reported = chunk.get("usage")
            if isinstance(reported, dict):
                usage = Usage(reported.get("prompt_tokens"), reported.get("completion_tokens"))
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                text = delta.get("content")
                if text:
                    yield TextDelta(text)
                for position, fragment in enumerate(delta.get("tool_calls") or ()):
                    # Some servers omit `index` when they send each call whole.
                    index = fragment.get("index", len(calls) + position)
                    fresh_id = fragment.get("id")
                    if fresh_id and index in calls and calls[index].id not in ("", fresh_id):
                        # A different id at a used index: a server numbering every call 0.
                        index = max(calls) + 1
                        seen_alias[fresh_id] = index
                    elif fresh_id in seen_alias:
                        index = seen_alias[fresh_id]
                    call = calls.setdefault(index, _Call())
                    call.id = call.id or fragment.get("id") or ""
                    function = fragment.get("function") or {}
                    # A name is sent once, but some servers repeat it: set, never append.
                    call.name = function.get("name") or call.name
                    if function.get("arguments"):
                        call.arguments.append(function["arguments"])
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
    except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError, TimeoutError) as exc:
        reason = str(exc) or type(exc).__name__
        raise ProviderError(f"the provider's stream broke off: {reason}") from exc
    if not done and finish is None:
        raise ProviderError("the provider's stream ended before it finished")
    if usage is not None:
        yield usage
    # Tool calls count even when a server says "stop" alongside them.
    for position, index in enumerate(sorted(calls)):
        yield _finish_call(calls[index], position)
    if calls:
        yield Stop("tool_use")
    else:
        yield Stop({"length": "max_tokens"}.get(finish or "stop", "end_turn"))
