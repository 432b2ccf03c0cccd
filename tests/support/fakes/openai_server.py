"""A fake OpenAI Chat Completions server replaying the literal streaming wire format."""

from __future__ import annotations

from typing import Any

from tests.support.fakes.llm_common import FakeProvider, Reply, sse

MODEL = "gpt-4o-mini"


def chunk(delta: dict[str, Any], finish: str | None = None, usage: bool = True) -> dict:
    """A `chat.completion.chunk` as OpenAI streams it (usage null until the final chunk)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-fake1",
        "object": "chat.completion.chunk",
        "created": 1763769600,
        "model": MODEL,
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage:
        body["usage"] = None
    return body


def usage_chunk(prompt: int, completion: int) -> dict:
    """The final chunk sent with `stream_options.include_usage`: no choices, the usage."""
    return {
        "id": "chatcmpl-fake1",
        "object": "chat.completion.chunk",
        "created": 1763769600,
        "model": MODEL,
        "system_fingerprint": "fp_fake",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def text_events(pieces: list[str], usage: tuple[int, int] | None = (12, 7)) -> list[dict | str]:
    """The events of a plain text answer, `[DONE]` included."""
    events: list[dict | str] = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"content": p}) for p in pieces]
    events.append(chunk({}, finish="stop"))
    if usage:
        events.append(usage_chunk(*usage))
    events.append("[DONE]")
    return events


def running_usage_events(pieces: list[str], prompt: int, per_piece: int) -> list[dict | str]:
    """A text answer from a server that sends a running total of usage with every chunk
    (vLLM's continuous usage stats): only the last total counts."""
    events: list[dict | str] = []
    for n, piece in enumerate(pieces, start=1):
        body = chunk({"content": piece}, usage=False)
        body["usage"] = usage_chunk(prompt, n * per_piece)["usage"]
        events.append(body)
    events.append(usage_chunk(prompt, len(pieces) * per_piece))
    events.append("[DONE]")
    return events


def odd_usage_events(pieces: list[str], usage: dict) -> list[dict | str]:
    """A text answer whose final chunk reports `usage` as given (garbage, say)."""
    final = usage_chunk(0, 0)
    final["usage"] = usage
    return [*[chunk({"content": p}) for p in pieces], chunk({}, finish="stop"), final, "[DONE]"]


def tool_events(
    calls: list[tuple[str, str, list[str]]],
    text: str = "",
    finish: str = "tool_calls",
    interleave: bool = False,
) -> list[dict | str]:
    """Tool calls as OpenAI streams them: the first fragment carries id and name, later
    fragments only `index` and pieces of `arguments`. `interleave` alternates between the
    parallel calls' fragments."""
    events: list[dict | str] = [chunk({"role": "assistant", "content": None})]
    if text:
        events.append(chunk({"content": text}))
    heads = [
        chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
        )
        for i, (call_id, name, _) in enumerate(calls)
    ]
    tails = [
        [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": frag}}]})
            for frag in fragments
        ]
        for i, (_, _, fragments) in enumerate(calls)
    ]
    if interleave:
        events += heads
        longest = max(len(t) for t in tails)
        for j in range(longest):
            events += [t[j] for t in tails if j < len(t)]
    else:
        for head, tail in zip(heads, tails, strict=True):
            events.append(head)
            events += tail
    events.append(chunk({}, finish=finish))
    events.append(usage_chunk(20, 9))
    events.append("[DONE]")
    return events


def encode(events: list[dict | str], crlf: bool = False, space: bool = True) -> bytes:
    """The byte stream of a list of events (`data:` lines only, as OpenAI sends)."""
    return b"".join(sse(e, crlf=crlf, space=space) for e in events)


def stream(events: list[dict | str], **kw: Any) -> Reply:
    """A Reply writing each event in its own write."""
    return Reply(writes=[sse(e) for e in events], **kw)


def rate_limited(retry_after: str = "0") -> Reply:
    return Reply(
        status=429,
        headers={"Retry-After": retry_after},
        body={
            "error": {
                "message": "Rate limit reached for requests",
                "type": "requests",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        },
    )


def server_error(status: int = 500) -> Reply:
    return Reply(
        status=status,
        body={"error": {"message": "The server had an error", "type": "server_error"}},
    )


class FakeOpenAI(FakeProvider):
    """Serves POST /v1/chat/completions."""

    path = "/v1/chat/completions"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"


if __name__ == "__main__":
    # A separate process for the benchmarks, giving every request the same short streamed
    # answer with its usage: python -m tests.support.fakes.openai_server PORT
    import sys

    from aiohttp import web

    fake = FakeOpenAI()
    fake.always = stream(text_events(["We open at nine ", "on Saturdays."], usage=(42, 8)))
    web.run_app(fake.app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
