//! The set-based statements of a receiver batch ([`super::batch`]): each
//! takes the rows of a whole batch as ONE JSON array bound to one
//! parameter and expands it with `jsonb_each`, so a batch of 1,000 receivers
//! is a handful of statements (not ~25 per receiver), and every statement's
//! text is fixed, so it is parsed and planned once per connection
//! (`prepare_cached`), whatever the batch size.
//!
//! Decision: `jsonb_each`, not `json_each`. Both parse the array once, but
//! `json_each` hands each row back as JSON text, which every `value->>N`
//! parses again; `jsonb_each` hands back the row's binary form, which
//! `->>` reads in place.
//!
//! Decision: a JSON parameter rather than multi-row `VALUES (?,?),(?,?)...`
//! lists, because the latter is a new statement text per batch size (no
//! reuse of the prepared statement) and runs into SQLite's limit on bound
//! parameters at 1,000 receivers × 15 columns.
//!
//! Rows are written in the order given, so ids are assigned in the batch's
//! item order, as one-by-one writes assigned them.

use super::super::{AccountId, Backend, Db, StoreError, StoreResult};
use crate::store::db::params;
use listpipe_api::Order;
use std::collections::HashMap;

/// The statement of `db`'s dialect: SQLite's (the constants below) or
/// PostgreSQL's (in [`pg`]).
fn sql(db: &Db, lite: &'static str, pg: &'static str) -> &'static str {
    match db.backend() {
        Backend::Sqlite => lite,
        Backend::Postgres => pg,
    }
}

fn json<T: serde::Serialize>(rows: &T) -> StoreResult<String> {
    serde_json::to_string(rows).map_err(|e| StoreError::Internal(e.to_string()))
}

/// The key of an address as the database compares it: `contacts.email` is
/// `COLLATE NOCASE`, which folds ASCII letters only.
pub(crate) fn email_key(email: &str) -> String {
    email.to_ascii_lowercase()
}

/// The receivers of `group_id` among `emails`: by address key, their id and
/// contact id.
pub(crate) fn existing_in_group(
    conn: &Db,
    account: AccountId,
    group_id: i64,
    emails: &[&str],
) -> StoreResult<HashMap<String, (i64, i64)>> {
    let rows = conn.rows(
        sql(conn, EXISTING_IN_GROUP, pg::EXISTING_IN_GROUP),
        params![account.0, group_id, json(&emails)?],
        |r| Ok((email_key(&r.get::<String>(0)?), (r.get(1)?, r.get(2)?))),
    )?;
    Ok(rows.into_iter().collect())
}

/// The contact of each address, created where there is none (an existing
/// contact keeps its spelling of the address). By address key.
pub(crate) fn contacts_for(
    conn: &Db,
    account: AccountId,
    emails: &[&str],
) -> StoreResult<HashMap<String, i64>> {
    let list = json(&emails)?;
    // `WHERE true`: SQLite's parser needs it before ON CONFLICT after a SELECT.
    conn.exec(
        sql(conn, INSERT_CONTACTS, pg::INSERT_CONTACTS),
        params![account.0, list],
    )?;
    let rows = conn.rows(
        sql(conn, CONTACT_IDS, pg::CONTACT_IDS),
        params![account.0, list],
        |r| Ok((email_key(&r.get::<String>(0)?), r.get(1)?)),
    )?;
    Ok(rows.into_iter().collect())
}

/// A new receiver's own columns, in the order of the INSERT below.
#[derive(serde::Serialize)]
pub struct NewRow<'a>(
    pub i64, // contact_id
    pub i64, // registered
    pub i64, // activated
    pub i64, // deactivated
    pub i64, // imported
    pub i64, // bounced
    pub &'a str,
    pub i64, // points
    pub &'a str,
    pub &'a str,
    pub &'a str,
);

/// Inserts new receivers of `group_id` (stamped `t`); answers the new id of
/// each contact.
pub(crate) fn insert_receivers(
    conn: &Db,
    account: AccountId,
    group_id: i64,
    rows: &[NewRow],
    t: i64,
) -> StoreResult<HashMap<i64, i64>> {
    if rows.is_empty() {
        return Ok(HashMap::new());
    }
    let ids = conn.rows(
        sql(conn, INSERT_RECEIVERS, pg::INSERT_RECEIVERS),
        params![account.0, group_id, t, json(&rows)?],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(ids.into_iter().collect())
}

/// A change of an existing receiver: its id, then each column or `None`
/// to keep what it holds.
#[derive(serde::Serialize)]
pub struct ChangeRow<'a>(
    pub i64, // id
    pub Option<i64>,
    pub Option<i64>,
    pub Option<i64>,
    pub Option<i64>,
    pub Option<i64>,
    pub Option<&'a str>,
    pub Option<i64>,
    pub Option<&'a str>,
    pub Option<&'a str>,
    pub Option<&'a str>,
);

