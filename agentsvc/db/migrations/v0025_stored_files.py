"""Version 25 (issue 37, `shared-storage`): files kept in the database, and members'
pictures kept with the other files.

`stored_files` and `stored_file_chunks` hold the files of a PostgreSQL instance with no
`[storage] url` (agentsvc/storage/database.py): one row per file naming its upload, and the
upload's bytes in numbered chunks of 256 KiB. SQLite has the same tables (the schemas stay
alike) and leaves them empty: its files are in data_dir, or in S3.

A member's picture now lives in the file storage (`avatars/<id>/image`); `avatars.image`
keeps the pictures uploaded before this version (NULL for the new ones), which are served
from there until replaced. SQLite cannot drop a NOT NULL: the table is rebuilt (nothing
refers to it).
"""

_TABLES = """
    CREATE TABLE stored_files (
        key        TEXT PRIMARY KEY,
        folder     TEXT NOT NULL,
        upload_id  TEXT NOT NULL UNIQUE,
        size       {integer} NOT NULL,
        chunks     {integer} NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE TABLE stored_file_chunks (
        upload_id  TEXT NOT NULL,
        seq        {integer} NOT NULL,
        data       {blob} NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (upload_id, seq)
    );
    CREATE INDEX stored_files_folder ON stored_files(folder);
"""

# Constant text only (no value is ever formatted into these scripts).
SQLITE = (
    _TABLES.replace("{integer}", "INTEGER").replace("{blob}", "BLOB")  # noqa: S608
    + """
    CREATE TABLE avatars_new (
        id           TEXT PRIMARY KEY,
        user_id      TEXT NOT NULL UNIQUE REFERENCES users(id) ON DELETE CASCADE,
        content_type TEXT NOT NULL,
        image        BLOB,
        created_at   TEXT NOT NULL
    );
    INSERT INTO avatars_new (id, user_id, content_type, image, created_at)
        SELECT id, user_id, content_type, image, created_at FROM avatars;
    DROP TABLE avatars;
    ALTER TABLE avatars_new RENAME TO avatars;
    """
)

POSTGRES = (
    _TABLES.replace("{integer}", "BIGINT").replace("{blob}", "BYTEA")
    + """
    -- Chunks are binary and seldom compress: stored as they are, without a try.
    ALTER TABLE stored_file_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
    ALTER TABLE avatars ALTER COLUMN image DROP NOT NULL;
    """
)

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
DROP TABLE stored_file_chunks;
DROP TABLE stored_files;
UPDATE avatars SET image = '\\x'::bytea WHERE image IS NULL;
ALTER TABLE avatars ALTER COLUMN image SET NOT NULL;
"""
