//! A page of receivers written straight into the JSON the list endpoints
//! answer, from the rows SQLite returns.
//!
//! Why: in an export or a re-import, building each page's `Receiver`
//! values was about 44% of the server's time and serialising them 17 to
//! 26% (issue 15), much of both malloc and free: a `String` per column, a
//! `BTreeMap` with a copied name and value per attribute, an `Order` copied
//! per receiver, then all of it walked again by serde. Here each column is
//! escaped once into a buffer while its row is borrowed, and the answer is
//! put together from those bytes.
//!
//! The bytes are exactly what `serde_json` writes for the same
//! `Vec<Receiver>`: the fields in the struct's order, attribute names in
//! `BTreeMap` order (bytewise), strings and numbers through serde_json's own
//! escaping and number formats. A test holds every page to the single
//! receiver reads ([`super::read::complete`]), which still build `Receiver`s.

use super::super::{AccountId, StoreError, StoreResult};
use crate::store::db::{Db, Row, params};
use listpipe_api::receiver::detail;
use listpipe_base::hash::FastMap;

/// A JSON array of receivers, byte for byte as `serde_json` writes the
/// `Vec<Receiver>` it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiversJson(pub Vec<u8>);

impl ReceiversJson {
    /// The receivers themselves (for callers in the library and tests; the
    /// routes send the bytes).
    pub fn receivers(&self) -> StoreResult<Vec<listpipe_api::Receiver>> {
        serde_json::from_slice(&self.0).map_err(|e| StoreError::Internal(e.to_string()))
    }
}

// What a page's receivers carry, one statement each over the page's
// contacts (a JSON array, each contact once), each row naming its contact by
// its position in the list (`j.key`), so no row is looked up in a map; the
// single reads use them too (`read::complete`). Each contact's rows keep
// the ORDER BY (a stable sort by position, below). Decision: driven by the
// list (`FROM json_each(?1) JOIN ...`), each contact looked up on the
// table's key; `contact_id IN (SELECT value FROM json_each(?1))` first
// copied the list into a temporary b-tree on every page (perf of an export,
// issue 15).
pub(crate) const VALUES: &str = "SELECT j.key, v.attribute_id, v.value
     FROM json_each(?1) AS j JOIN attribute_values v ON v.contact_id = j.value";
pub(crate) const TAGS: &str = "SELECT j.key, t.tag
     FROM json_each(?1) AS j JOIN tags t ON t.contact_id = j.value ORDER BY t.tag";
pub(crate) const ORDERS: &str = "SELECT j.key, o.order_id, o.product_id, o.product,
     o.price, o.currency, o.quantity, o.mailing_id, o.stamp
     FROM json_each(?1) AS j JOIN orders o ON o.contact_id = j.value ORDER BY o.id";
pub(crate) const EVENTS: &str = "SELECT j.key, e.stamp, e.type, e.type_id, e.value,
     e.mailing_id, e.group_id
     FROM json_each(?1) AS j JOIN events e ON e.contact_id = j.value ORDER BY e.stamp, e.id";

/// The statements of a page's parts, in the dialect of the backend.
pub(crate) struct Lists {
    pub values: &'static str,
    pub tags: &'static str,
    pub orders: &'static str,
    pub events: &'static str,
}

impl Lists {
    pub(crate) fn of(backend: crate::store::Backend) -> Lists {
        match backend {
            crate::store::Backend::Sqlite => Lists {
                values: VALUES,
                tags: TAGS,
                orders: ORDERS,
                events: EVENTS,
            },
            // The same rows, the list expanded by `jsonb_array_elements_text`
            // (its ordinality counts from 1, SQLite's `json_each` key from 0),
            // tags in SQLite's order of text, byte by byte (`COLLATE "C"`),
            // whatever the database's locale, as `tags::of_contact` lists them.
            crate::store::Backend::Postgres => Lists {
                values: "SELECT j.n - 1, v.attribute_id, v.value
                    FROM jsonb_array_elements_text(CAST(?1 AS jsonb)) WITH ORDINALITY AS j(value, n)
                    JOIN attribute_values v ON v.contact_id = CAST(j.value AS BIGINT)",
                tags: "SELECT j.n - 1, t.tag
                    FROM jsonb_array_elements_text(CAST(?1 AS jsonb)) WITH ORDINALITY AS j(value, n)
                    JOIN tags t ON t.contact_id = CAST(j.value AS BIGINT) ORDER BY t.tag COLLATE \"C\"",
                orders: "SELECT j.n - 1, o.order_id, o.product_id, o.product, o.price, o.currency,
                    o.quantity, o.mailing_id, o.stamp
                    FROM jsonb_array_elements_text(CAST(?1 AS jsonb)) WITH ORDINALITY AS j(value, n)
                    JOIN orders o ON o.contact_id = CAST(j.value AS BIGINT) ORDER BY o.id",
                events:
                    "SELECT j.n - 1, e.stamp, e.type, e.type_id, e.value, e.mailing_id, e.group_id
                    FROM jsonb_array_elements_text(CAST(?1 AS jsonb)) WITH ORDINALITY AS j(value, n)
                    JOIN events e ON e.contact_id = CAST(j.value AS BIGINT) ORDER BY e.stamp, e.id",
            },
        }
    }
}

