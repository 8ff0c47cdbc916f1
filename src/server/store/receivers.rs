//! Receivers: a contact's membership of a group, with its own activation
//! state, plus what the contact carries (attributes, tags, orders, events).
//!
//! The state is derived from the timestamps alone, never stored apart
//! (spec §3): active = activated and not deactivated and not bounced. So an
//! opt-out (`deactivated` set) is undone only by `deactivated: 0`, never by
//! a later `activated` alone (wire.md).

use super::groups::{ACTIVE_SQL, BOUNCED_SQL, INACTIVE_SQL};
use super::{AccountId, StoreResult, attributes, conflict, groups, invalid, not_found, now, tags};
use crate::api::receiver::detail;
use crate::api::{Event, Order, Receiver, ReceiverInput, ReceiverQuery, ReceiverType};
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::collections::HashMap;
use validator::ValidateEmail;

pub const DEFAULT_PAGESIZE: i64 = 50;
pub const MAX_PAGESIZE: i64 = 5000;
pub const MAX_EMAIL_CHARS: usize = 254;

/// How a path names a receiver: its id or its email address.
#[derive(Debug, Clone, PartialEq)]
pub enum ReceiverKey {
    Id(i64),
    Email(String),
}

impl ReceiverKey {
    pub fn parse(segment: &str) -> ReceiverKey {
        match crate::api::Id::parse(segment) {
            Some(id) => ReceiverKey::Id(id.0),
            None => ReceiverKey::Email(segment.trim().to_string()),
        }
    }
}

/// A valid address, trimmed; anything else is a 400 naming the address.
pub fn check_email(email: &str) -> StoreResult<String> {
    let email = email.trim();
    if email.chars().count() > MAX_EMAIL_CHARS || !email.validate_email() {
        return invalid(format!("Bad Request: invalid email address \"{email}\""));
    }
    Ok(email.to_string())
}

const SELECT: &str =
    "SELECT r.id, c.email, r.group_id, r.activated, r.registered, r.deactivated, r.imported,
    r.bounced, r.source, r.points, r.stars, r.last_ip, r.last_location, r.last_client, r.contact_id
    FROM receivers r JOIN contacts c ON c.id = r.contact_id";

fn from_row(r: &Row) -> rusqlite::Result<(Receiver, i64)> {
    let mut rec = Receiver {
        id: r.get::<_, i64>(0)?.into(),
        email: r.get(1)?,
        group_id: r.get::<_, i64>(2)?.into(),
        activated: r.get(3)?,
        registered: r.get(4)?,
        deactivated: r.get(5)?,
        imported: r.get(6)?,
        bounced: r.get(7)?,
        source: r.get(8)?,
        points: r.get(9)?,
        stars: r.get(10)?,
        last_ip: r.get(11)?,
        last_location: r.get(12)?,
        last_client: r.get(13)?,
        ..Default::default()
    };
    rec.active = rec.activated > 0 && rec.deactivated == 0 && rec.bounced == 0;
    Ok((rec, r.get(14)?))
}

