-- Client (account) details the v3 client endpoints read (spec §2.2, §4.2),
-- forms (spec §2.10, §4.5), their double-opt-in links, and the outbox the
-- server writes its mails to instead of sending them.

-- A subscription plan. Every account starts on plan 1, a flat rate: on a
-- flat rate the contingent is always 0 (spec §8). `receiver_cap` 0 means no
-- cap; `emails` 0 means unlimited mails.
CREATE TABLE plans (
    id           INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    flatrate     INTEGER NOT NULL DEFAULT 1,
    emails       INTEGER NOT NULL DEFAULT 0,
    receiver_cap INTEGER NOT NULL DEFAULT 0,
    runtime      TEXT NOT NULL DEFAULT 'monthly',
    price        REAL NOT NULL DEFAULT 0,
    currency     TEXT NOT NULL DEFAULT 'EUR'
);
INSERT INTO plans (id, name, flatrate, emails, receiver_cap, runtime, price, currency)
VALUES (1, 'Flatrate', 1, 0, 0, 'monthly', 0, 'EUR');

-- No REFERENCES: SQLite cannot add a foreign-key column with a non-null
-- default while foreign keys are on. `contingent` is the prepaid mail
-- balance, read only on a plan that is not a flat rate.
ALTER TABLE accounts ADD COLUMN plan_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE accounts ADD COLUMN contingent INTEGER NOT NULL DEFAULT 0;

-- The invoice address of an account: one row each, made with the account
-- (the trigger) and for the accounts that exist already.
CREATE TABLE invoice_addresses (
    account_id INTEGER PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
    company    TEXT NOT NULL DEFAULT '',
    street     TEXT NOT NULL DEFAULT '',
    zip        TEXT NOT NULL DEFAULT '',
    city       TEXT NOT NULL DEFAULT '',
    country    TEXT NOT NULL DEFAULT ''
);
INSERT INTO invoice_addresses (account_id, company) SELECT id, company FROM accounts;
CREATE TRIGGER accounts_invoice_address AFTER INSERT ON accounts
BEGIN
    INSERT OR IGNORE INTO invoice_addresses (account_id, company) VALUES (NEW.id, NEW.company);
END;

-- A sign-up form of a group, made from a template (only `default` exists).
CREATE TABLE forms (
    id         INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    group_id   INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    title      TEXT NOT NULL DEFAULT '',
    template   TEXT NOT NULL,
    created    INTEGER NOT NULL
);
CREATE INDEX forms_account ON forms(account_id);
CREATE INDEX forms_group ON forms(group_id);

-- Mails the server "sends": written here, read by `GET /v3/outbox` and
-- `listpipe outbox`. Form, group and receiver ids are kept as plain numbers
-- (no foreign keys), so a mail outlives what it was about.
CREATE TABLE outbox (
    id          INTEGER PRIMARY KEY,
    account_id  INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('activate', 'deactivate')),
    recipient   TEXT NOT NULL,
    subject     TEXT NOT NULL,
    body        TEXT NOT NULL,
    link        TEXT NOT NULL,
    form_id     INTEGER NOT NULL DEFAULT 0,
    group_id    INTEGER NOT NULL DEFAULT 0,
    receiver_id INTEGER NOT NULL DEFAULT 0,
    user_ip     TEXT NOT NULL DEFAULT '',
    referer     TEXT NOT NULL DEFAULT '',
    user_agent  TEXT NOT NULL DEFAULT '',
    created     INTEGER NOT NULL
);
CREATE INDEX outbox_account ON outbox(account_id, id);

-- One-time confirmation links of double-opt-in mails, stored like the OAuth
-- tokens: selector + SHA-256 of the verifier. `used` is when the link was
-- followed (0: not yet); the row stays so a second visit can say so.
CREATE TABLE doi_links (
    selector      TEXT PRIMARY KEY,
    verifier_hash BLOB NOT NULL,
    account_id    INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    receiver_id   INTEGER NOT NULL REFERENCES receivers(id) ON DELETE CASCADE,
    kind          TEXT NOT NULL CHECK (kind IN ('activate', 'deactivate')),
    created       INTEGER NOT NULL,
    expires       INTEGER NOT NULL,
    used          INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX doi_links_receiver ON doi_links(receiver_id);
