"""Settings of a test's app: data in a temporary directory, loopback allowed, the
PostgreSQL schema and Redis of the run when the suite runs on that backend."""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from agentsvc.config import Settings, load_settings
from tests.support import pg

PUBLIC_ORIGIN = "http://127.0.0.1:8080"  # the public_url derived from the default listener


def make_settings(tmp_path: Path, **sections: dict[str, Any]) -> Settings:
    """Settings for a test: data in tmp_path, outbound to loopback allowed, plus overrides."""
    overrides: dict[str, Any] = {
        # Port 0 is never listened on here (the test server picks its own); links and the
        # trusted origin stay at the default listener's address.
        "server": {"data_dir": str(tmp_path / "data"), "port": 0, "public_url": PUBLIC_ORIGIN},
        "outbound": {"allow_private": True},
    }
    if pg.SERVER_URL:
        overrides["database"] = {"url": pg.database_url_for(tmp_path)}
        overrides["server"]["secret_key"] = "test-secret-shared-by-every-process"
        overrides["ratelimit"] = {"redis_url": pg.REDIS_URL}
    for name, values in sections.items():
        overrides[name] = {**overrides.get(name, {}), **values}
    return load_settings(None, environ={}, overrides=overrides)


_new_database: list[Path] = []  # this process's new SQLite database, built once


def _built_new_database() -> Path:
    """A new database as the app creates it (its own SqliteDatabase, in a thread of its own:
    the caller may be inside a running event loop), built once per process."""
    if not _new_database:
        from agentsvc.db.sqlite import SqliteDatabase

        folder = Path(tempfile.mkdtemp(prefix="agentsvc-new-db-"))
        atexit.register(shutil.rmtree, folder, True)

        async def build() -> None:
            db = SqliteDatabase(folder / "agentsvc.db")
            await db.open()
            await db.close()

        thread = threading.Thread(target=asyncio.run, args=(build(),))
        thread.start()
        thread.join()
        assert (folder / "agentsvc.db").is_file(), "the new database was not built"
        _new_database.append(folder / "agentsvc.db")
    return _new_database[0]


def with_new_database(settings: Settings) -> Settings:
    """On SQLite, when the data directory does not exist yet, create it as the app would
    (0700, the database file 0600) holding a copy of a new database, built once per process:
    building one from the schema costs about 20 ms of CPU per app started. The app opens it
    as an existing database of the newest version; a test of how the app creates the data
    directory and a new database passes its settings to `make_client` as they are."""
    if settings.database.url or settings.db_path.parent.exists():
        return settings
    new = _built_new_database()
    settings.db_path.parent.mkdir(parents=True, mode=0o700)
    os.chmod(settings.db_path.parent, 0o700)
    shutil.copyfile(new, settings.db_path)
    os.chmod(settings.db_path, 0o600)
    return settings
