"""Files of form submissions in the file storage, one folder per submission
(`<submissionId>/<field><ext>`), and their cleanup.

A submission records each file as `files/<submissionId>/<field><ext>` (its place under
data_dir before the storage existed, kept so older rows still read): `key_of` turns that
into the storage key.
"""

from __future__ import annotations

import logging

from agentsvc.db import Database
from agentsvc.services.forms.values import CheckedForm
from agentsvc.storage import FileStore
from agentsvc.storage.sweep import sweep_folders
from agentsvc.store import submissions as store

log = logging.getLogger(__name__)

FILES_DIR = "files"
# A folder younger than this may belong to a submit whose transaction is still running.
ORPHAN_GRACE_SECONDS = 3600
SWEEP_INTERVAL_SECONDS = 3600


def key_of(recorded: str) -> str:
    """The storage key of a file as a submission records it (`files/sub_.../cv.pdf`)."""
    return recorded.removeprefix(f"{FILES_DIR}/")


async def write_files(files: FileStore, sub_id: str, checked: CheckedForm) -> dict[str, str]:
    """Decode the files of a submission into the storage, a piece at a time; return field ->
    recorded path. On any failure (bad base64, storage unavailable) nothing is left
    behind."""
    paths = {}
    try:
        for upload in checked.files:
            name = f"{upload.field}{upload.extension}"
            async with files.writer(f"{sub_id}/{name}") as out:
                for piece in upload.chunks():
                    await out.write(piece)
            paths[upload.field] = f"{FILES_DIR}/{sub_id}/{name}"
    except BaseException:
        if paths:
            await remove_folder(files, sub_id)
        raise
    return paths


async def remove_folder(files: FileStore, sub_id: str) -> None:
    """Remove a submission's files (its transaction failed, or it is gone)."""
    await files.delete_folder(sub_id)


async def remove_orphan_files(
    db: Database, files: FileStore, grace: float = ORPHAN_GRACE_SECONDS
) -> int:
    """Delete the files of submissions that no longer exist (deleted with their agent or
    team); return how many submissions' folders went."""

    async def still_used(names: list[str]) -> set[str]:
        return await store.existing_ids(db.reader, names)

    gone = await sweep_folders(files, "", grace, still_used, prefix="sub_")
    if gone:
        log.info("removed the files of %d deleted submissions", len(gone))
    return len(gone)
