//! Receivers: a contact's membership of a group, with its own activation
//! state, plus what the contact carries (attributes, tags, orders, events).
//!
//! The state is derived from the timestamps alone, never stored apart
//! (spec §3): active = activated and not deactivated and not bounced. So an
//! opt-out (`deactivated` set) is undone only by `deactivated: 0`, never by
//! a later `activated` alone (wire.md).

mod activation;
mod address;
pub mod backend;
mod batch;
pub(crate) mod bulk;
mod cursor;
pub(crate) mod list;
pub(crate) mod page;
pub(crate) mod read;

pub use activation::{Activation, set_activation};
pub use address::{change_email, groups_of};
pub use batch::{BatchItem, BatchMode, ItemOutcome, NewReceiver, create_many, write_batch};
pub use list::{Selection, count_matching, list, list_matching};
pub use page::ReceiversJson;
pub use read::{contact_of, get};

use super::{
    AccountId, CONTACT_PARTS, StoreError, StoreResult, attributes, conflict, groups, invalid,
    not_found, now, tags,
};
use crate::store::db::{Db, Lock, params};
use listpipe_api::receiver::detail;
use listpipe_api::{Order, Receiver, ReceiverInput};
use read::{load, locate, row};

pub use listpipe_api::receiver::{DEFAULT_PAGESIZE, MAX_PAGESIZE};
pub const MAX_EMAIL_CHARS: usize = 254;

/// How a path names a receiver: its id or its email address.
#[derive(Debug, Clone, PartialEq)]
pub enum ReceiverKey {
    Id(i64),
    Email(String),
}

impl ReceiverKey {
    pub fn parse(segment: &str) -> ReceiverKey {
        match listpipe_api::Id::parse(segment) {
            Some(id) => ReceiverKey::Id(id.0),
            None => ReceiverKey::Email(segment.trim().to_string()),
        }
    }
}

/// A valid address, trimmed and otherwise as given; anything else is a 400
/// naming the address. The server takes every address the RFCs allow
/// (quoted, IP literal, international): what a careful sender refuses is
/// the importer's choice, not the target's. Invisible characters are
/// refused all the same, so `a@b.de` and `a@b.de` with a zero-width space
/// never become two receivers.
pub fn check_email(email: &str) -> StoreResult<String> {
    let email = email.trim();
    if email.chars().count() > MAX_EMAIL_CHARS
        || listpipe_api::email::parse(email, listpipe_api::email::Rules::RFC).is_err()
    {
        return invalid(format!("Bad Request: invalid email address \"{email}\""));
    }
    Ok(email.to_string())
}

fn contact_for(conn: &Db, account: AccountId, email: &str) -> StoreResult<i64> {
    // A new address answers its id at once; a known one is looked up.
    let created: Option<i64> = conn.opt_row(
        "INSERT INTO contacts (account_id, email) VALUES (?1, ?2)
             ON CONFLICT (account_id, email) DO NOTHING RETURNING id",
        params![account.0, email],
        |r| r.get(0),
    )?;
    if let Some(id) = created {
        return Ok(id);
    }
    conn.value(
        "SELECT id FROM contacts WHERE account_id = ?1 AND email = ?2",
        params![account.0, email],
    )
}

/// The size limits of a receiver's text fields, tags and orders (a 400 before
/// anything is written).
fn check_sizes(input: &ReceiverInput) -> StoreResult<()> {
    use super::{MAX_ORDERS_PER_WRITE, MAX_TEXT_CHARS, check_count, check_len};
    for (field, value) in [
        ("source", &input.source),
        ("last_ip", &input.last_ip),
        ("last_location", &input.last_location),
        ("last_client", &input.last_client),
    ] {
        if let Some(v) = value {
            check_len(field, v, MAX_TEXT_CHARS)?;
        }
    }
    if let Some(list) = &input.tags {
        tags::check_sizes(list)?;
    }
    let orders = input.orders.as_deref().unwrap_or_default();
    check_count("orders", orders.len(), MAX_ORDERS_PER_WRITE)?;
    for o in orders {
        for (field, value) in [
            ("order_id", &o.order_id),
            ("product_id", &o.product_id),
            ("product", &o.product),
            ("currency", &o.currency),
            ("mailing_id", &o.mailing_id),
        ] {
            check_len(field, value, MAX_TEXT_CHARS)?;
        }
    }
    Ok(())
}

/// The activation timestamps of a new receiver, exactly as spec §3 says.
/// `deactivated: 0` is "not deactivated", not a state given.
fn initial_state(input: &ReceiverInput, t: i64) -> (i64, i64, i64) {
    let registered = input.registered.filter(|v| *v > 0);
    let deactivated = input.deactivated.filter(|v| *v > 0);
    if registered.is_none() && input.activated.is_none() && deactivated.is_none() {
        return (t, t, 0);
    }
    let activated = input.activated.unwrap_or(0).max(0);
    let registered = registered
        .or(Some(activated).filter(|a| *a > 0))
        .unwrap_or(t);
    (registered, activated, deactivated.unwrap_or(0))
}