/// Locates a receiver. With a group, it must be a receiver of that group;
/// without one, an email finds the address's first receiver.
fn locate(
    conn: &Connection,
    account: AccountId,
    group: Option<i64>,
    key: &ReceiverKey,
) -> StoreResult<(i64, i64, i64)> {
    let row = match key {
        ReceiverKey::Id(id) => conn
            .query_row(
                "SELECT id, group_id, contact_id FROM receivers WHERE id = ?1 AND account_id = ?2
                 AND (?3 IS NULL OR group_id = ?3)",
                params![id, account.0, group],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?,
        ReceiverKey::Email(email) => conn
            .query_row(
                "SELECT r.id, r.group_id, r.contact_id FROM receivers r JOIN contacts c ON c.id = r.contact_id
                 WHERE c.account_id = ?1 AND c.email = ?2 AND (?3 IS NULL OR r.group_id = ?3)
                 ORDER BY r.id LIMIT 1",
                params![account.0, email, group],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?,
    };
    match row {
        Some(found) => Ok(found),
        None if group.is_some() => not_found("Not Found: invalid receiver (not in this group)"),
        None => not_found("Not Found: invalid receiver"),
    }
}

/// The contact a path names (for tag and attribute operations).
pub fn contact_of(
    conn: &Connection,
    account: AccountId,
    group: Option<i64>,
    key: &ReceiverKey,
) -> StoreResult<(i64, i64)> {
    let (_, group_id, contact_id) = locate(conn, account, group, key)?;
    Ok((contact_id, group_id))
}

/// Loads full receivers for the given rows: attribute values always (group
/// attributes only when `with_group_parts`), tags, orders and events as
/// `detail` asks.
fn complete(
    conn: &Connection,
    account: AccountId,
    rows: Vec<(Receiver, i64)>,
    with_group_parts: bool,
    detail_bits: i64,
) -> StoreResult<Vec<Receiver>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let ids = serde_json::to_string(&rows.iter().map(|(_, c)| *c).collect::<Vec<_>>())
        .map_err(|e| super::StoreError::Internal(e.to_string()))?;
    let mut by_contact: HashMap<i64, Vec<usize>> = HashMap::new();
    for (i, (_, c)) in rows.iter().enumerate() {
        by_contact.entry(*c).or_default().push(i);
    }
    let mut out: Vec<Receiver> = rows.into_iter().map(|(r, _)| r).collect();
    if detail_bits & detail::TAGS != 0 {
        for r in out.iter_mut() {
            r.tags = Some(Vec::new());
        }
    }
    if detail_bits & detail::ORDERS != 0 {
        for r in out.iter_mut() {
            r.orders = Some(Vec::new());
        }
    }
    if detail_bits & detail::EVENTS != 0 {
        for r in out.iter_mut() {
            r.events = Some(Vec::new());
        }
    }

    let mut stmt = conn.prepare_cached(
        "SELECT v.contact_id, a.group_id, a.name, v.value FROM attribute_values v
         JOIN attributes a ON a.id = v.attribute_id
         WHERE v.contact_id IN (SELECT value FROM json_each(?1)) AND a.account_id = ?2",
    )?;
    let mut rows = stmt.query(params![ids, account.0])?;
    while let Some(row) = rows.next()? {
        let (contact, group_id, name, value): (i64, i64, String, String) =
            (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
        for &i in by_contact.get(&contact).into_iter().flatten() {
            let rec = &mut out[i];
            if group_id == 0 {
                rec.global_attributes.insert(name.clone(), value.clone());
            } else if with_group_parts && group_id == rec.group_id.0 {
                rec.attributes.insert(name.clone(), value.clone());
            }
        }
    }

    if detail_bits & detail::TAGS != 0 {
        let mut stmt = conn.prepare_cached(
            "SELECT contact_id, tag FROM tags WHERE contact_id IN (SELECT value FROM json_each(?1)) ORDER BY tag",
        )?;
        let mut rows = stmt.query([&ids])?;
        while let Some(row) = rows.next()? {
            let (contact, tag): (i64, String) = (row.get(0)?, row.get(1)?);
            for &i in by_contact.get(&contact).into_iter().flatten() {
                out[i].tags.get_or_insert_with(Vec::new).push(tag.clone());
            }
        }
    }
    if detail_bits & detail::ORDERS != 0 {
        let mut stmt = conn.prepare_cached(
            "SELECT contact_id, order_id, product_id, product, price, currency, quantity, mailing_id, stamp
             FROM orders WHERE contact_id IN (SELECT value FROM json_each(?1)) ORDER BY id",
        )?;
        let mut rows = stmt.query([&ids])?;
        while let Some(row) = rows.next()? {
            let contact: i64 = row.get(0)?;
            let order = Order {
                order_id: row.get(1)?,
                product_id: row.get(2)?,
                product: row.get(3)?,
                price: row.get(4)?,
                currency: row.get(5)?,
                quantity: row.get(6)?,
                mailing_id: row.get(7)?,
                stamp: row.get(8)?,
            };
            for &i in by_contact.get(&contact).into_iter().flatten() {
                out[i]
                    .orders
                    .get_or_insert_with(Vec::new)
                    .push(order.clone());
            }
        }
    }
    if detail_bits & detail::EVENTS != 0 {
        let mut stmt = conn.prepare_cached(
            "SELECT contact_id, stamp, type, type_id, value, mailing_id, group_id
             FROM events WHERE contact_id IN (SELECT value FROM json_each(?1)) ORDER BY stamp, id",
        )?;
        let mut rows = stmt.query([&ids])?;
        while let Some(row) = rows.next()? {
            let contact: i64 = row.get(0)?;
            let event = Event {
                stamp: row.get(1)?,
                kind: row.get(2)?,
                type_id: row.get(3)?,
                value: row.get(4)?,
                mailing_id: row.get(5)?,
                groups_id: row.get::<_, i64>(6)?.to_string(),
            };
            for &i in by_contact.get(&contact).into_iter().flatten() {
                out[i]
                    .events
                    .get_or_insert_with(Vec::new)
                    .push(event.clone());
            }
        }
    }
    Ok(out)
}

fn load(
    conn: &Connection,
    account: AccountId,
    id: i64,
    with_group_parts: bool,
    detail_bits: i64,
) -> StoreResult<Receiver> {
    let sql = format!("{SELECT} WHERE r.id = ?1 AND r.account_id = ?2");
    let row = conn
        .query_row(&sql, params![id, account.0], from_row)
        .optional()?;
    let Some(row) = row else {
        return not_found("Not Found: invalid receiver");
    };
    let mut all = complete(conn, account, vec![row], with_group_parts, detail_bits)?;
    all.pop()
        .map_or_else(|| not_found("Not Found: invalid receiver"), Ok)
}

/// `GET /v3/receivers/{id}` and `GET /v3/groups/{g}/receivers/{id}`:
/// group-specific parts (group attributes) only when a group is given.
pub fn get(
    conn: &Connection,
    account: AccountId,
    group: Option<i64>,
    key: &ReceiverKey,
    detail_bits: i64,
) -> StoreResult<Receiver> {
    if let Some(g) = group {
        groups::ensure(conn, account, g)?;
    }
    let (id, _, _) = locate(conn, account, group, key)?;
    load(conn, account, id, group.is_some(), detail_bits)
}

fn contact_for(conn: &Connection, account: AccountId, email: &str) -> StoreResult<i64> {
    conn.execute(
        "INSERT INTO contacts (account_id, email) VALUES (?1, ?2) ON CONFLICT (account_id, email) DO NOTHING",
        params![account.0, email],
    )?;
    Ok(conn.query_row(
        "SELECT id FROM contacts WHERE account_id = ?1 AND email = ?2",
        params![account.0, email],
        |r| r.get(0),
    )?)
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
    conn: &Connection,
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
/// repeated write leaves one order.
fn save_order(conn: &Connection, contact_id: i64, o: &Order) -> StoreResult<()> {
    if o.order_id.trim().is_empty() {
        return invalid("Bad Request: every order needs an order_id");
    }
    let stamp = if o.stamp > 0 { o.stamp } else { now() };
    let existing: Option<i64> = conn
        .query_row(
            "SELECT id FROM orders WHERE contact_id = ?1 AND order_id = ?2 AND product_id = ?3",
            params![contact_id, o.order_id, o.product_id],
            |r| r.get(0),
        )
        .optional()?;
    match existing {
        Some(id) => conn.execute(
            "UPDATE orders SET product = ?1, price = ?2, currency = ?3, quantity = ?4, mailing_id = ?5, stamp = ?6
             WHERE id = ?7",
            params![o.product, o.price, o.currency, o.quantity, o.mailing_id, stamp, id],
        )?,
        None => conn.execute(
            "INSERT INTO orders (contact_id, order_id, product_id, product, price, currency, quantity, mailing_id, stamp)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![contact_id, o.order_id, o.product_id, o.product, o.price, o.currency, o.quantity, o.mailing_id, stamp],
        )?,
    };
    Ok(())
}

/// `POST /v3/groups/{g}/receivers`: a new receiver of the group.
pub fn create(
    conn: &Connection,
    account: AccountId,
    group_id: i64,
    input: &ReceiverInput,
) -> StoreResult<Receiver> {
    groups::ensure(conn, account, group_id)?;
    let Some(email) = input.email.as_deref() else {
        return invalid("Bad Request: email is required");
    };
    let email = check_email(email)?;
    let contact_id = contact_for(conn, account, &email)?;
    let exists: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM receivers WHERE group_id = ?1 AND contact_id = ?2)",
        params![group_id, contact_id],
        |r| r.get(0),
    )?;
    if exists {
        return conflict(format!(
            "Conflict: duplicate address \"{email}\" in group {group_id}"
        ));
    }
    let t = now();
    let (registered, activated, deactivated) = initial_state(input, t);
    conn.execute(
        "INSERT INTO receivers (account_id, group_id, contact_id, registered, activated, deactivated, imported,
            bounced, source, points, last_ip, last_location, last_client, created, changed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14)",
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
    )?;
    let id = conn.last_insert_rowid();
    write_parts(conn, account, group_id, contact_id, input)?;
    attributes::apply_defaults(conn, account, group_id, contact_id)?;
    groups::touch(conn, group_id)?;
    load(conn, account, id, true, detail::ALL)
}

