"""Version 2: an agent's language, for the word forms of its builtin answers and retrieval."""

SQLITE = "ALTER TABLE agents ADD COLUMN language TEXT NOT NULL DEFAULT 'english';"

POSTGRES = None  # older than PostgreSQL's first schema (version 6)