/// The end of a receiver's own columns in [`Page::heads`], and what its
/// attributes and details are chosen by.
struct Head {
    end: usize,
    group_id: i64,
    contact: u32,
    active: bool,
}

/// One page being read: the receivers' own columns as JSON, in the page's
/// order, and each contact once.
#[derive(Default)]
pub(super) struct Page {
    heads: Vec<u8>,
    rows: Vec<Head>,
    contacts: Vec<i64>,
    /// Each contact's place in `contacts` (foldhash: std's SipHash was 2 to
    /// 3% of the server's time in an export).
    position: FastMap<i64, u32>,
    /// The id of the last receiver pushed.
    pub last_id: i64,
}

impl Page {
    pub(super) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Adds a row of `read::SELECT`: its columns are written as JSON here,
    /// up to and including `"last_client":...,`.
    pub(super) fn push(&mut self, r: &Row) -> StoreResult<()> {
        let id: i64 = r.get(0)?;
        let group_id: i64 = r.get(2)?;
        let (activated, deactivated, bounced): (i64, i64, i64) = (r.get(3)?, r.get(5)?, r.get(7)?);
        let contact: i64 = r.get(14)?;
        let o = &mut self.heads;
        o.extend_from_slice(b"{\"id\":");
        quoted_int(o, id);
        o.extend_from_slice(b",\"email\":");
        string(o, r.str(1)?);
        o.extend_from_slice(b",\"group_id\":");
        quoted_int(o, group_id);
        o.extend_from_slice(b",\"activated\":");
        int(o, activated);
        o.extend_from_slice(b",\"registered\":");
        int(o, r.get(4)?);
        o.extend_from_slice(b",\"deactivated\":");
        int(o, deactivated);
        o.extend_from_slice(b",\"imported\":");
        int(o, r.get(6)?);
        o.extend_from_slice(b",\"bounced\":");
        int(o, bounced);
        o.extend_from_slice(b",\"source\":");
        string(o, r.str(8)?);
        o.extend_from_slice(b",\"points\":");
        int(o, r.get(9)?);
        o.extend_from_slice(b",\"stars\":");
        int(o, r.get(10)?);
        o.extend_from_slice(b",\"last_ip\":");
        string(o, r.str(11)?);
        o.extend_from_slice(b",\"last_location\":");
        string(o, r.str(12)?);
        o.extend_from_slice(b",\"last_client\":");
        string(o, r.str(13)?);
        o.push(b',');
        let next = self.contacts.len() as u32;
        let at = *self.position.entry(contact).or_insert(next);
        if at == next {
            self.contacts.push(contact);
        }
        self.rows.push(Head {
            end: o.len(),
            group_id,
            contact: at,
            active: activated > 0 && deactivated == 0 && bounced == 0,
        });
        self.last_id = id;
        Ok(())
    }

    /// The page's JSON: attribute values always (group attributes only when
    /// `with_group_parts`, and only the receiver's group's), tags, events and
    /// orders as `detail_bits` asks, each with one statement for the page.
    pub(super) fn finish(
        self,
        conn: &Db,
        account: AccountId,
        with_group_parts: bool,
        detail_bits: i64,
    ) -> StoreResult<ReceiversJson> {
        if self.rows.is_empty() {
            return Ok(ReceiversJson(b"[]".to_vec()));
        }
        let ids = serde_json::to_string(&self.contacts)
            .map_err(|e| StoreError::Internal(e.to_string()))?;
        let n = self.contacts.len();
        let names = Names::of(conn, account)?;
        let lists = Lists::of(conn.backend());
        let values = values(conn, lists.values, &ids, &names, n)?;
        let want = |bit| detail_bits & bit != 0;
        let tags = want(detail::TAGS)
            .then(|| details(conn, lists.tags, &ids, n, tag))
            .transpose()?;
        let events = want(detail::EVENTS)
            .then(|| details(conn, lists.events, &ids, n, event))
            .transpose()?;
        let orders = want(detail::ORDERS)
            .then(|| details(conn, lists.orders, &ids, n, order))
            .transpose()?;

        let extra = [&tags, &events, &orders]
            .iter()
            .map(|d| d.as_ref().map_or(0, |d| d.bytes.len()))
            .sum::<usize>();
        let mut out = Vec::with_capacity(
            self.heads.len() + values.bytes.len() + extra + self.rows.len() * 160,
        );
        out.push(b'[');
        let mut start = 0;
        for (i, h) in self.rows.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&self.heads[start..h.end]);
            start = h.end;
            let mine = values.of(h.contact);
            out.extend_from_slice(b"\"attributes\":{");
            if with_group_parts {
                values.write(&mut out, &names, mine, h.group_id);
            }
            out.extend_from_slice(b"},\"global_attributes\":{");
            values.write(&mut out, &names, mine, 0);
            out.extend_from_slice(b"},\"active\":");
            out.extend_from_slice(if h.active { b"true" } else { b"false" });
            out.extend_from_slice(b",\"conversion_rate\":0.0,\"open_rate\":0.0,\"click_rate\":0.0");
            for (key, d) in [
                (&b",\"tags\":["[..], &tags),
                (b",\"events\":[", &events),
                (b",\"orders\":[", &orders),
            ] {
                if let Some(d) = d {
                    out.extend_from_slice(key);
                    d.write(&mut out, h.contact);
                    out.push(b']');
                }
            }
            out.push(b'}');
        }
        out.push(b']');
        Ok(ReceiversJson(out))
    }
}

