//! Reading receivers: locating one by id or email and loading full records
//! (attributes, tags, orders, events as `detail` asks); the paged lists are
//! in [`list`](super::list).

use super::super::{AccountId, StoreResult, groups, not_found};
use super::{ReceiverKey, page};
use crate::store::db::{Db, Row, params};
use listpipe_api::receiver::detail;
use listpipe_api::{Event, Order, Receiver};
use std::collections::HashMap;

pub(super) const SELECT: &str =
    "SELECT r.id, c.email, r.group_id, r.activated, r.registered, r.deactivated, r.imported,
    r.bounced, r.source, r.points, r.stars, r.last_ip, r.last_location, r.last_client, r.contact_id
    FROM receivers r JOIN contacts c ON c.id = r.contact_id";

pub(super) fn from_row(r: &Row) -> StoreResult<(Receiver, i64)> {
    let mut rec = Receiver {
        id: r.get::<i64>(0)?.into(),
        email: r.get(1)?,
        group_id: r.get::<i64>(2)?.into(),
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
pub(super) fn locate(
    conn: &Db,
    account: AccountId,
    group: Option<i64>,
    key: &ReceiverKey,
) -> StoreResult<(i64, i64, i64)> {
    let row = match key {
        ReceiverKey::Id(id) => conn
            .opt_row(
                "SELECT id, group_id, contact_id FROM receivers WHERE id = ?1 AND account_id = ?2
                 AND (?3 IS NULL OR group_id = ?3)",
                params![id, account.0, group],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?,
        ReceiverKey::Email(email) => conn
            .opt_row(
                "SELECT r.id, r.group_id, r.contact_id FROM receivers r JOIN contacts c ON c.id = r.contact_id
                 WHERE c.account_id = ?1 AND c.email = ?2 AND (?3 IS NULL OR r.group_id = ?3)
                 ORDER BY r.id LIMIT 1",
                params![account.0, email, group],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?,
    };
    match row {
        Some(found) => Ok(found),
        None if group.is_some() => not_found("Not Found: invalid receiver (not in this group)"),
        None => not_found("Not Found: invalid receiver"),
    }
}

/// The contact a path names (for tag and attribute operations).
pub fn contact_of(
    conn: &Db,
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
pub(super) fn complete(
    conn: &Db,
    account: AccountId,
    rows: Vec<(Receiver, i64)>,
    with_group_parts: bool,
    detail_bits: i64,
) -> StoreResult<Vec<Receiver>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let mut by_contact: HashMap<i64, Vec<usize>> = HashMap::with_capacity(rows.len());
    let mut contacts = Vec::with_capacity(rows.len());
    for (i, (_, c)) in rows.iter().enumerate() {
        let at = by_contact.entry(*c).or_default();
        if at.is_empty() {
            contacts.push(*c);
        }
        at.push(i);
    }
    // Each contact once: the queries below walk this list and look each up,
    // and name each row's contact by its position in it (the list pages'
    // own queries, `page::VALUES`...).
    let ids = serde_json::to_string(&contacts)
        .map_err(|e| super::super::StoreError::Internal(e.to_string()))?;
    let at: Vec<Vec<usize>> = contacts
        .iter()
        .map(|c| by_contact.remove(c).unwrap_or_default())
        .collect();
    // The receivers of the row's contact.
    let of = |row: &Row| -> StoreResult<&[usize]> {
        let position: i64 = row.get(0)?;
        Ok(usize::try_from(position)
            .ok()
            .and_then(|p| at.get(p))
            .map_or(&[][..], Vec::as_slice))
    };
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

    // The account's attributes once per page, not joined once per value.
    let names: HashMap<i64, (i64, String)> = conn
        .rows(
            "SELECT id, group_id, name FROM attributes WHERE account_id = ?1",
            params![account.0],
            |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))),
        )?
        .into_iter()
        .collect();
    let lists = page::Lists::of(conn.backend());
    conn.each(lists.values, params![ids], |row| {
        let (attribute, value): (i64, String) = (row.get(1)?, row.get(2)?);
        let Some((group_id, name)) = names.get(&attribute) else {
            return Ok(());
        };
        for &i in of(row)? {
            let rec = &mut out[i];
            if *group_id == 0 {
                rec.global_attributes.insert(name.clone(), value.clone());
            } else if with_group_parts && *group_id == rec.group_id.0 {
                rec.attributes.insert(name.clone(), value.clone());
            }
        }
        Ok(())
    })?;

    if detail_bits & detail::TAGS != 0 {
        conn.each(lists.tags, params![ids], |row| {
            let tag: String = row.get(1)?;
            for &i in of(row)? {
                out[i].tags.get_or_insert_with(Vec::new).push(tag.clone());
            }
            Ok(())
        })?;
    }
    if detail_bits & detail::ORDERS != 0 {
        conn.each(lists.orders, params![ids], |row| {
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
            for &i in of(row)? {
                out[i]
                    .orders
                    .get_or_insert_with(Vec::new)
                    .push(order.clone());
            }
            Ok(())
        })?;
    }
    if detail_bits & detail::EVENTS != 0 {
        conn.each(lists.events, params![ids], |row| {
            let event = Event {
                stamp: row.get(1)?,
                kind: row.get(2)?,
                type_id: row.get(3)?,
                value: row.get(4)?,
                mailing_id: row.get(5)?,
                groups_id: row.get::<i64>(6)?.to_string(),
            };
            for &i in of(row)? {
                out[i]
                    .events
                    .get_or_insert_with(Vec::new)
                    .push(event.clone());
            }
            Ok(())
        })?;
    }
    Ok(out)
}

/// A receiver's own columns only (no attributes, tags, orders, events): what
/// an update needs to keep the fields its input leaves out.
pub(super) fn row(conn: &Db, account: AccountId, id: i64) -> StoreResult<Receiver> {
    Ok(row_with_contact(conn, account, id)?.0)
}

fn row_with_contact(conn: &Db, account: AccountId, id: i64) -> StoreResult<(Receiver, i64)> {
    let row = conn.opt_row(
        &format!("{SELECT} WHERE r.id = ?1 AND r.account_id = ?2"),
        params![id, account.0],
        from_row,
    )?;
    row.map_or_else(|| not_found("Not Found: invalid receiver"), Ok)
}

pub(super) fn load(
    conn: &Db,
    account: AccountId,
    id: i64,
    with_group_parts: bool,
    detail_bits: i64,
) -> StoreResult<Receiver> {
    let row = row_with_contact(conn, account, id)?;
    let mut all = complete(conn, account, vec![row], with_group_parts, detail_bits)?;
    all.pop()
        .map_or_else(|| not_found("Not Found: invalid receiver"), Ok)
}

/// `GET /v3/receivers/{id}` and `GET /v3/groups/{g}/receivers/{id}`:
/// group-specific parts (group attributes) only when a group is given.
pub fn get(
    conn: &Db,
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
