"""Files of form submissions under `<data_dir>/files/<submissionId>/`, and their cleanup."""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from pathlib import Path

from agentsvc.db import Database
from agentsvc.services.forms.values import CheckedForm
from agentsvc.store import submissions as store

log = logging.getLogger(__name__)

FILES_DIR = "files"
# A folder younger than this may belong to a submit whose transaction is still running.
ORPHAN_GRACE_SECONDS = 3600
SWEEP_INTERVAL_SECONDS = 3600
_CHUNK = 500


def write_files(data_dir: Path, sub_id: str, checked: CheckedForm) -> dict[str, str]:
    """Decode the files of a submission to disk, a piece at a time; return field -> path
    relative to data_dir. On any failure (bad base64, full disk) nothing is left behind."""
    if not checked.files:
        return {}
    folder = data_dir / FILES_DIR / sub_id
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    try:
        for upload in checked.files:
            rel = f"{FILES_DIR}/{sub_id}/{upload.field}{upload.extension}"
            with open(data_dir / rel, "wb") as out:
                for piece in upload.chunks():
                    out.write(piece)
            paths[upload.field] = rel
    except BaseException:
        remove_folder(data_dir, sub_id)
        raise
    return paths


def remove_folder(data_dir: Path, sub_id: str) -> None:
    """Remove a submission's folder (its transaction failed, or it is gone)."""
    shutil.rmtree(data_dir / FILES_DIR / sub_id, ignore_errors=True)


def _old_folders(root: Path, grace: float) -> list[str]:
    if not root.is_dir():
        return []
    cutoff = time.time() - grace
    return [
        p.name
        for p in root.iterdir()
        if p.is_dir() and p.name.startswith("sub_") and p.stat().st_mtime <= cutoff
    ]


async def remove_orphan_files(
    db: Database, data_dir: Path, grace: float = ORPHAN_GRACE_SECONDS
) -> int:
    """Delete the file folders of submissions that no longer exist (deleted with their
    agent); return how many went."""
    names = await asyncio.to_thread(_old_folders, data_dir / FILES_DIR, grace)
    gone: list[str] = []
    for i in range(0, len(names), _CHUNK):
        chunk = names[i : i + _CHUNK]
        existing = await store.existing_ids(db.reader, chunk)
        gone += [n for n in chunk if n not in existing]
    for name in gone:
        await asyncio.to_thread(remove_folder, data_dir, name)
    if gone:
        log.info("removed the files of %d deleted submissions", len(gone))
    return len(gone)
