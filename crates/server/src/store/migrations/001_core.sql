-- The core of the built-in server: accounts and their OAuth credentials,
-- groups, receivers, attributes, tags, orders, events and blacklists.
-- Timestamps are Unix seconds; 0 means never.

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE accounts (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    email      TEXT NOT NULL DEFAULT '',
    company    TEXT NOT NULL DEFAULT '',
    created    INTEGER NOT NULL
);

-- An OAuth application; the secret is stored as a SHA-256 hash.
CREATE TABLE oauth_apps (
    id           INTEGER PRIMARY KEY,
    account_id   INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    client_id    TEXT NOT NULL UNIQUE,
    secret_hash  BLOB NOT NULL,
    redirect_uri TEXT NOT NULL DEFAULT ''
);

-- Access tokens, refresh tokens and authorization codes. A token is
-- selector + verifier: the selector finds the row, the verifier's hash is
-- compared in constant time.
CREATE TABLE tokens (
    selector      TEXT PRIMARY KEY,
    verifier_hash BLOB NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('access', 'refresh', 'code')),
    account_id    INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    app_id        INTEGER NOT NULL REFERENCES oauth_apps(id) ON DELETE CASCADE,
    redirect_uri  TEXT NOT NULL DEFAULT '',
    created       INTEGER NOT NULL,
    expires       INTEGER NOT NULL
);
CREATE INDEX tokens_expires ON tokens(expires);

CREATE TABLE groups (
    id            INTEGER PRIMARY KEY,
    account_id    INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name          TEXT NOT NULL COLLATE NOCASE,
    receiver_info TEXT NOT NULL DEFAULT '',
    locked        INTEGER NOT NULL DEFAULT 0,
    backup        INTEGER NOT NULL DEFAULT 0,
    stamp         INTEGER NOT NULL,
    last_mailing  INTEGER NOT NULL DEFAULT 0,
    last_changed  INTEGER NOT NULL,
    UNIQUE (account_id, name)
);

-- One row per address and account: what belongs to the person whatever the
-- group (global attribute values, tags, orders, events).
CREATE TABLE contacts (
    id         INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    email      TEXT NOT NULL COLLATE NOCASE,
    UNIQUE (account_id, email)
);

-- A receiver: a contact's membership of one group, with its own state.
CREATE TABLE receivers (
    id            INTEGER PRIMARY KEY,
    account_id    INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    group_id      INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    contact_id    INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    registered    INTEGER NOT NULL DEFAULT 0,
    activated     INTEGER NOT NULL DEFAULT 0,
    deactivated   INTEGER NOT NULL DEFAULT 0,
    imported      INTEGER NOT NULL DEFAULT 0,
    bounced       INTEGER NOT NULL DEFAULT 0,
    source        TEXT NOT NULL DEFAULT '',
    points        INTEGER NOT NULL DEFAULT 0,
    stars         INTEGER NOT NULL DEFAULT 0,
    last_ip       TEXT NOT NULL DEFAULT '',
    last_location TEXT NOT NULL DEFAULT '',
    last_client   TEXT NOT NULL DEFAULT '',
    created       INTEGER NOT NULL,
    changed       INTEGER NOT NULL,
    UNIQUE (group_id, contact_id)
);
CREATE INDEX receivers_contact ON receivers(contact_id);

CREATE TABLE attributes (
    id            INTEGER PRIMARY KEY,
    account_id    INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    -- 0 for a global attribute (no foreign key: 0 is no group).
    group_id      INTEGER NOT NULL DEFAULT 0,
    name          TEXT NOT NULL COLLATE NOCASE,
    type          TEXT NOT NULL,
    description   TEXT NOT NULL DEFAULT '',
    preview_value TEXT NOT NULL DEFAULT '',
    default_value TEXT NOT NULL DEFAULT '',
    UNIQUE (account_id, group_id, name)
);

-- Attribute values belong to the contact; a group attribute's value is
-- meaningful while the contact is a receiver of that group.
CREATE TABLE attribute_values (
    contact_id   INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    attribute_id INTEGER NOT NULL REFERENCES attributes(id) ON DELETE CASCADE,
    value        TEXT NOT NULL,
    PRIMARY KEY (contact_id, attribute_id)
) WITHOUT ROWID;
CREATE INDEX attribute_values_attribute ON attribute_values(attribute_id);

CREATE TABLE tags (
    contact_id INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    tag        TEXT NOT NULL,
    origin     TEXT NOT NULL,
    PRIMARY KEY (contact_id, tag)
) WITHOUT ROWID;
CREATE INDEX tags_tag ON tags(tag);

CREATE TABLE orders (
    id         INTEGER PRIMARY KEY,
    contact_id INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    order_id   TEXT NOT NULL,
    product_id TEXT NOT NULL DEFAULT '',
    product    TEXT NOT NULL DEFAULT '',
    price      REAL NOT NULL DEFAULT 0,
    currency   TEXT NOT NULL DEFAULT '',
    quantity   INTEGER NOT NULL DEFAULT 0,
    mailing_id TEXT NOT NULL DEFAULT '',
    stamp      INTEGER NOT NULL
);
CREATE INDEX orders_contact ON orders(contact_id);

CREATE TABLE events (
    id         INTEGER PRIMARY KEY,
    contact_id INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    stamp      INTEGER NOT NULL,
    type       TEXT NOT NULL,
    type_id    INTEGER NOT NULL DEFAULT 0,
    value      TEXT NOT NULL DEFAULT '',
    mailing_id TEXT NOT NULL DEFAULT '',
    group_id   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX events_contact ON events(contact_id);

CREATE TABLE blacklist (
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    email      TEXT NOT NULL COLLATE NOCASE,
    comment    TEXT NOT NULL DEFAULT '',
    stamp      INTEGER NOT NULL,
    PRIMARY KEY (account_id, email)
) WITHOUT ROWID;

CREATE TABLE group_blocklist (
    group_id INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    email    TEXT NOT NULL COLLATE NOCASE,
    stamp    INTEGER NOT NULL,
    PRIMARY KEY (group_id, email)
) WITHOUT ROWID;