/// Updates existing receivers in one statement; `changed` becomes `t`.
pub(crate) fn update_receivers(conn: &Db, rows: &[ChangeRow], t: i64) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let updated = conn.exec(
        sql(conn, UPDATE_RECEIVERS, pg::UPDATE_RECEIVERS),
        params![t, json(&rows)?],
    )?;
    if updated < rows.len() as u64 {
        // One was deleted by another process since it was looked up.
        return Err(StoreError::raced());
    }
    Ok(())
}

/// Sets attribute values `(contact, attribute, value)`; each pair once.
pub(crate) fn set_values(conn: &Db, rows: &[(i64, i64, &str)]) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    conn.exec(sql(conn, SET_VALUES, pg::SET_VALUES), params![json(&rows)?])?;
    Ok(())
}

/// Clears attribute values `(contact, attribute)`.
pub(crate) fn clear_values(conn: &Db, rows: &[(i64, i64)]) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    conn.exec(
        sql(conn, CLEAR_VALUES, pg::CLEAR_VALUES),
        params![json(&rows)?],
    )?;
    Ok(())
}

/// Fills, for new receivers' contacts, the default values of the global
/// attributes and the group's that they hold no value for.
pub(crate) fn apply_defaults(
    conn: &Db,
    account: AccountId,
    group_id: i64,
    contacts: &[i64],
) -> StoreResult<()> {
    if contacts.is_empty() {
        return Ok(());
    }
    conn.exec(
        sql(conn, APPLY_DEFAULTS, pg::APPLY_DEFAULTS),
        params![account.0, group_id, json(&contacts)?],
    )?;
    Ok(())
}

/// Adds tags `(contact, tag, origin)` (a tag there already stays).
pub(crate) fn add_tags(conn: &Db, rows: &[(i64, &str, &str)]) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    conn.exec(sql(conn, ADD_TAGS, pg::ADD_TAGS), params![json(&rows)?])?;
    Ok(())
}

/// Removes tags `(contact, tag)`.
pub(crate) fn remove_tags(conn: &Db, rows: &[(i64, &str)]) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    conn.exec(
        sql(conn, REMOVE_TAGS, pg::REMOVE_TAGS),
        params![json(&rows)?],
    )?;
    Ok(())
}

/// Stores orders `(contact, order, stamp)`: an order with the same
/// contact, `order_id` and `product_id` is updated in place (its id, and so
/// its place in the receiver's list, stays). Migration 006 made that key
/// unique.
pub(crate) fn upsert_orders(conn: &Db, rows: &[(i64, &Order, i64)]) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut rows: Vec<_> = rows.iter().collect();
    if conn.backend() == Backend::Postgres {
        let mut seen = std::collections::HashSet::new();
        rows.reverse();
        rows.retain(|(c, o, _)| seen.insert((*c, &o.order_id, &o.product_id)));
        rows.reverse();
    }
    let rows: Vec<_> = rows
        .into_iter()
        .map(|(c, o, stamp)| {
            (
                c,
                &o.order_id,
                &o.product_id,
                &o.product,
                o.price,
                &o.currency,
                o.quantity,
                &o.mailing_id,
                stamp,
            )
        })
        .collect();
    conn.exec(
        sql(conn, UPSERT_ORDERS, pg::UPSERT_ORDERS),
        params![json(&rows)?],
    )?;
    Ok(())
}

// The statements, named so that their query plans are checked (store::plans).
pub(crate) const EXISTING_IN_GROUP: &str = "SELECT c.email, r.id, r.contact_id FROM contacts c
         JOIN receivers r ON r.contact_id = c.id AND r.group_id = ?2
         WHERE c.account_id = ?1 AND c.email IN (SELECT value FROM jsonb_each(?3))";

pub(crate) const INSERT_CONTACTS: &str =
    "INSERT INTO contacts (account_id, email) SELECT ?1, value FROM jsonb_each(?2) WHERE true
         ON CONFLICT (account_id, email) DO NOTHING";

pub(crate) const CONTACT_IDS: &str = "SELECT email, id FROM contacts WHERE account_id = ?1 AND email IN (SELECT value FROM jsonb_each(?2))";

pub(crate) const INSERT_RECEIVERS: &str = "INSERT INTO receivers (account_id, group_id, contact_id, registered, activated, deactivated, imported,
            bounced, source, points, last_ip, last_location, last_client, created, changed)
         SELECT ?1, ?2, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6,
            value->>7, value->>8, value->>9, value->>10, ?3, ?3
         FROM jsonb_each(?4) WHERE true
         RETURNING contact_id, id";

