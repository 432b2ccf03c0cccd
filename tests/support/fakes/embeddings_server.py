"""A fake OpenAI-compatible embeddings server: deterministic bag-of-words hashing vectors.

Each word (lower-cased, a few synonyms folded together, stop words dropped) adds 1 to the
dimension its hash picks, so texts sharing words (or synonyms) point the same way:
"money back" lands on the same dimension as "refund", which FTS5 cannot know.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

from agentsvc.stopwords import STOP_WORDS

DIMS = 256
MODEL = "text-embedding-3-small"
SYNONYMS = {
    "money": "refund",
    "back": "refund",
    "refunds": "refund",
    "refunded": "refund",
    "reimbursement": "refund",
    "repay": "refund",
    "cash": "refund",
    "broken": "fault",
    "defective": "fault",
    "faulty": "fault",
    "faults": "fault",
}
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def embed(text: str, dims: int = DIMS) -> list[float]:
    """The fake's embedding of a text (not normalised: the client normalises)."""
    vector = [0.0] * dims
    for word in _WORD.findall(text.lower()):
        if word in STOP_WORDS:
            continue
        word = SYNONYMS.get(word, word)
        slot = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
        vector[slot % dims] += 1.0
    return vector


class FakeEmbeddings:
    """A real aiohttp app on 127.0.0.1 serving `POST /v1/embeddings`.

    `fail_with` makes every request answer that status; `fail_next` only the next n.
    """

    def __init__(self, dims: int = DIMS, delay: float = 0.0) -> None:
        self.dims = dims
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.fail_with: int | None = None
        self.fail_next = 0
        self.server: TestServer | None = None
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_post("/v1/embeddings", self._handle)
        self.app = app

    @property
    def base_url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}/v1"

    async def start(self) -> FakeEmbeddings:
        self.server = TestServer(self.app, host="127.0.0.1")
        await self.server.start_server()
        return self

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()

    def inputs(self) -> list[list[str]]:
        """The `input` lists of the requests received, in order."""
        return [r["json"]["input"] for r in self.requests]

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append({"headers": dict(request.headers), "json": body})
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail_with is not None or self.fail_next:
            self.fail_next = max(0, self.fail_next - 1)
            status = self.fail_with or 503
            error = {"message": "the embedding model is overloaded", "type": "server_error"}
            return web.json_response({"error": error}, status=status)
        if request.headers.get("Authorization") != "Bearer sk-embed":
            error = {"message": "Incorrect API key provided", "type": "invalid_request_error"}
            return web.json_response({"error": error}, status=401)
        texts = body["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": embed(t, self.dims)}
            for i, t in enumerate(texts)
        ]
        # Servers may answer out of order; the index says which text each vector is for.
        data.reverse()
        words = sum(len(t.split()) for t in texts)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": words, "total_tokens": words},
            }
        )


if __name__ == "__main__":
    # A separate process for the benchmark:
    # python -m tests.support.fakes.embeddings_server PORT DIMS
    import sys

    fake = FakeEmbeddings(dims=int(sys.argv[2]))
    web.run_app(fake.app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
