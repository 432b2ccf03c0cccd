"""Issue 37 item 3: a database of EVERY earlier schema version, holding a shop's data,
upgrades to the newest and the API answers as it did before (agents, knowledge, tools,
conversations and their messages, submissions, triggers, the team and its keys,
analytics...), but for what that version could not hold (upgrade_shop.SINCE), with a
backup of the old database taken first.

The data is written once per process through the API of the newest version and taken
back to each version (tests/support/upgrade_shop.py says how and why); each version is a
test of its own, so a run on several workers shares them out."""

from __future__ import annotations

import shutil

import pytest

from agentsvc.app import create_app
from agentsvc.db.backups import version_in_name
from agentsvc.db.migrations import FIRST_POSTGRES_VERSION, schema_version
from tests.support import pg, upgrade_shop
from tests.support.cli import run
from tests.support.settings import make_settings
from tests.support.upgrades import config, postgres_at, postgres_contents, sqlite_contents


@pytest.fixture(scope="module")
def newest_sqlite(tmp_path_factory):
    if pg.SERVER_URL:
        pytest.skip("the SQLite ladder runs on the SQLite pass")
    folder = tmp_path_factory.mktemp("newest")
    return upgrade_shop.build_newest(make_settings(folder))


@pytest.fixture(scope="module")
def newest_postgres(tmp_path_factory):
    if not pg.SERVER_URL:
        pytest.skip("needs the test PostgreSQL")
    folder = tmp_path_factory.mktemp("newest")
    # A database of its own: pg_dump (the backup) and CREATE DATABASE ... TEMPLATE take one.
    settings = make_settings(folder, database={"url": pg.fresh_real_database_url()})
    return upgrade_shop.build_newest(settings)


async def _upgraded_answers(aiohttp_client, settings, shop) -> dict:
    client = await aiohttp_client(create_app(settings))
    try:
        return await upgrade_shop.answers(client, shop)
    finally:
        await client.close()


def _backups(settings) -> list[int | None]:
    return [version_in_name(p) for p in sorted((settings.server.data_dir / "backups").iterdir())]


@pytest.mark.parametrize("version", range(1, schema_version()))
async def test_a_sqlite_database_of_an_earlier_version_answers_the_same(
    aiohttp_client, tmp_path, newest_sqlite, version
):
    settings = make_settings(tmp_path)
    data_dir = settings.server.data_dir
    data_dir.mkdir(mode=0o700)
    # The data directory's key opens the sealed secrets: an upgrade keeps it.
    shutil.copy(newest_sqlite.settings.server.data_dir / "secret.key", data_dir / "secret.key")
    left_out = upgrade_shop.sqlite_at(newest_sqlite.settings.db_path, settings.db_path, version)
    # Only rows of what that version did not have: a desk note's event (version 13).
    assert set(left_out) <= ({"conversation_events"} if version < 13 else set())

    after = await _upgraded_answers(aiohttp_client, settings, newest_sqlite.shop)

    assert upgrade_shop.unexplained(newest_sqlite.answers, after, version) == []
    assert _backups(settings) == [version]


@pytest.mark.parametrize("version", range(FIRST_POSTGRES_VERSION, schema_version()))
async def test_a_postgresql_database_of_an_earlier_version_answers_the_same(
    aiohttp_client, tmp_path, newest_postgres, version
):
    url = pg.copy_of_database(newest_postgres.settings.database.url)
    await postgres_at(url, version)
    settings = make_settings(tmp_path, database={"url": url})

    after = await _upgraded_answers(aiohttp_client, settings, newest_postgres.shop)

    assert upgrade_shop.unexplained(newest_postgres.answers, after, version) == []
    assert _backups(settings) == [version]


def _only_backup(settings):
    (path,) = (settings.server.data_dir / "backups").iterdir()
    return path


async def test_a_sqlite_backup_restores_the_database_as_it_was(
    aiohttp_client, tmp_path, newest_sqlite
):
    """The backup taken before an upgrade, restored, is the database from before it; the
    database it replaced is kept; upgraded again, it answers as the first upgrade did."""
    settings = make_settings(tmp_path)
    settings.server.data_dir.mkdir(mode=0o700)
    shutil.copy(newest_sqlite.settings.server.data_dir / "secret.key", settings.server.data_dir)
    upgrade_shop.sqlite_at(newest_sqlite.settings.db_path, settings.db_path, 12)
    before = sqlite_contents(settings.db_path)
    first = await _upgraded_answers(aiohttp_client, settings, newest_sqlite.shop)
    upgraded = sqlite_contents(settings.db_path)
    backup = _only_backup(settings)

    done = run(
        ["restore", str(backup), "--yes", "--data-dir", str(settings.server.data_dir)], tmp_path
    )

    assert done.returncode == 0, done.stderr
    assert sqlite_contents(settings.db_path) == before
    kept = [p for p in (settings.server.data_dir / "backups").iterdir() if p != backup]
    assert [version_in_name(p) for p in kept] == [schema_version()]
    assert sqlite_contents(kept[0]) == upgraded
    assert done.stdout.strip() == (
        f"restored {backup} (schema version 12) into {settings.db_path}; the database"
        f" replaced is kept as {kept[0]}; the next start (or `agentsvc migrate`) upgrades it"
        f" to schema version {schema_version()}, after a backup"
    )
    again = await _upgraded_answers(aiohttp_client, settings, newest_sqlite.shop)
    assert upgrade_shop.differences(first, again) == []


async def test_a_postgresql_backup_restores_the_database_as_it_was(
    aiohttp_client, tmp_path, newest_postgres
):
    """As on SQLite: pg_restore in one transaction gives back every row, column, index,
    trigger, function and sequence position of the database from before the upgrade."""
    url = pg.copy_of_database(newest_postgres.settings.database.url)
    await postgres_at(url, 12)
    before = await postgres_contents(url)
    settings = make_settings(tmp_path, database={"url": url})
    first = await _upgraded_answers(aiohttp_client, settings, newest_postgres.shop)
    upgraded = await postgres_contents(url)
    backup = _only_backup(settings)
    data_dir = str(settings.server.data_dir)

    refused = run(
        [
            "restore",
            str(backup),
            "--config",
            str(config(tmp_path, url=url)),
            "--data-dir",
            data_dir,
        ],
        tmp_path,
    )
    assert (
        refused.returncode == 2 and "add --yes to confirm (nothing was changed)" in refused.stderr
    )
    done = run(
        [
            "restore",
            str(backup),
            "--yes",
            "--config",
            str(config(tmp_path, url=url)),
            "--data-dir",
            data_dir,
        ],
        tmp_path,
    )

    assert done.returncode == 0, done.stderr
    assert await postgres_contents(url) == before
    kept = [p for p in (settings.server.data_dir / "backups").iterdir() if p != backup]
    assert [version_in_name(p) for p in kept] == [schema_version()]
    assert f"the database replaced is kept as {kept[0]}" in done.stdout
    # The kept copy restores the upgraded database in turn.
    back = run(
        [
            "restore",
            str(kept[0]),
            "--yes",
            "--config",
            str(config(tmp_path, url=url)),
            "--data-dir",
            data_dir,
        ],
        tmp_path,
    )
    assert back.returncode == 0, back.stderr
    assert await postgres_contents(url) == upgraded
    again = await _upgraded_answers(aiohttp_client, settings, newest_postgres.shop)
    assert upgrade_shop.differences(first, again) == []