pub(crate) const UPDATE_RECEIVERS: &str = "UPDATE receivers SET registered = COALESCE(j.value->>1, registered),
            activated = COALESCE(j.value->>2, activated), deactivated = COALESCE(j.value->>3, deactivated),
            imported = COALESCE(j.value->>4, imported), bounced = COALESCE(j.value->>5, bounced),
            source = COALESCE(j.value->>6, source), points = COALESCE(j.value->>7, points),
            last_ip = COALESCE(j.value->>8, last_ip), last_location = COALESCE(j.value->>9, last_location),
            last_client = COALESCE(j.value->>10, last_client), changed = ?1
         FROM jsonb_each(?2) AS j WHERE receivers.id = j.value->>0";

pub(crate) const SET_VALUES: &str = "INSERT INTO attribute_values (contact_id, attribute_id, value)
         SELECT value->>0, value->>1, value->>2 FROM jsonb_each(?1) WHERE true
         ON CONFLICT (contact_id, attribute_id) DO UPDATE SET value = excluded.value";

pub(crate) const CLEAR_VALUES: &str =
    "DELETE FROM attribute_values WHERE (contact_id, attribute_id) IN
           (SELECT value->>0, value->>1 FROM jsonb_each(?1))";

pub(crate) const APPLY_DEFAULTS: &str =
    "INSERT OR IGNORE INTO attribute_values (contact_id, attribute_id, value)
         SELECT j.value, a.id, a.default_value FROM attributes a, jsonb_each(?3) AS j
         WHERE a.account_id = ?1 AND (a.group_id = 0 OR a.group_id = ?2) AND a.default_value <> ''";

pub(crate) const ADD_TAGS: &str = "INSERT OR IGNORE INTO tags (contact_id, tag, origin)
         SELECT value->>0, value->>1, value->>2 FROM jsonb_each(?1)";

pub(crate) const REMOVE_TAGS: &str =
    "DELETE FROM tags WHERE (contact_id, tag) IN (SELECT value->>0, value->>1 FROM jsonb_each(?1))";

pub(crate) const UPSERT_ORDERS: &str = "INSERT INTO orders (contact_id, order_id, product_id, product, price, currency, quantity, mailing_id, stamp)
         SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7, value->>8
         FROM jsonb_each(?1) WHERE true
         ON CONFLICT (contact_id, order_id, product_id) DO UPDATE SET product = excluded.product,
            price = excluded.price, currency = excluded.currency, quantity = excluded.quantity,
            mailing_id = excluded.mailing_id, stamp = excluded.stamp";

/// The same statements on PostgreSQL: the JSON list expanded by
/// `jsonb_array_elements` (`_text` for a list of scalars), each value cast
/// to its column's type (PostgreSQL does not convert text on insert), and
/// `ON CONFLICT DO NOTHING` for SQLite's `INSERT OR IGNORE`.
mod pg {
    /// Each row names the address as the batch gave it, not as stored: the
    /// `nocase` collation also folds non-ASCII letters, which
    /// [`super::email_key`] does not, so only the given spelling finds its
    /// item again. Each address is looked up on its own (`LATERAL` ...
    /// `LIMIT 1` keeps the planner from merging it into a join): during a
    /// first import the tables' statistics lag far behind their size, and
    /// the joined form was planned as a hash join of the account's every
    /// contact with the group's every receiver, a second per batch at 200k.
    pub(super) const EXISTING_IN_GROUP: &str = "SELECT j.value, x.id, x.contact_id
         FROM jsonb_array_elements_text(CAST(?3 AS jsonb)) AS j(value)
         CROSS JOIN LATERAL (SELECT r.id, r.contact_id FROM contacts c
            JOIN receivers r ON r.contact_id = c.id AND r.group_id = ?2
            WHERE c.account_id = ?1 AND c.email = j.value LIMIT 1) AS x";

    pub(super) const INSERT_CONTACTS: &str = "INSERT INTO contacts (account_id, email)
         SELECT ?1, value FROM jsonb_array_elements_text(CAST(?2 AS jsonb))
         ON CONFLICT (account_id, email) DO NOTHING";

    /// As given, and each on its own, as in [`EXISTING_IN_GROUP`].
    pub(super) const CONTACT_IDS: &str = "SELECT j.value, x.id
         FROM jsonb_array_elements_text(CAST(?2 AS jsonb)) AS j(value)
         CROSS JOIN LATERAL (SELECT c.id FROM contacts c
            WHERE c.account_id = ?1 AND c.email = j.value LIMIT 1) AS x";

