"""The Anthropic Messages streaming protocol."""

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

ANTHROPIC_VERSION = "2023-06-01"


def _blocks(request: ModelRequest) -> list[dict[str, Any]]:
    """Messages as content blocks; consecutive turns of one role are merged (the API
    wants user and assistant to alternate; tool results travel in a user turn)."""
    out: list[dict[str, Any]] = []
    for m in request.messages:
        role = "user" if m.role in ("user", "tool") else "assistant"
        blocks: list[dict[str, Any]] = []
        if m.role == "tool":
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": m.tool_use_id,
                    "content": m.content,
                    "is_error": m.is_error,
                }
            )
        else:
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            for c in m.tool_calls:
                blocks.append(
                    {"type": "tool_use", "id": c.id, "name": c.name, "input": c.input or {}}
                )
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def build_payload(request: ModelRequest, max_tokens: int) -> dict[str, Any]:
    """The JSON body of a streaming Messages call."""
    payload: dict[str, Any] = {
        "model": request.model,
        "max_tokens": max_tokens,
        "messages": _blocks(request),
        "stream": True,
        "temperature": scale_temperature(request.temperature),
    }
    if request.system:
        payload["system"] = request.system
    if request.tools:
        payload["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
    return payload


def messages_url(base_url: str) -> str:
    """The Messages endpoint of a base URL given with or without its `/v1`.

    `https://api.anthropic.com/v1` (this service's examples) and `https://api.anthropic.com`
    (the Anthropic SDK's `ANTHROPIC_BASE_URL`, to which the SDK adds `/v1/messages`) both
    give `https://api.anthropic.com/v1/messages`; so does a gateway's prefix either way.
    """
    base = base_url.rstrip("/")
    if base.rsplit("/", 1)[-1].lower() != "v1":
        base += "/v1"
    return base + "/messages"


class AnthropicProvider:
    """Streams `POST {base_url}/v1/messages` (base_url with or without its `/v1`)."""

    def __init__(self, session: aiohttp.ClientSession, conf: ProviderSettings):
        self._session = session
        self._conf = conf
        self._url = messages_url(conf.base_url)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        headers = {
            "Accept": "text/event-stream",
            "anthropic-version": ANTHROPIC_VERSION,
            "x-api-key": self._conf.resolved_api_key(),
        }
        payload = build_payload(request, self._conf.max_tokens)
        resp = await open_stream(self._session, self._conf, self._url, headers, payload)
        try:
            async for event in _parse(resp):
                yield event
        finally:
            resp.release()


async def _parse(resp: aiohttp.ClientResponse) -> AsyncIterator[StreamEvent]:
    tools: dict[int, dict[str, Any]] = {}  # block index -> {id, name, json parts}
    stop_reason = "end_turn"
    input_tokens: int | None = None
    output_tokens: int | None = None
    stopped = False
    try:
        async for sse in iter_events(resp.content.iter_any()):
            try:
                data = orjson.loads(sse.data)
            except orjson.JSONDecodeError as exc:
                raise ProviderError("provider sent malformed JSON in its stream") from exc
            kind = data.get("type", sse.event) if isinstance(data, dict) else sse.event
            if kind == "ping":
                continue
            if kind == "error":
                error = data.get("error") or {}
                raise ProviderError(
                    f"provider error: {error.get('message') or error.get('type') or 'unknown'}",
                    code="RATE_LIMITED"
                    if error.get("type") == "rate_limit_error"
                    else "PROVIDER_ERROR",
                )
            if kind == "message_start":
                usage = (data.get("message") or {}).get("usage") or {}
                input_tokens = _input_tokens(usage, input_tokens)
                output_tokens = usage.get("output_tokens", output_tokens)
            elif kind == "content_block_start":
                block = data.get("content_block") or {}
                if block.get("type") == "tool_use":
                    tools[data["index"]] = {
                        "id": block.get("id", ""),
                        "name": block.get("name", ""),
                        "json": [],
                    }
                elif block.get("type") == "text" and block.get("text"):
                    yield TextDelta(block["text"])
            elif kind == "content_block_delta":
                delta = data.get("delta") or {}
                if delta.get("type") == "text_delta" and delta.get("text"):
                    yield TextDelta(delta["text"])
                elif delta.get("type") == "input_json_delta" and data.get("index") in tools:
                    tools[data["index"]]["json"].append(delta.get("partial_json", ""))
            elif kind == "content_block_stop":
                tool = tools.get(data.get("index"))
                if tool is not None:
                    yield _finish(tool)
            elif kind == "message_delta":
                stop_reason = (data.get("delta") or {}).get("stop_reason") or stop_reason
                usage = data.get("usage") or {}
                output_tokens = usage.get("output_tokens", output_tokens)
                input_tokens = _input_tokens(usage, None) or input_tokens
            elif kind == "message_stop":
                stopped = True
                break
    except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError, TimeoutError) as exc:
        reason = str(exc) or type(exc).__name__
        raise ProviderError(f"the provider's stream broke off: {reason}") from exc
    if not stopped:
        raise ProviderError("the provider's stream ended before it finished")
    if input_tokens is not None or output_tokens is not None:
        yield Usage(input_tokens, output_tokens)
    yield Stop("tool_use" if tools else stop_reason)


# What a message's prompt counts: the tokens read afresh, and those written to and read from
# the prompt cache (each priced as input tokens: a little over what caching bills).
_INPUT_COUNTS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _input_tokens(usage: Any, default: int | None) -> int | None:
    """The input tokens a usage object reports, `default` when it reports none."""
    if not isinstance(usage, dict):
        return default
    counts = [usage.get(k) for k in _INPUT_COUNTS]
    given = [c for c in counts if isinstance(c, int) and not isinstance(c, bool)]
    return sum(given) if given else default


def _finish(tool: dict[str, Any]) -> ToolCall:
    raw = "".join(tool["json"])
    try:
        parsed = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError:
        parsed = None
    return ToolCall(
        id=tool["id"],
        name=tool["name"],
        input=parsed if isinstance(parsed, dict) else None,
        raw_arguments=raw,
    )