/// Writes the contact-level parts of an input: attribute values, tags, orders.
fn write_parts(
    conn: &Db,
    account: AccountId,
    group_id: i64,
    contact_id: i64,
    input: &ReceiverInput,
) -> StoreResult<()> {
    for (global_only, values) in [(false, &input.attributes), (true, &input.global_attributes)] {
        for (name, value) in values.iter().flatten() {
            match attributes::resolve(conn, account, group_id, name, global_only)? {
                Some(attr) => attributes::set_value(conn, contact_id, &attr, value)?,
                None => {
                    let scope = if global_only {
                        "global attribute".to_string()
                    } else {
                        format!("attribute of group {group_id}")
                    };
                    return invalid(format!(
                        "Bad Request: unknown {scope} \"{name}\"; create it first"
                    ));
                }
            }
        }
    }
    if let Some(list) = &input.tags {
        tags::apply(conn, contact_id, list)?;
    }
    for order in input.orders.iter().flatten() {
        save_order(conn, contact_id, order)?;
    }
    Ok(())
}

/// Stores an order; the same order_id and product_id again updates it, so a
/// repeated write leaves one order (one upsert on the unique key of
/// migration 006).
fn save_order(conn: &Db, contact_id: i64, o: &Order) -> StoreResult<()> {
    if o.order_id.trim().is_empty() {
        return invalid("Bad Request: every order needs an order_id");
    }
    let stamp = if o.stamp > 0 { o.stamp } else { now() };
    bulk::upsert_orders(conn, &[(contact_id, o, stamp)])
}

/// `POST /v3/groups/{g}/receivers`: a new receiver of the group.
pub fn create(
    conn: &Db,
    account: AccountId,
    group_id: i64,
    input: &ReceiverInput,
) -> StoreResult<Receiver> {
    groups::hold(conn, account, group_id)?;
    let id = insert(conn, account, group_id, input)?;
    groups::touch(conn, group_id)?;
    load(conn, account, id, true, detail::ALL)
}

/// The write of [`create`] for a group known to exist, answering the new
/// receiver's id: a batch checks the group, touches it and loads answers
/// once per call rather than once per item.
fn insert(conn: &Db, account: AccountId, group_id: i64, input: &ReceiverInput) -> StoreResult<i64> {
    let Some(email) = input.email.as_deref() else {
        return invalid("Bad Request: email is required");
    };
    let email = check_email(email)?;
    check_sizes(input)?;
    let contact_id = contact_for(conn, account, &email)?;
    let t = now();
    let (registered, activated, deactivated) = initial_state(input, t);
    // The unique key (group, contact) answers "already there": no lookup first.
    let inserted: Option<i64> = conn.opt_row(
        "INSERT INTO receivers (account_id, group_id, contact_id, registered, activated, deactivated, imported,
            bounced, source, points, last_ip, last_location, last_client, created, changed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14)
         ON CONFLICT (group_id, contact_id) DO NOTHING RETURNING id",
        params![
            account.0,
            group_id,
            contact_id,
            registered,
            activated,
            deactivated,
            input.imported.unwrap_or(0),
            input.bounced.unwrap_or(0),
            input.source.as_deref().unwrap_or(""),
            input.points.unwrap_or(0),
            input.last_ip.as_deref().unwrap_or(""),
            input.last_location.as_deref().unwrap_or(""),
            input.last_client.as_deref().unwrap_or(""),
            t
        ],
        |r| r.get(0),
    )?;
    let Some(id) = inserted else {
        return conflict(format!(
            "Conflict: duplicate address \"{email}\" in group {group_id}"
        ));
    };
    write_parts(conn, account, group_id, contact_id, input)?;
    attributes::apply_defaults(conn, account, group_id, contact_id)?;
    Ok(id)
}

/// `PUT /v3/groups/{g}/receivers/{id}`: changes what the input gives. The
/// email cannot change; timestamps move the state as spec §3 says.
pub fn update(
    conn: &Db,
    account: AccountId,
    group_id: i64,
    key: &ReceiverKey,
    input: &ReceiverInput,
) -> StoreResult<Receiver> {
    groups::hold(conn, account, group_id)?;
    let (id, _, contact_id) = locate(conn, account, Some(group_id), key)?;
    change(conn, account, group_id, id, contact_id, input)?;
    groups::touch(conn, group_id)?;
    load(conn, account, id, true, detail::ALL)
}

