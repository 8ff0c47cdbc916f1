-- Saved filters (segments) of a group: their rules as JSON, evaluated by
-- compiling them to SQL on each use (see store/filters/rules.rs).

CREATE TABLE filters (
    id         INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    group_id   INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    operator   TEXT NOT NULL DEFAULT 'AND',
    rules      TEXT NOT NULL,
    created    INTEGER NOT NULL,
    changed    INTEGER NOT NULL
);
CREATE INDEX filters_group ON filters(group_id);

-- Mailing events are looked up by contact, kind and mailing.
CREATE INDEX events_mailing ON events(mailing_id, type);