/// The account's attributes: group and JSON key (`"name":`) by id, and
/// each name's place in `BTreeMap` order.
struct Names {
    by_id: FastMap<i64, usize>,
    group: Vec<i64>,
    rank: Vec<u32>,
    key: Vec<Vec<u8>>,
}

impl Names {
    fn of(conn: &Db, account: AccountId) -> StoreResult<Names> {
        let mut all: Vec<(i64, i64, String)> = conn.rows(
            "SELECT id, group_id, name FROM attributes WHERE account_id = ?1",
            params![account.0],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        // `String`'s order is the bytes' order, as `BTreeMap<String, _>` keeps.
        all.sort_by(|a, b| a.2.cmp(&b.2));
        let mut names = Names {
            by_id: FastMap::with_capacity_and_hasher(all.len(), Default::default()),
            group: Vec::with_capacity(all.len()),
            rank: Vec::with_capacity(all.len()),
            key: Vec::with_capacity(all.len()),
        };
        for (rank, (id, group, name)) in all.into_iter().enumerate() {
            let mut key = Vec::with_capacity(name.len() + 3);
            string(&mut key, &name);
            key.push(b':');
            names.by_id.insert(id, names.key.len());
            names.group.push(group);
            names.rank.push(rank as u32);
            names.key.push(key);
        }
        Ok(names)
    }
}

/// The page's attribute values: per contact, (attribute, value's JSON
/// range) in name order.
struct Values {
    bytes: Vec<u8>,
    items: Vec<(usize, usize, usize)>,
    starts: Vec<usize>,
}

impl Values {
    fn of(&self, contact: u32) -> &[(usize, usize, usize)] {
        let c = contact as usize;
        &self.items[self.starts[c]..self.starts[c + 1]]
    }

