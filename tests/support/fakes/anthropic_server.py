"""A fake Anthropic Messages server replaying the literal streaming wire format."""

from __future__ import annotations

from typing import Any

from tests.support.fakes.llm_common import FakeProvider, Reply, sse

MODEL = "claude-fake-1"


def message_start(input_tokens: int = 25, **cache: int) -> tuple[str, dict]:
    """`cache`: cache_creation_input_tokens and cache_read_input_tokens, when given."""
    return (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_fake01",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": 1, **cache},
            },
        },
    )


def text_block(index: int, pieces: list[str]) -> list[tuple[str, dict]]:
    events = [
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    events += [
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": p},
            },
        )
        for p in pieces
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def tool_block(index: int, tool_id: str, name: str, fragments: list[str]) -> list[tuple[str, dict]]:
    events = [
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}},
            },
        )
    ]
    events += [
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": f},
            },
        )
        for f in fragments
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def ending(stop_reason: str = "end_turn", output_tokens: int = 15) -> list[tuple[str, dict]]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def text_events(pieces: list[str], **cache: int) -> list[tuple[str, dict]]:
    return [message_start(**cache), *text_block(0, pieces), *ending()]


def tool_events(calls: list[tuple[str, str, list[str]]], text: str = "") -> list[tuple[str, dict]]:
    events = [message_start()]
    index = 0
    if text:
        events += text_block(0, [text])
        index = 1
    for offset, (tool_id, name, fragments) in enumerate(calls):
        events += tool_block(index + offset, tool_id, name, fragments)
    return events + ending("tool_use", 40)


def error_event(kind: str = "overloaded_error", message: str = "Overloaded") -> tuple[str, dict]:
    return ("error", {"type": "error", "error": {"type": kind, "message": message}})


def encode(events: list[tuple[str, dict]], crlf: bool = False, space: bool = True) -> bytes:
    return b"".join(sse(data, event=name, crlf=crlf, space=space) for name, data in events)


def stream(events: list[tuple[str, dict]], **kw: Any) -> Reply:
    return Reply(writes=[sse(data, event=name) for name, data in events], **kw)


def rate_limited(retry_after: str = "0") -> Reply:
    return Reply(
        status=429,
        headers={"Retry-After": retry_after},
        body={"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}},
    )


def overloaded() -> Reply:
    return Reply(
        status=529,
        body={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )


class FakeAnthropic(FakeProvider):
    """Serves POST /v1/messages."""

    path = "/v1/messages"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"
