"""Version 14 (issue 35, `sso`): single sign-on. A team's sign-in settings (OpenID Connect
now, SAML 2.0 later, in the same table: the protocol's non-secret settings as JSON, its one
secret sealed with the secret box), the e-mail domains that sign in through it (a domain
belongs to at most one team), the one-use states of sign-ins under way (hashed state, the
nonce and PKCE verifier bound to it), and the one-use values already seen (an ID token's
nonce now, a SAML assertion's id later), each kept until it could no longer be replayed.
"""

_SHARED = """
    CREATE TABLE team_sso (
        team_id       TEXT PRIMARY KEY REFERENCES teams(id) ON DELETE CASCADE,
        type          TEXT NOT NULL CHECK (type IN ('oidc', 'saml')),
        settings      TEXT NOT NULL,
        secret_sealed TEXT,
        enforce       INTEGER NOT NULL DEFAULT 0,
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL
    );
    CREATE TABLE team_domains (
        domain     TEXT PRIMARY KEY,
        team_id    TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        created_at TEXT NOT NULL
    );
    CREATE INDEX team_domains_team ON team_domains(team_id);
    CREATE TABLE sso_states (
        state_hash    TEXT PRIMARY KEY,
        team_id       TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        nonce         TEXT NOT NULL,
        code_verifier TEXT NOT NULL,
        callback_url  TEXT NOT NULL,
        created_at    TEXT NOT NULL,
        expires_at    TEXT NOT NULL
    );
    CREATE TABLE sso_seen (
        key        TEXT PRIMARY KEY,
        team_id    TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        expires_at TEXT NOT NULL
    );
    """

# Constant text only (no value is ever formatted into these scripts).
SQLITE = _SHARED
POSTGRES = _SHARED

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
DROP TABLE sso_seen;
DROP TABLE sso_states;
DROP TABLE team_domains;
DROP TABLE team_sso;
"""