    /// `"name":"value"` for each of `items` whose attribute is of `group`.
    fn write(&self, out: &mut Vec<u8>, names: &Names, items: &[(usize, usize, usize)], group: i64) {
        let mut first = true;
        for &(attr, from, to) in items {
            if names.group[attr] != group {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(&names.key[attr]);
            out.extend_from_slice(&self.bytes[from..to]);
        }
    }
}

fn values(conn: &Db, sql: &str, ids: &str, names: &Names, n: usize) -> StoreResult<Values> {
    let mut bytes = Vec::new();
    let mut found: Vec<(u32, (usize, usize, usize))> = Vec::new();
    conn.each(sql, params![ids], |r| {
        // An attribute of another account cannot be a value's: skipped, as
        // the single reads skip it.
        let Some(&attr) = names.by_id.get(&r.get::<i64>(1)?) else {
            return Ok(());
        };
        let from = bytes.len();
        string(&mut bytes, r.str(2)?);
        found.push((position(r, n)?, (attr, from, bytes.len())));
        Ok(())
    })?;
    let (starts, mut items) = grouped(found, n);
    for c in 0..n {
        items[starts[c]..starts[c + 1]].sort_unstable_by_key(|&(attr, _, _)| names.rank[attr]);
    }
    Ok(Values {
        bytes,
        items,
        starts,
    })
}

/// One detail (tags, events or orders) of a page's contacts: each item's
/// JSON, per contact in the statement's order.
struct Details {
    bytes: Vec<u8>,
    items: Vec<(usize, usize)>,
    starts: Vec<usize>,
}

impl Details {
    /// The contact's items, comma-separated.
    fn write(&self, out: &mut Vec<u8>, contact: u32) {
        let c = contact as usize;
        for (i, &(from, to)) in self.items[self.starts[c]..self.starts[c + 1]]
            .iter()
            .enumerate()
        {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&self.bytes[from..to]);
        }
    }
}

fn details(
    conn: &Db,
    sql: &str,
    ids: &str,
    n: usize,
    item: fn(&Row, &mut Vec<u8>) -> StoreResult<()>,
) -> StoreResult<Details> {
    let mut bytes = Vec::new();
    let mut found = Vec::new();
    conn.each(sql, params![ids], |r| {
        let from = bytes.len();
        item(r, &mut bytes)?;
        found.push((position(r, n)?, (from, bytes.len())));
        Ok(())
    })?;
    let (starts, items) = grouped(found, n);
    Ok(Details {
        bytes,
        items,
        starts,
    })
}

/// A tag, from a row of [`TAGS`].
fn tag(r: &Row, o: &mut Vec<u8>) -> StoreResult<()> {
    string(o, r.str(1)?);
    Ok(())
}

/// An `Order` as serde writes it, from a row of [`ORDERS`].
fn order(r: &Row, o: &mut Vec<u8>) -> StoreResult<()> {
    o.extend_from_slice(b"{\"order_id\":");
    string(o, r.str(1)?);
    o.extend_from_slice(b",\"product_id\":");
    string(o, r.str(2)?);
    o.extend_from_slice(b",\"product\":");
    string(o, r.str(3)?);
    o.extend_from_slice(b",\"price\":");
    float(o, r.get(4)?);
    o.extend_from_slice(b",\"currency\":");
    string(o, r.str(5)?);
    o.extend_from_slice(b",\"quantity\":");
    int(o, r.get(6)?);
    o.extend_from_slice(b",\"mailing_id\":");
    string(o, r.str(7)?);
    o.extend_from_slice(b",\"stamp\":");
    int(o, r.get(8)?);
    o.push(b'}');
    Ok(())
}

/// An `Event` as serde writes it, from a row of [`EVENTS`].
fn event(r: &Row, o: &mut Vec<u8>) -> StoreResult<()> {
    o.extend_from_slice(b"{\"stamp\":");
    int(o, r.get(1)?);
    o.extend_from_slice(b",\"type\":");
    string(o, r.str(2)?);
    o.extend_from_slice(b",\"type_id\":");
    int(o, r.get(3)?);
    o.extend_from_slice(b",\"value\":");
    string(o, r.str(4)?);
    o.extend_from_slice(b",\"mailing_id\":");
    string(o, r.str(5)?);
    // `groups_id` is the group's id as text: a JSON string of its digits.
    o.extend_from_slice(b",\"groups_id\":");
    quoted_int(o, r.get(6)?);
    o.push(b'}');
    Ok(())
}

/// Items by contact position: `starts[c]..starts[c + 1]` are contact `c`'s,
/// in the order they came (a stable sort; the rows arrive mostly in
/// position order, which the sort finds in one pass).
fn grouped<T>(mut found: Vec<(u32, T)>, n: usize) -> (Vec<usize>, Vec<T>) {
    found.sort_by_key(|(c, _)| *c);
    let mut starts = vec![0; n + 1];
    for (c, _) in &found {
        starts[*c as usize + 1] += 1;
    }
    for c in 0..n {
        starts[c + 1] += starts[c];
    }
    (starts, found.into_iter().map(|(_, t)| t).collect())
}

/// The contact's position in the page's list (`j.key`, column 0).
fn position(r: &Row, n: usize) -> StoreResult<u32> {
    let at: i64 = r.get(0)?;
    if !(0..n as i64).contains(&at) {
        return Err(StoreError::Internal(format!(
            "a page's detail row names contact {at} of {n}"
        )));
    }
    Ok(at as u32)
}

// Strings and numbers go through serde_json, so their escaping and
// formats are its own. Writing into a `Vec` cannot fail, nor can
// serialising a `str`, an `i64` or an `f64` (a non-finite one is `null`).
fn string(o: &mut Vec<u8>, s: &str) {
    let _ = serde_json::to_writer(&mut *o, s);
}

fn int(o: &mut Vec<u8>, v: i64) {
    let _ = serde_json::to_writer(&mut *o, &v);
}

fn float(o: &mut Vec<u8>, v: f64) {
    let _ = serde_json::to_writer(&mut *o, &v);
}

/// An `Id`: its digits as a JSON string.
fn quoted_int(o: &mut Vec<u8>, v: i64) {
    o.push(b'"');
    int(o, v);
    o.push(b'"');
}

#[cfg(test)]
#[path = "page_tests.rs"]
mod tests;
