"""Version 21 (issue 34): PostgreSQL's searches read only the agent's part of their indexes.

Passages: the GIN index becomes one on (agent_id, search). Messages get the agent's id
(filled from the conversation by a trigger) and their English tsvector as stored columns,
a GIN index on (agent_id, search) that replaces the expression index `messages_search`
(same name: the erasure's rebuild names it), and a btree on (agent_id, rowid), which lets
a search for a common word walk the agent's newest messages and stop after the newest
matches instead of reading every match.

Both GIN indexes need the `btree_gin` extension (PostgreSQL's contrib, shipped in Debian's
`postgresql-15`; trusted since 13, so the database's owner may create it). It goes in
schema `public`, or in the current schema when `public` cannot take it: an extension is one
per database, and dropping a schema drops the extension in it with every index that uses
it. When neither works (the role may not create extensions, or contrib is not installed),
each GIN index is on `search` alone, with a warning: searches answer the same, reading
other agents' postings too.

The migration computes every message's tsvector and copies every message's agent once: on
a large table it takes a while (the same statements took about 5 s for 100,000 messages
on the development machine).
SQLite: nothing (FTS5's scope token already restricts a match to the agent).
"""

SQLITE = ""

POSTGRES = """
DO $$
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS btree_gin SCHEMA public;
    EXCEPTION WHEN OTHERS THEN
        BEGIN
            CREATE EXTENSION IF NOT EXISTS btree_gin;
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'agentsvc: the btree_gin extension could not be created (%): '
                'the search indexes cover every agent (slower searches where agents share '
                'the tables). As the database owner or a superuser: CREATE EXTENSION '
                'btree_gin; then rebuild the two indexes (docs/operators/growing.md)',
                SQLERRM;
        END;
    END;
END $$;

DROP INDEX messages_search;
ALTER TABLE messages ADD COLUMN agent_id TEXT;
UPDATE messages AS m SET agent_id = c.agent_id FROM conversations AS c
WHERE c.id = m.conversation_id;
ALTER TABLE messages ALTER COLUMN agent_id SET NOT NULL;
ALTER TABLE messages ADD COLUMN search tsvector
    GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED;
CREATE INDEX messages_agent_rowid ON messages(agent_id, rowid);

CREATE FUNCTION message_agent() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT agent_id INTO NEW.agent_id FROM conversations WHERE id = NEW.conversation_id;
    RETURN NEW;
END $$;
CREATE TRIGGER message_agent BEFORE INSERT ON messages
    FOR EACH ROW EXECUTE FUNCTION message_agent();

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin') THEN
        CREATE INDEX passages_agent_search ON passages USING GIN (agent_id, search);
        DROP INDEX passages_search;
        CREATE INDEX messages_search ON messages USING GIN (agent_id, search);
    ELSE
        CREATE INDEX messages_search ON messages USING GIN (search);
    END IF;
END $$;
"""

# Taken away again, for the tests that build a PostgreSQL database of an earlier version
# (the extension stays: other schemas of the database may use it).
UNDO_POSTGRES = """
DROP TRIGGER message_agent ON messages;
DROP FUNCTION message_agent();
DROP INDEX messages_search;
DROP INDEX messages_agent_rowid;
ALTER TABLE messages DROP COLUMN search;
ALTER TABLE messages DROP COLUMN agent_id;
CREATE INDEX messages_search ON messages USING GIN (to_tsvector('english'::regconfig, content));
CREATE INDEX IF NOT EXISTS passages_search ON passages USING GIN (search);
DROP INDEX IF EXISTS passages_agent_search;
"""
