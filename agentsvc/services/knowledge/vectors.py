"""Nearest passages to a query embedding: sqlite-vec when it can be loaded, else numpy.

sqlite-vec is a SQLite extension, and Python's stdlib `sqlite3` can load extensions only
when it was built with them enabled; many builds (pyenv's and python.org's macOS ones among
them) lack `Connection.enable_load_extension`. So `VectorIndex` picks its path at start:

- `sqlite-vec`: the database's `vector_reader()` (a connection with the extension loaded)
  ranks the agent's stored vectors with `vec_distance_cosine` inside SQLite;
- `numpy`: the agent's vectors are read once into a float32 matrix kept in memory (an LRU
  bounded in bytes) and ranked by a dot product (vectors are unit length, so this is the
  cosine similarity). Every write of an agent's vectors or documents invalidates its entry.

Both rank only `ready` documents' passages embedded by the configured model.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, OrderedDict
from dataclasses import dataclass

import numpy as np

from agentsvc.db import Database, Tx, VectorSearchUnavailable
from agentsvc.llm.embeddings import Embedder
from agentsvc.store import documents as store

log = logging.getLogger(__name__)

# Matrices larger than this (floats; ~0.5 ms of work) are ranked on a worker thread, off
# the event loop. Below it the hop to a thread costs more than it saves.
OFF_LOOP_FLOATS = 4_000_000
# Memory the numpy path may keep for agents' vectors.
MAX_CACHE_BYTES = 256 * 2**20


def to_blob(vector: np.ndarray) -> bytes:
    """A vector as sqlite-vec's BLOB format: float32, little-endian."""
    return np.asarray(vector, dtype="<f4").tobytes()


@dataclass(frozen=True, slots=True)
class Semantic:
    """Embeddings are on: the embedder of passages and questions, and the vector index."""

    embedder: Embedder
    vectors: VectorIndex


@dataclass(frozen=True, slots=True)
class _Entry:
    ids: np.ndarray  # int64 passage ids, one per row
    matrix: np.ndarray  # (rows, dims) float32, unit rows
    nbytes: int


class VectorIndex:
    """Ranks an agent's passages by cosine similarity to a query vector."""

    def __init__(self, db: Database, model: str, *, path: str = "auto"):
        self._db = db
        self._model = model
        self._path = path  # auto, numpy or sqlite-vec (`[knowledge] vector_search`)
        self._in_db: Tx | None = None  # reads ranking inside the database (sqlite-vec)
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._cached_bytes = 0
        # Bumped by each invalidation, so a load that raced a write is not cached.
        self._generation: dict[str, int] = {}
        self.mode = "numpy"

    async def open(self) -> None:
        """Rank inside the database (sqlite-vec) when it can; else use numpy."""
        if self._path == "numpy":
            log.info("vector search: numpy (as configured)")
            return
        try:
            self._in_db = await self._db.vector_reader()
        except VectorSearchUnavailable as exc:  # the database says why it cannot
            if self._path == "sqlite-vec":
                raise RuntimeError(
                    f"knowledge.vector_search is 'sqlite-vec' but it cannot be used: {exc}"
                ) from exc
            log.info("vector search: numpy (%s)", exc)
            return
        self.mode = "sqlite-vec"
        log.info("vector search: sqlite-vec")

    async def close(self) -> None:
        """Drop the cache (the database closes its own connections)."""
        self._in_db = None
        self._cache.clear()
        self._cached_bytes = 0

    def invalidate_all(self) -> None:
        """Forget every cached agent's vectors (changes may have been missed)."""
        for agent_id in list(self._cache):
            self.invalidate(agent_id)

    def invalidate(self, agent_id: str) -> None:
        """Forget an agent's cached vectors (after any write to its passages or documents)."""
        self._generation[agent_id] = self._generation.get(agent_id, 0) + 1
        entry = self._cache.pop(agent_id, None)
        if entry is not None:
            self._cached_bytes -= entry.nbytes

    async def nearest(self, agent_id: str, query: np.ndarray, n: int) -> list[int]:
        """Passage ids of the agent's n passages most similar to `query`, best first."""
        if n <= 0:
            return []
        if self._in_db is not None:
            dims = int(query.shape[0])
            return await store.vec_search(
                self._in_db, agent_id, self._model, to_blob(query), dims, n
            )
        entry = await self._entry(agent_id)
        if entry is None or entry.matrix.shape[1] != query.shape[0]:
            return []
        if entry.matrix.size > OFF_LOOP_FLOATS:
            return await asyncio.to_thread(_top, entry, query, n)
        return _top(entry, query, n)

    async def _entry(self, agent_id: str) -> _Entry | None:
        entry = self._cache.get(agent_id)
        if entry is not None:
            self._cache.move_to_end(agent_id)
            return entry
        generation = self._generation.get(agent_id, 0)
        rows = await store.ready_vectors(self._db.reader, agent_id, self._model)
        if not rows:
            return None
        entry = await asyncio.to_thread(_build, rows) if len(rows) > 2000 else _build(rows)
        if self._generation.get(agent_id, 0) == generation and agent_id not in self._cache:
            self._cache[agent_id] = entry
            self._cached_bytes += entry.nbytes
            while self._cached_bytes > MAX_CACHE_BYTES and len(self._cache) > 1:
                _, old = self._cache.popitem(last=False)
                self._cached_bytes -= old.nbytes
        return entry


def _build(rows: list[tuple[int, int, bytes]]) -> _Entry:
    # One model gives one size; rows of another size (a corrupt write) are left out.
    dims = Counter(d for _, d, _ in rows).most_common(1)[0][0]
    kept = [(pid, blob) for pid, d, blob in rows if d == dims and len(blob) == 4 * dims]
    ids = np.fromiter((pid for pid, _ in kept), dtype=np.int64, count=len(kept))
    matrix = np.frombuffer(b"".join(blob for _, blob in kept), dtype="<f4").reshape(-1, dims)
    return _Entry(ids, matrix, ids.nbytes + matrix.nbytes)


def _top(entry: _Entry, query: np.ndarray, n: int) -> list[int]:
    # einsum's own loop, not BLAS: a BLAS matrix-vector product wakes a pool of threads,
    # which is faster on an idle machine but gives 10 ms+ tails on a busy one.
    scores = np.einsum("ij,j->i", entry.matrix, query.astype(np.float32, copy=False))
    if n < len(scores):
        picked = np.argpartition(-scores, n - 1)[:n]
        order = picked[np.argsort(-scores[picked], kind="stable")]
    else:
        order = np.argsort(-scores, kind="stable")
    return [int(i) for i in entry.ids[order]]
