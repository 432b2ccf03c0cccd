"""Version 9: the widget's look per agent (appearance, language, strings, starters), JSON."""

SQLITE = """
    ALTER TABLE agents ADD COLUMN widget TEXT;
    """

POSTGRES = """
    ALTER TABLE agents ADD COLUMN widget TEXT;
    """

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = "ALTER TABLE agents DROP COLUMN widget;"