/// `PUT /v3/groups/{g}/receivers/{id}`: changes what the input gives. The
/// email cannot change; timestamps move the state as spec §3 says.
pub fn update(
    conn: &Connection,
    account: AccountId,
    group_id: i64,
    key: &ReceiverKey,
    input: &ReceiverInput,
) -> StoreResult<Receiver> {
    groups::ensure(conn, account, group_id)?;
    let (id, _, contact_id) = locate(conn, account, Some(group_id), key)?;
    let current = load(conn, account, id, true, 0)?;
    if let Some(email) = &input.email
        && !email.trim().eq_ignore_ascii_case(&current.email)
    {
        return invalid("Bad Request: the email of a receiver cannot be changed");
    }
    let pick = |v: Option<i64>, old: i64| v.map(|v| v.max(0)).unwrap_or(old);
    let pick_s = |v: &Option<String>, old: &str| v.clone().unwrap_or_else(|| old.to_string());
    conn.execute(
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
    write_parts(conn, account, group_id, contact_id, input)?;
    groups::touch(conn, group_id)?;
    load(conn, account, id, true, detail::ALL)
}

/// Deletes receivers: the one named, in `group` if given. An email without a
/// group removes the address from every group of the account.
pub fn delete(
    conn: &Connection,
    account: AccountId,
    group: Option<i64>,
    key: &ReceiverKey,
) -> StoreResult<()> {
    if let Some(g) = group {
        groups::ensure(conn, account, g)?;
    }
    let targets: Vec<(i64, i64)> = match (key, group) {
        (ReceiverKey::Email(email), None) => {
            let mut stmt = conn.prepare(
                "SELECT r.id, r.group_id FROM receivers r JOIN contacts c ON c.id = r.contact_id
                 WHERE c.account_id = ?1 AND c.email = ?2",
            )?;
            let rows = stmt.query_map(params![account.0, email], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<Result<_, _>>()?
        }
        _ => {
            let (id, g, _) = locate(conn, account, group, key)?;
            vec![(id, g)]
        }
    };
    if targets.is_empty() {
        return not_found("Not Found: invalid receiver");
    }
    for (id, g) in targets {
        conn.execute(
            "DELETE FROM attribute_values WHERE contact_id = (SELECT contact_id FROM receivers WHERE id = ?1)
             AND attribute_id IN (SELECT id FROM attributes WHERE group_id = ?2)",
            params![id, g],
        )?;
        conn.execute("DELETE FROM receivers WHERE id = ?1", [id])?;
        groups::touch(conn, g)?;
    }
    delete_orphan_contacts(conn, account)
}

/// A contact in no group any more is deleted with all it carried: an
/// address removed everywhere leaves nothing of the person behind.
pub fn delete_orphan_contacts(conn: &Connection, account: AccountId) -> StoreResult<()> {
    conn.execute(
        "DELETE FROM contacts WHERE account_id = ?1
         AND NOT EXISTS (SELECT 1 FROM receivers r WHERE r.contact_id = contacts.id)",
        [account.0],
    )?;
    Ok(())
}

/// The fields `order_by` accepts, with their columns.
const ORDER_FIELDS: &[(&str, &str)] = &[
    ("id", "r.id"),
    ("email", "c.email"),
    ("registered", "r.registered"),
    ("activated", "r.activated"),
    ("deactivated", "r.deactivated"),
    ("imported", "r.imported"),
    ("bounced", "r.bounced"),
    ("points", "r.points"),
    ("source", "r.source"),
    ("stamp", "r.created"),
    ("changed", "r.changed"),
];

fn order_clause(order_by: Option<&str>) -> StoreResult<String> {
    let Some(spec) = order_by.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok("r.id ASC".into());
    };
    let mut words = spec.split_whitespace();
    let field = words.next().unwrap_or("").to_ascii_lowercase();
    let dir = match words.next().map(|d| d.to_ascii_lowercase()).as_deref() {
        None | Some("asc") => "ASC",
        Some("desc") => "DESC",
        Some(other) => {
            return invalid(format!(
                "Bad Request: order_by direction \"{other}\" must be asc or desc"
            ));
        }
    };
    let Some((_, column)) = ORDER_FIELDS.iter().find(|(f, _)| *f == field) else {
        let names: Vec<_> = ORDER_FIELDS.iter().map(|(f, _)| *f).collect();
        return invalid(format!(
            "Bad Request: cannot order by \"{field}\"; valid fields: {}",
            names.join(", ")
        ));
    };
    Ok(format!("{column} {dir}, r.id {dir}"))
}

fn split_list(list: &Option<Vec<String>>) -> Option<Vec<String>> {
    list.as_ref().map(|items| {
        items
            .iter()
            .flat_map(|s| s.split(','))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    })
}

/// The receiver list of a group (spec §4.8): paged, filtered by type and by
/// email or id lists, ordered, with the requested detail.
pub fn list(
    conn: &Connection,
    account: AccountId,
    group_id: i64,
    q: &ReceiverQuery,
) -> StoreResult<Vec<Receiver>> {
    groups::ensure(conn, account, group_id)?;
    let pagesize = q.pagesize.unwrap_or(DEFAULT_PAGESIZE);
    if !(1..=MAX_PAGESIZE).contains(&pagesize) {
        return invalid(format!(
            "Bad Request: pagesize must be from 1 to {MAX_PAGESIZE}"
        ));
    }
    let page = q.page.unwrap_or(0);
    if page < 0 {
        return invalid("Bad Request: page is zero-based and cannot be negative");
    }
    let kind = match q.kind.as_deref() {
        None => ReceiverType::All,
        Some(k) => ReceiverType::parse(k).map_or_else(
            || {
                invalid(format!(
                    "Bad Request: type \"{k}\" must be one of {}",
                    ReceiverType::CHOICES
                ))
            },
            Ok,
        )?,
    };
    let state = match kind {
        ReceiverType::All => "1",
        ReceiverType::Active => ACTIVE_SQL,
        ReceiverType::Inactive => INACTIVE_SQL,
        ReceiverType::Bounce => BOUNCED_SQL,
    };
    let to_json = |v: Option<Vec<String>>| {
        v.map(|v| serde_json::to_string(&v).unwrap_or_else(|_| "[]".into()))
    };
    let emails = to_json(split_list(&q.email_list));
    let ids = to_json(split_list(&q.id_list));
    let sql = format!(
        "{SELECT} WHERE r.group_id = ?1 AND {state}
           AND (?2 IS NULL OR c.email IN (SELECT value FROM json_each(?2)))
           AND (?3 IS NULL OR r.id IN (SELECT CAST(value AS INTEGER) FROM json_each(?3)))
         ORDER BY {} LIMIT ?4 OFFSET ?5",
        order_clause(q.order_by.as_deref())?
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(
        params![
            group_id,
            emails,
            ids,
            pagesize,
            page.saturating_mul(pagesize)
        ],
        from_row,
    )?;
    let rows: Vec<_> = rows.collect::<Result<_, _>>()?;
    complete(conn, account, rows, true, q.detail.unwrap_or(0))
}
