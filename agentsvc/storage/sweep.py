"""The one sweep of stored folders nothing names any more (a submission deleted with its
agent, an e-mail never recorded, a picture replaced, a document deleted with its agent)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from agentsvc.storage import FileStore

SWEEP_CHUNK = 500  # folder names asked about in one query


async def sweep_folders(
    files: FileStore,
    parent: str,
    grace: float,
    still_used: Callable[[list[str]], Awaitable[set[str]]],
    prefix: str = "",
) -> list[str]:
    """Remove the folders under `parent` ("" or ending in "/") named `prefix`... whose
    newest file is `grace` seconds old or more and that `still_used` does not claim; return
    their names. A young folder may belong to a write under way, so only old ones are
    asked about, a chunk at a time."""
    newest: dict[str, float] = {}
    async for found in files.listing(parent + prefix):
        name, slash, _ = found.key[len(parent) :].partition("/")
        if slash:
            newest[name] = max(newest.get(name, 0.0), found.modified)
    cutoff = time.time() - grace
    names = sorted(n for n, modified in newest.items() if modified <= cutoff)
    gone: list[str] = []
    for i in range(0, len(names), SWEEP_CHUNK):
        chunk = names[i : i + SWEEP_CHUNK]
        used = await still_used(chunk)
        gone += [n for n in chunk if n not in used]
    for name in gone:
        await files.delete_folder(parent + name)
    return gone
