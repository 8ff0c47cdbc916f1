-- The authorization-code flow (spec §5.5): the people who log in to an
-- account, the redirect URIs each OAuth application may send codes to, and
-- a name the login page can show for an application.

-- A person who can log in to an account and approve an application.
-- The password is an Argon2id PHC string (salted, memory-hard); never plain.
CREATE TABLE users (
    id            INTEGER PRIMARY KEY,
    account_id    INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    email         TEXT NOT NULL COLLATE NOCASE,
    name          TEXT NOT NULL DEFAULT '',
    role          TEXT NOT NULL DEFAULT 'admin',
    password_hash TEXT NOT NULL,
    created       INTEGER NOT NULL,
    changed       INTEGER NOT NULL,
    UNIQUE (account_id, email)
);

-- Where an application may receive codes: an exact URI, or for a loopback
-- URI (http://127.0.0.1, http://[::1], http://localhost) the same URI on any
-- port (RFC 8252 §7.3). Replaces the single oauth_apps.redirect_uri.
CREATE TABLE oauth_redirect_uris (
    app_id INTEGER NOT NULL REFERENCES oauth_apps(id) ON DELETE CASCADE,
    uri    TEXT NOT NULL,
    PRIMARY KEY (app_id, uri)
) WITHOUT ROWID;

INSERT INTO oauth_redirect_uris (app_id, uri)
    SELECT id, redirect_uri FROM oauth_apps WHERE redirect_uri <> '';

-- An existing default account gets the loopback URI of `listpipe auth login`,
-- as a first start does (a new database has no account yet at this point).
INSERT OR IGNORE INTO oauth_redirect_uris (app_id, uri)
    SELECT o.id, 'http://127.0.0.1/callback'
    FROM oauth_apps o JOIN accounts a ON a.id = o.account_id
    WHERE a.name = 'default';

ALTER TABLE oauth_apps ADD COLUMN name TEXT NOT NULL DEFAULT '';