    /// In the list's order, so ids follow the batch's items (as on SQLite).
    pub(super) const INSERT_RECEIVERS: &str = "INSERT INTO receivers (account_id, group_id, contact_id, registered, activated, deactivated, imported,
            bounced, source, points, last_ip, last_location, last_client, created, changed)
         SELECT ?1, ?2, CAST(v->>0 AS BIGINT), CAST(v->>1 AS BIGINT), CAST(v->>2 AS BIGINT),
            CAST(v->>3 AS BIGINT), CAST(v->>4 AS BIGINT), CAST(v->>5 AS BIGINT), v->>6,
            CAST(v->>7 AS BIGINT), v->>8, v->>9, v->>10, ?3, ?3
         FROM jsonb_array_elements(CAST(?4 AS jsonb)) WITH ORDINALITY AS j(v, n) ORDER BY j.n
         RETURNING contact_id, id";

    pub(super) const UPDATE_RECEIVERS: &str = "UPDATE receivers SET
            registered = COALESCE(CAST(j.v->>1 AS BIGINT), registered),
            activated = COALESCE(CAST(j.v->>2 AS BIGINT), activated),
            deactivated = COALESCE(CAST(j.v->>3 AS BIGINT), deactivated),
            imported = COALESCE(CAST(j.v->>4 AS BIGINT), imported),
            bounced = COALESCE(CAST(j.v->>5 AS BIGINT), bounced),
            source = COALESCE(j.v->>6, source), points = COALESCE(CAST(j.v->>7 AS BIGINT), points),
            last_ip = COALESCE(j.v->>8, last_ip), last_location = COALESCE(j.v->>9, last_location),
            last_client = COALESCE(j.v->>10, last_client), changed = ?1
         FROM jsonb_array_elements(CAST(?2 AS jsonb)) AS j(v)
         WHERE receivers.id = CAST(j.v->>0 AS BIGINT)";

    pub(super) const SET_VALUES: &str =
        "INSERT INTO attribute_values (contact_id, attribute_id, value)
         SELECT CAST(v->>0 AS BIGINT), CAST(v->>1 AS BIGINT), v->>2
         FROM jsonb_array_elements(CAST(?1 AS jsonb)) AS j(v)
         ON CONFLICT (contact_id, attribute_id) DO UPDATE SET value = excluded.value";

    pub(super) const CLEAR_VALUES: &str =
        "DELETE FROM attribute_values WHERE (contact_id, attribute_id) IN
           (SELECT CAST(v->>0 AS BIGINT), CAST(v->>1 AS BIGINT)
            FROM jsonb_array_elements(CAST(?1 AS jsonb)) AS j(v))";

    pub(super) const APPLY_DEFAULTS: &str =
        "INSERT INTO attribute_values (contact_id, attribute_id, value)
         SELECT CAST(j.value AS BIGINT), a.id, a.default_value
         FROM attributes a, jsonb_array_elements_text(CAST(?3 AS jsonb)) AS j(value)
         WHERE a.account_id = ?1 AND (a.group_id = 0 OR a.group_id = ?2) AND a.default_value <> ''
         ON CONFLICT DO NOTHING";

    pub(super) const ADD_TAGS: &str = "INSERT INTO tags (contact_id, tag, origin)
         SELECT CAST(v->>0 AS BIGINT), v->>1, v->>2 FROM jsonb_array_elements(CAST(?1 AS jsonb)) AS j(v)
         ON CONFLICT DO NOTHING";

    pub(super) const REMOVE_TAGS: &str = "DELETE FROM tags WHERE (contact_id, tag) IN
           (SELECT CAST(v->>0 AS BIGINT), v->>1 FROM jsonb_array_elements(CAST(?1 AS jsonb)) AS j(v))";

    /// Each order key once per statement: PostgreSQL refuses an upsert that
    /// touches a row twice, so [`super::upsert_orders`] keeps the last of a
    /// repeated order (what SQLite's row-by-row upsert leaves).
    pub(super) const UPSERT_ORDERS: &str = "INSERT INTO orders (contact_id, order_id, product_id, product, price, currency, quantity, mailing_id, stamp)
         SELECT CAST(v->>0 AS BIGINT), v->>1, v->>2, v->>3, CAST(v->>4 AS DOUBLE PRECISION), v->>5,
            CAST(v->>6 AS BIGINT), v->>7, CAST(v->>8 AS BIGINT)
         FROM jsonb_array_elements(CAST(?1 AS jsonb)) AS j(v)
         ON CONFLICT (contact_id, order_id, product_id) DO UPDATE SET product = excluded.product,
            price = excluded.price, currency = excluded.currency, quantity = excluded.quantity,
            mailing_id = excluded.mailing_id, stamp = excluded.stamp";
}
