"""What every model provider speaks: requests, normalised stream events, errors, registry.

Providers turn their wire stream into four kinds of events: `TextDelta`, `ToolCall`
(complete, arguments assembled), `Usage` and `Stop`. Failures are `ProviderError`s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import aiohttp
import orjson

from agentsvc import telemetry
from agentsvc.config import ProviderSettings, Settings

log = logging.getLogger(__name__)

# Longest Retry-After honoured before giving up on a provider that asks us to wait.
MAX_RETRY_WAIT_SECONDS = 30.0

# The model id of the built-in model; any other id is `PROVIDER/MODEL`.
BUILTIN = "builtin"


def split_model_id(model_id: str) -> tuple[str, str]:
    """Split `PROVIDER/MODEL` on the first `/` only (model names hold `/` and `:`)."""
    provider, _, model = model_id.partition("/")
    return provider, model


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete tool call; `input` is None when the arguments were not a JSON object."""

    id: str
    name: str
    input: dict[str, Any] | None
    raw_arguments: str = ""


@dataclass(frozen=True, slots=True)
class Message:
    """One entry of the model context (provider-neutral)."""

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_use_id: str = ""  # role "tool": the call answered
    tool_name: str = ""
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class ModelRequest:
    model: str  # the provider's own model name (after `PROVIDER/`)
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    temperature: float = 70.0  # the agent's 0-100 scale
    knowledge: tuple[str, ...] = ()  # texts the builtin model may answer from
    language: str = "english"  # the agent's language: the builtin model's word forms
    # The team's answer to this question: the builtin model gives it word for word.
    curated_answer: str | None = None


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Stop:
    reason: str  # "end_turn", "tool_use", "max_tokens", ...


StreamEvent = TextDelta | ToolCall | Usage | Stop


class ProviderError(Exception):
    """A model call that failed; `code` goes to the client in the stream's error event."""

    def __init__(self, message: str, code: str = "PROVIDER_ERROR"):
        super().__init__(message)
        self.message = message
        self.code = code


class ModelProvider(Protocol):
    """Streams one model call as normalised events."""

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...


def scale_temperature(value: float) -> float:
    """Map the agent's 0-100 onto 0-1 (also for OpenAI, whose 0-2 range we cap at 1)."""
    return max(0.0, min(100.0, value)) / 100.0


def _retry_after(headers: Mapping[str, str], attempt: int) -> float:
    raw = headers.get("Retry-After", "")
    try:
        return min(max(float(raw), 0.0), MAX_RETRY_WAIT_SECONDS)
    except ValueError:
        return min(0.5 * 2**attempt, MAX_RETRY_WAIT_SECONDS)


def _error_message(status: int, body: str) -> str:
    # Providers put a readable message in error.message; keep ours short either way.
    try:
        data = orjson.loads(body)
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict) and error.get("message"):
            return f"provider answered {status}: {error['message']}"[:500]
    except orjson.JSONDecodeError:
        pass
    return f"provider answered {status}: {body.strip()[:300]}"


async def open_stream(
    session: aiohttp.ClientSession,
    settings: ProviderSettings,
    url: str,
    headers: dict[str, str],
    payload: dict[str, Any],
) -> aiohttp.ClientResponse:
    """POST a streaming request, retrying 429/5xx/connection failures before the first byte.

    Retries are bounded by the provider's `max_retries` and honour `Retry-After`. The
    response returned has status 200; the caller must release it.
    """
    timeout = aiohttp.ClientTimeout(total=settings.timeout_seconds, sock_connect=15)
    attempt = 0
    while True:
        try:
            resp = await session.post(url, json=payload, headers=headers, timeout=timeout)
        except (aiohttp.ClientConnectionError, TimeoutError) as exc:
            if attempt >= settings.max_retries:
                reason = str(exc) or type(exc).__name__
                raise ProviderError(f"cannot reach the provider: {reason}") from exc
            await asyncio.sleep(min(0.5 * 2**attempt, MAX_RETRY_WAIT_SECONDS))
            attempt += 1
            continue
        if resp.status == 200:
            return resp
        body = await resp.text(errors="replace")
        resp.release()
        retryable = resp.status == 429 or resp.status >= 500
        if not retryable or attempt >= settings.max_retries:
            code = "RATE_LIMITED" if resp.status == 429 else "PROVIDER_ERROR"
            raise ProviderError(_error_message(resp.status, body), code=code)
        wait = _retry_after(resp.headers, attempt)
        log.info("provider answered %s; retry %s in %.1fs", resp.status, attempt + 1, wait)
        await asyncio.sleep(wait)
        attempt += 1


@dataclass
class Providers:
    """The configured providers, sharing the app's one ClientSession for model calls."""

    settings: Settings
    session: aiohttp.ClientSession
    _cache: dict[str, ModelProvider] = field(default_factory=dict)

    def resolve(self, model_id: str) -> tuple[ModelProvider, str]:
        """Return the provider of `PROVIDER/MODEL` (or `builtin`) and the model name."""
        from agentsvc.llm.builtin import BuiltinModel

        if model_id == BUILTIN:
            key, name = BUILTIN, BUILTIN
        else:
            key, name = split_model_id(model_id)
        provider = self._cache.get(key)
        if provider is None:
            if key == BUILTIN:
                delay = self.settings.chat.builtin_chunk_delay_ms / 1000.0
                provider = telemetry.traced_model(BuiltinModel(chunk_delay=delay), BUILTIN)
            else:
                conf = self.settings.providers.get(key)
                if conf is None or not name:
                    raise ProviderError(f"model {model_id!r} has no configured provider")
                provider = telemetry.traced_model(
                    make_provider(self.session, conf), conf.kind, conf.base_url
                )
            self._cache[key] = provider
        return provider, name


def make_provider(session: aiohttp.ClientSession, conf: ProviderSettings) -> ModelProvider:
    """Build the provider of one `[providers.NAME]` table."""
    if conf.kind == "anthropic":
        from agentsvc.llm.anthropic import AnthropicProvider

        return AnthropicProvider(session, conf)
    from agentsvc.llm.openai import OpenAIProvider

    return OpenAIProvider(session, conf)
