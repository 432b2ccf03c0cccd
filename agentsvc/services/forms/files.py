"""Files of form submissions under `<data_dir>/files/<submissionId>/`, and their cleanup."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from agentsvc.datadir import sweep_folders
from agentsvc.db import Database
from agentsvc.services.forms.values import CheckedForm
from agentsvc.store import submissions as store

log = logging.getLogger(__name__)

FILES_DIR = "files"
# A folder younger than this may belong to a submit whose transaction is still running.
ORPHAN_GRACE_SECONDS = 3600
SWEEP_INTERVAL_SECONDS = 3600


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


async def remove_orphan_files(
    db: Database, data_dir: Path, grace: float = ORPHAN_GRACE_SECONDS
) -> int:
    """Delete the file folders of submissions that no longer exist (deleted with their
    agent); return how many went."""

    async def still_used(names: list[str]) -> set[str]:
        return await store.existing_ids(db.reader, names)

    gone = await sweep_folders(data_dir / FILES_DIR, grace, still_used, prefix="sub_")
    if gone:
        log.info("removed the files of %d deleted submissions", len(gone))
    return len(gone)
