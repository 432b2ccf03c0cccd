"""The hourly sweep of stored files nothing names any more: the files of submissions, the
pictures and the uploaded documents deleted with their agent, team or user (the database
deletes their rows by cascade, and knows nothing of the storage), and, in the database's
store, the chunks of uploads cut off half-way.

Once for all the processes of a shared database (the storage is shared then too); a folder
younger than an hour is left alone, as it may belong to a write whose row is not committed
yet.
"""

from __future__ import annotations

import logging

from agentsvc.db import Database
from agentsvc.services.forms.files import ORPHAN_GRACE_SECONDS, remove_orphan_files
from agentsvc.storage import FileStore
from agentsvc.storage.sweep import sweep_folders
from agentsvc.store import avatars as avatars_store
from agentsvc.store import documents as documents_store

log = logging.getLogger(__name__)

AVATARS = "avatars"  # avatars/<avatarId>/image
DOCUMENTS = "documents"  # documents/<documentId>/original


async def sweep_files(db: Database, files: FileStore, grace: float = ORPHAN_GRACE_SECONDS) -> int:
    """Delete the stored files whose submission, picture or document is gone; return how
    many folders went."""
    gone = await remove_orphan_files(db, files, grace)
    for parent, existing in (
        (AVATARS, avatars_store.existing_ids),
        (DOCUMENTS, documents_store.existing_ids),
    ):

        async def still_used(names: list[str], existing=existing) -> set[str]:
            return await existing(db.reader, names)

        swept = await sweep_folders(files, f"{parent}/", grace, still_used)
        if swept:
            log.info("removed the files of %d deleted %s", len(swept), parent)
        gone += len(swept)
    remove_unclaimed = getattr(files, "remove_unclaimed", None)
    if remove_unclaimed is not None:  # the database's store: uploads cut off half-way
        await remove_unclaimed(grace)
    return gone
