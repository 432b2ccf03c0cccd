"""The bytes of every stream on the wire: the GET event streams (aiohttp-sse) and POST /chat
share one framing and one set of headers (api/sse.py)."""

from __future__ import annotations

import asyncio

import orjson

from tests.support.accounts import bearer, new_api_key
from tests.support.chat import user
from tests.support.live import VISITOR_SESSION, handoff_agent, visitor_conversation

HEADERS = [
    b"Content-Type: text/event-stream; charset=utf-8",
    b"Cache-Control: no-cache",
    b"X-Accel-Buffering: no",
]


async def raw_exchange(client, request: bytes, seconds: float) -> tuple[list[bytes], bytes]:
    """Send one raw HTTP/1.1 request; the response's header lines and its de-chunked body."""
    reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    writer.write(request)
    raw = b""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while not raw.endswith(b"\r\n0\r\n\r\n") and (left := end - loop.time()) > 0:
        try:
            chunk = await asyncio.wait_for(reader.read(65536), left)
        except TimeoutError:
            break
        if not chunk:
            break
        raw += chunk
    writer.close()
    head, _, chunked = raw.partition(b"\r\n\r\n")
    body = b""
    while chunked:
        size, _, rest = chunked.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            break
        body, chunked = body + rest[:n], rest[n + 2 :]
    return head.split(b"\r\n"), body


def get(client, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"GET {path} HTTP/1.1", f"Host: {client.server.host}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def assert_stream_headers(head: list[bytes]) -> None:
    assert head[0] == b"HTTP/1.1 200 OK"
    assert [line for line in head if line in HEADERS] == HEADERS
    assert b"Transfer-Encoding: chunked" in head
    assert not [line for line in head if line.lower().startswith(b"connection:")]


async def test_event_streams_keep_their_headers_and_framing_on_aiohttp_sse(make_client):
    client = await make_client(handoff={"keepalive_seconds": 0.2, "max_stream_seconds": 0.7})
    auth = bearer(await new_api_key(client))
    agent = await handoff_agent(client, auth)
    conv_id = await visitor_conversation(client, agent["id"])

    visitor = {"X-Session-Id": VISITOR_SESSION, "Last-Event-ID": "1"}
    path = f"/api/v1/conversations/{conv_id}/events"
    head, body = await raw_exchange(client, get(client, path, visitor), 5.0)
    assert_stream_headers(head)
    assert b"Access-Control-Allow-Origin: *" in head
    status = orjson.dumps(
        {"type": "status", "conversationId": conv_id, "status": "bot", "assignee": None}
    )
    # The reconnection delay, the current status (no id), then the log after event 1.
    assert body.startswith(b"retry: 2000\n\nevent: status\ndata: " + status + b"\n\nid: 2\n")
    events = body.split(b"\n\n")
    assert b"event: message" in events[2].split(b"\n")
    # The library's ping comments keep the idle stream open; the stream ends at its time.
    assert b": ping" in events[3:]
    assert body.endswith(b"\n\n")

    head, body = await raw_exchange(client, get(client, "/api/v1/inbox/events", auth), 5.0)
    assert_stream_headers(head)
    assert body.startswith(b"retry: 2000\n\n: ping\n\n")


async def test_the_chat_stream_uses_the_same_headers_and_framing(make_client):
    client = await make_client()
    auth = bearer(await new_api_key(client))
    agent = await handoff_agent(client, auth)
    body = orjson.dumps({"agentId": agent["id"], "messages": user("hello")})
    request = (
        b"POST /api/v1/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    ) + body
    head, stream = await raw_exchange(client, request, 5.0)
    assert_stream_headers(head)
    assert stream.startswith(b"event: message_start\ndata: {")
    assert stream.endswith(b'event: message_stop\ndata: {"type":"message_stop","sources":[]}\n\n')