/// The write of [`update`] for a located receiver (see [`insert`] for why
/// it stands apart).
fn change(
    conn: &Db,
    account: AccountId,
    group_id: i64,
    id: i64,
    contact_id: i64,
    input: &ReceiverInput,
) -> StoreResult<()> {
    check_sizes(input)?;
    let current = row(conn, account, id)?;
    if let Some(email) = &input.email
        && !email.trim().eq_ignore_ascii_case(&current.email)
    {
        return invalid("Bad Request: the email of a receiver cannot be changed");
    }
    let pick = |v: Option<i64>, old: i64| v.map(|v| v.max(0)).unwrap_or(old);
    let pick_s = |v: &Option<String>, old: &str| v.clone().unwrap_or_else(|| old.to_string());
    let updated = conn.exec(
        "UPDATE receivers SET registered = ?1, activated = ?2, deactivated = ?3, imported = ?4, bounced = ?5,
            source = ?6, points = ?7, last_ip = ?8, last_location = ?9, last_client = ?10, changed = ?11
         WHERE id = ?12",
        params![
            pick(input.registered, current.registered),
            pick(input.activated, current.activated),
            pick(input.deactivated, current.deactivated),
            pick(input.imported, current.imported),
            pick(input.bounced, current.bounced),
            pick_s(&input.source, &current.source),
            input.points.unwrap_or(current.points),
            pick_s(&input.last_ip, &current.last_ip),
            pick_s(&input.last_location, &current.last_location),
            pick_s(&input.last_client, &current.last_client),
            now(),
            id
        ],
    )?;
    if updated == 0 {
        // Deleted by another process since it was located.
        return Err(StoreError::raced());
    }
    write_parts(conn, account, group_id, contact_id, input)
}

/// Deletes receivers: the one named, in `group` if given. An email without a
/// group removes the address from every group of the account.
pub fn delete(
    conn: &Db,
    account: AccountId,
    group: Option<i64>,
    key: &ReceiverKey,
) -> StoreResult<()> {
    if let Some(g) = group {
        groups::ensure(conn, account, g)?;
    }
    let targets: Vec<(i64, i64)> = match (key, group) {
        (ReceiverKey::Email(email), None) => conn.rows(
            "SELECT r.id, r.group_id FROM receivers r JOIN contacts c ON c.id = r.contact_id
                 WHERE c.account_id = ?1 AND c.email = ?2",
            params![account.0, email],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?,
        _ => {
            let (id, g, _) = locate(conn, account, group, key)?;
            vec![(id, g)]
        }
    };
    if targets.is_empty() {
        return not_found("Not Found: invalid receiver");
    }
    let mut contacts = Vec::with_capacity(targets.len());
    for (id, g) in targets {
        // The contact first: the receiver row is the way to it.
        let contact: i64 = conn.row(
            "SELECT contact_id FROM receivers WHERE id = ?1",
            params![id],
            |r| r.get(0),
        )?;
        conn.exec(
            "DELETE FROM attribute_values WHERE contact_id = ?1
             AND attribute_id IN (SELECT id FROM attributes WHERE group_id = ?2)",
            params![contact, g],
        )?;
        conn.exec("DELETE FROM receivers WHERE id = ?1", params![id])?;
        groups::touch(conn, g)?;
        contacts.push(contact);
    }
    for contact in contacts {
        delete_orphan_contact(conn, contact)?;
    }
    Ok(())
}

/// Deletes the contact if it is in no group any more, with all it carried:
/// an address removed everywhere leaves nothing of the person behind. One
/// contact by its key (and its receivers by `receivers_contact`), so a
/// mirror run's thousands of deletions cost what one costs each, not a
/// pass over every contact of the account (review of issue 15).
fn delete_orphan_contact(conn: &Db, contact_id: i64) -> StoreResult<()> {
    // Locked first: a write adding the address to a group meanwhile commits
    // before (and the delete below sees its receiver) or fails after, on the
    // receiver's key, and is run again.
    conn.lock(
        "SELECT id FROM contacts WHERE id = ?1",
        params![contact_id],
        Lock::Update,
    )?;
    if conn.exec(DELETE_ORPHAN_CONTACT, params![contact_id])? > 0 {
        for table in CONTACT_PARTS {
            conn.exec(
                &format!("DELETE FROM {table} WHERE contact_id = ?1"),
                params![contact_id],
            )?;
        }
    }
    Ok(())
}

pub(crate) const DELETE_ORPHAN_CONTACT: &str = "DELETE FROM contacts WHERE id = ?1
         AND NOT EXISTS (SELECT 1 FROM receivers r WHERE r.contact_id = ?1)";

#[cfg(test)]
#[path = "create_tests.rs"]
mod create_tests;
