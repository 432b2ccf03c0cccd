"""Numbered schema migrations applied after `schema.sql`.

`schema.sql` is version 1 and always holds the current schema for new databases; each
change after a release is appended here as SQL (migration N+2 is MIGRATIONS[N]) and also
folded into `schema.sql`. Each runs in one transaction and bumps `PRAGMA user_version`.
"""

MIGRATIONS: list[str] = [
    # 2: an agent's language, for the word forms of its builtin answers and retrieval.
    "ALTER TABLE agents ADD COLUMN language TEXT NOT NULL DEFAULT 'english';",
]
