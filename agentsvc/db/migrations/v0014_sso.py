"""Version 14 (issue 35, `sso`): single sign-on. A team's sign-in settings (OpenID Connect now,
SAML 2.0 later, in the same table: the protocol's non-secret settings as JSON, its one
secret sealed with the secret box), the e-mail domains it claims, each with the random token
of its DNS TXT proof and when it was proven (a domain does anything only once verified, and
is verified for one team at most; unverified claims block nobody), the one-use states of
sign-ins under way (hashed state, the nonce and PKCE verifier bound to it), and the one-use
values already seen (an ID token's nonce now, a SAML assertion's id later), each kept until
it could no longer be replayed; and SCIM 2.0 provisioning: the team's bearer token (hashed),
the people and groups the identity provider manages, and who is in which group.
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
        domain      TEXT NOT NULL,
        team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        token       TEXT NOT NULL,
        verified_at TEXT,
        created_at  TEXT NOT NULL,
        PRIMARY KEY (domain, team_id)
    );
    CREATE INDEX team_domains_team ON team_domains(team_id);
    CREATE UNIQUE INDEX team_domains_verified ON team_domains(domain)
        WHERE verified_at IS NOT NULL;
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
    CREATE TABLE team_scim (
        team_id    TEXT PRIMARY KEY REFERENCES teams(id) ON DELETE CASCADE,
        token_hash TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL
    );
    CREATE TABLE scim_users (
        team_id         TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        external_id     TEXT,
        active          INTEGER NOT NULL DEFAULT 1,
        owner_by_groups INTEGER NOT NULL DEFAULT 0,
        attributes      TEXT NOT NULL,
        created_at      TEXT NOT NULL,
        updated_at      TEXT NOT NULL,
        PRIMARY KEY (team_id, user_id)
    );
    CREATE INDEX scim_users_external ON scim_users(team_id, external_id);
    CREATE TABLE scim_groups (
        id           TEXT PRIMARY KEY,
        team_id      TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        display_name TEXT NOT NULL,
        external_id  TEXT,
        created_at   TEXT NOT NULL,
        updated_at   TEXT NOT NULL,
        UNIQUE (team_id, display_name)
    );
    CREATE TABLE scim_group_members (
        group_id TEXT NOT NULL REFERENCES scim_groups(id) ON DELETE CASCADE,
        user_id  TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        PRIMARY KEY (group_id, user_id)
    );
    CREATE INDEX scim_group_members_user ON scim_group_members(user_id);
    """

# Constant text only (no value is ever formatted into these scripts).
SQLITE = _SHARED
POSTGRES = _SHARED

# Taken away again, for the tests that build a PostgreSQL database of an earlier version.
UNDO_POSTGRES = """
DROP TABLE scim_group_members;
DROP TABLE scim_groups;
DROP TABLE scim_users;
DROP TABLE team_scim;
DROP TABLE sso_seen;
DROP TABLE sso_states;
DROP TABLE team_domains;
DROP TABLE team_sso;
"""
