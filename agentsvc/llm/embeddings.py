"""The OpenAI-compatible embeddings API (`POST {base_url}/embeddings`) for knowledge passages."""

from __future__ import annotations

from collections.abc import Sequence

import aiohttp
import numpy as np
import orjson

from agentsvc.config import ProviderSettings, Settings
from agentsvc.llm.base import ProviderError, open_stream, split_model_id

# Longest text sent for one passage or question (characters); servers cap their input in
# tokens, and a passage is a few hundred words, so this only guards against odd documents.
MAX_INPUT_CHARS = 8000


class Embedder:
    """Embeds texts in batches with one provider's model, on the providers' ClientSession.

    Vectors come back as float32 rows normalised to unit length, so a dot product is the
    cosine similarity. 429, 5xx and connection failures are retried like chat calls (the
    provider's `max_retries`, honouring Retry-After); anything else is a `ProviderError`.
    """

    def __init__(
        self,
        session: aiohttp.ClientSession,
        conf: ProviderSettings,
        model: str,
        batch_size: int,
        model_id: str = "",
    ):
        self._session = session
        self._conf = conf
        self._url = conf.base_url.rstrip("/") + "/embeddings"
        self.model = model
        self.model_id = model_id or model
        self.batch_size = batch_size

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one unit-length float32 row per text, in order (shape `(len(texts), dims)`)."""
        rows: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            rows.append(await self._batch(texts[start : start + self.batch_size]))
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        if len({r.shape[1] for r in rows}) > 1:
            raise ProviderError("embedding provider returned vectors of different sizes")
        return np.vstack(rows)

    async def _batch(self, texts: Sequence[str]) -> np.ndarray:
        headers = {"Accept": "application/json"}
        key = self._conf.resolved_api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        # An empty string is refused by some servers; a space embeds as "nothing".
        inputs = [t[:MAX_INPUT_CHARS] or " " for t in texts]
        payload = {"model": self.model, "input": inputs, "encoding_format": "float"}
        try:
            resp = await open_stream(self._session, self._conf, self._url, headers, payload)
        except ProviderError as exc:
            raise ProviderError(f"embedding provider: {exc.message}", exc.code) from exc
        try:
            body = await resp.read()
        except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError, TimeoutError) as exc:
            raise ProviderError(f"embedding provider: the answer broke off: {exc}") from exc
        finally:
            resp.release()
        return normalise(parse(body, len(inputs)))


def parse(body: bytes, expected: int) -> np.ndarray:
    """The vectors of an embeddings answer, ordered by their `index`; ProviderError if bad."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ProviderError("embedding provider answered with malformed JSON") from exc
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) != expected:
        got = len(items) if isinstance(items, list) else "no"
        raise ProviderError(f"embedding provider returned {got} vectors for {expected} texts")
    ordered: list[list[float] | None] = [None] * expected
    for position, item in enumerate(items):
        index = item.get("index", position) if isinstance(item, dict) else None
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(index, int) or not 0 <= index < expected or not isinstance(vector, list):
            raise ProviderError("embedding provider returned an item without index or vector")
        ordered[index] = vector
    if any(v is None for v in ordered):
        raise ProviderError("embedding provider returned the same index twice")
    if len({len(v) for v in ordered if v is not None}) != 1:
        raise ProviderError("embedding provider returned vectors of different sizes")
    try:
        matrix = np.asarray(ordered, dtype=np.float32)
    except (ValueError, TypeError) as exc:
        raise ProviderError("embedding provider returned vectors that are not numbers") from exc
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise ProviderError("embedding provider returned vectors of different sizes")
    if not np.isfinite(matrix).all():
        raise ProviderError("embedding provider returned vectors with non-finite numbers")
    return matrix


def normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero and match nothing)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


def make_embedder(settings: Settings, session: aiohttp.ClientSession) -> Embedder | None:
    """The embedder of `[knowledge] embedding_model`, or None when embeddings are off."""
    model_id = settings.knowledge.embedding_model
    if not model_id:
        return None
    provider, model = split_model_id(model_id)
    # load_settings checked the provider exists and is `openai`-kind.
    conf = settings.providers[provider]
    return Embedder(session, conf, model, settings.knowledge.embedding_batch_size, model_id)
